# Workunit.sequence becomes the plain column sequence_id: the work app sits below the
# sequences app and no longer names its model. The column, its values, its index and the
# step constraint stay as they are; only the foreign-key constraint is dropped (the sequences
# app deletes a sequence's steps with it).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sequences', '0001_initial'),
        ('work', '0013_workunit_hr_class'),
    ]

    operations = [
        migrations.AlterField(
            model_name='workunit',
            name='sequence',
            field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=models.deletion.DO_NOTHING, related_name='workunits', to='sequences.worksequence'),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(model_name='workunit', name='workunit_seq_step'),
                migrations.RemoveField(model_name='workunit', name='sequence'),
                migrations.AddField(
                    model_name='workunit',
                    name='sequence_id',
                    field=models.BigIntegerField(blank=True, db_index=True, null=True),
                ),
                migrations.AddConstraint(
                    model_name='workunit',
                    constraint=models.UniqueConstraint(condition=models.Q(('sequence_id__isnull', False)), fields=('sequence_id', 'sequence_index'), name='workunit_seq_step'),
                ),
            ],
        ),
    ]
