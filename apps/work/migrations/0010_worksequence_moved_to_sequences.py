# The state half of the move: Workunit.sequence points to sequences.WorkSequence and this
# app forgets the model. The database already matches (0009 renamed the table).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sequences', '0001_initial'),
        ('work', '0009_worksequence_table_to_sequences'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='workunit',
                    name='sequence',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='workunits', to='sequences.worksequence'),
                ),
                migrations.DeleteModel(name='WorkSequence'),
            ],
        ),
    ]
