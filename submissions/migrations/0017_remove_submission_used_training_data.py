# The yes/no "used the dataset's training data", replaced by the provenance fields (0016 moved its values there).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0016_provenance_from_flag'),
    ]

    operations = [
        migrations.RemoveField(
            model_name='submission',
            name='used_training_data',
        ),
    ]
