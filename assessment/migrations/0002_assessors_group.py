"""The group whose members may judge pooled documents."""

from django.db import migrations


def create_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.get_or_create(name="assessors")


class Migration(migrations.Migration):
    dependencies = [("assessment", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length")]

    operations = [migrations.RunPython(create_group, migrations.RunPython.noop)]
