"""Profiles and API tokens move here from the submissions app: the models only, their tables stay as they are."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0003_existing_users_email_addresses"),
        ("submissions", "0006_ladder_release"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="Profile",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("display_name", models.CharField(blank=True, max_length=100)),
                        ("affiliation", models.CharField(blank=True, max_length=200)),
                        ("user", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name="profile",
                                                      to=settings.AUTH_USER_MODEL)),
                    ],
                    options={"db_table": "submissions_profile"},
                ),
                migrations.CreateModel(
                    name="ApiToken",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.CharField(default="token", max_length=100)),
                        ("prefix", models.CharField(db_index=True, max_length=12)),
                        ("key_hash", models.CharField(max_length=64, unique=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        ("revoked_at", models.DateTimeField(blank=True, null=True)),
                        ("user", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="api_tokens",
                                                   to=settings.AUTH_USER_MODEL)),
                    ],
                    options={"db_table": "submissions_apitoken", "ordering": ["-created_at"]},
                ),
            ],
        ),
    ]
