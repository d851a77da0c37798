# WorkSequence, moved from the work app with its table (work.0009 renamed it to this app's
# name) and every row: the state takes the model over, the database is left as it is. Its
# content type moves too, so the permissions admins hold on work sequences and the admin
# history keep pointing at it.

import apps.work.domain.states
import django.core.validators
import django.db.models.deletion
from django.db import migrations, models


def _move_content_type(apps, schema_editor, old_label, new_label):
    """Relabel the content type of worksequence; if the target exists already (a server
    that ran post_migrate in between), its grants join the old type's permissions first."""
    ContentType = apps.get_model('contenttypes', 'ContentType')
    Permission = apps.get_model('auth', 'Permission')
    db = schema_editor.connection.alias
    types = ContentType.objects.using(db)
    old = types.filter(app_label=old_label, model='worksequence').first()
    if old is None:
        return  # a new database: post_migrate creates the type and its permissions
    new = types.filter(app_label=new_label, model='worksequence').first()
    if new is not None:
        for perm in Permission.objects.using(db).filter(content_type=new):
            twin = Permission.objects.using(db).filter(content_type=old, codename=perm.codename).first()
            if twin is None:
                perm.content_type = old
                perm.save(update_fields=['content_type'])
                continue
            twin.user_set.add(*perm.user_set.all())
            twin.group_set.add(*perm.group_set.all())
            perm.delete()
        new.delete()
    old.app_label = new_label
    old.save(update_fields=['app_label'])


def content_type_to_sequences(apps, schema_editor):
    _move_content_type(apps, schema_editor, 'work', 'sequences')


def content_type_to_work(apps, schema_editor):
    _move_content_type(apps, schema_editor, 'sequences', 'work')


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('applications', '0003_planclass_plural'),
        ('auth', '0012_alter_user_first_name_max_length'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('hosts', '0003_host_updates_hot'),
        ('projects', '0006_credit_cheat_bounds_sequence_disagreements'),
        ('work', '0009_worksequence_table_to_sequences'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='WorkSequence',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=254)),
                        ('create_time', models.DateTimeField(auto_now_add=True)),
                        ('state', models.PositiveSmallIntegerField(choices=[(0, 'Unassigned'), (1, 'Assigned'), (2, 'Ended'), (3, 'Error')], default=apps.work.domain.states.SequenceState['UNASSIGNED'])),
                        ('max_result_time', models.FloatField(help_text='Seconds of real time a host may take for one result', validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(100000000)])),
                        ('assigned_time', models.DateTimeField(blank=True, null=True)),
                        ('restartable_every', models.PositiveIntegerField(default=0, help_text='Every k-th result uploads the full state (0 = only the last)')),
                        ('expected_length', models.PositiveIntegerField(blank=True, help_text='Empty when open-ended', null=True)),
                        ('last_progress_time', models.DateTimeField(blank=True, null=True)),
                        ('ended_notified', models.BooleanField(default=False, help_text='The host has been told the sequence ended')),
                        ('n_relocations', models.PositiveIntegerField(default=0, help_text='Times the sequence moved to another host')),
                        ('relocated_time', models.DateTimeField(blank=True, help_text='When it was last relocated', null=True)),
                        ('n_disagreements', models.PositiveIntegerField(default=0, help_text='Times its replica chains disagreed at a checkpoint and restarted')),
                        ('error_reason', models.CharField(blank=True, help_text='Why the sequence is in ERROR', max_length=500)),
                        ('app', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='sequences', to='applications.app')),
                        ('assigned_host', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='sequences', to='hosts.host')),
                        ('checkpoint_result', models.ForeignKey(blank=True, help_text='The validated restartable result whose uploaded state a new host restarts from', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='work.result')),
                        ('first_undispatched', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='work.workunit')),
                        ('first_unvalidated', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='work.workunit')),
                        ('head_workunit', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='work.workunit')),
                        ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='sequences', to='projects.project')),
                        ('relocated_from', models.ForeignKey(blank=True, help_text='The host it was last taken from; for one delay bound it goes to another host', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='hosts.host')),
                        ('replica_of', models.ForeignKey(blank=True, help_text='Redundancy: this chain replicates another and is compared with it', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='replicas', to='sequences.worksequence')),
                    ],
                    options={
                        'ordering': ['id'],
                        'indexes': [models.Index(fields=['project', 'state'], name='sequence_state')],
                        'constraints': [models.UniqueConstraint(fields=('project', 'name'), name='sequence_unique_name')],
                    },
                ),
            ],
        ),
        migrations.RunPython(content_type_to_sequences, content_type_to_work),
    ]
