# The WorkSequence model moves to the sequences app; its table is renamed to that app's
# name here, rows and constraints untouched. sequences.0001 takes the model over in the
# migration state and 0010 lets go of it here.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('work', '0008_sequence_disagreements_error_reason'),
    ]

    operations = [
        migrations.AlterModelTable(name='worksequence', table='sequences_worksequence'),
    ]
