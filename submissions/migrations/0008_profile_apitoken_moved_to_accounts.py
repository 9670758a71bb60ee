"""Profiles and API tokens now belong to the accounts app (accounts/0004); their tables stay."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("submissions", "0007_submission_family_sparse"),
        ("accounts", "0004_profile_apitoken"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[migrations.DeleteModel(name="Profile"), migrations.DeleteModel(name="ApiToken")],
        ),
    ]
