# The old yes/no said only "used the dataset's training data": yes is the train split; no never said what else
# the system was trained on, so it is unknown (the owner can state it now). Backwards: only the train split is yes.

from django.db import migrations


def training_data_from_flag(apps, schema_editor):
    Submission = apps.get_model("submissions", "Submission")
    Submission.objects.filter(used_training_data=True).update(training_data="train_split")
    Submission.objects.filter(used_training_data=False).update(training_data="unknown")


def flag_from_training_data(apps, schema_editor):
    Submission = apps.get_model("submissions", "Submission")
    Submission.objects.update(used_training_data=False)
    Submission.objects.filter(training_data="train_split").update(used_training_data=True)


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0015_submission_provenance'),
    ]

    operations = [
        migrations.RunPython(training_data_from_flag, flag_from_training_data),
    ]
