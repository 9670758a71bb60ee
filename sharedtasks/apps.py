from django.apps import AppConfig


class SharedTasksConfig(AppConfig):
    """Shared tasks on a hidden split: phases, teams, invitations, the private board snapshot, notifications."""

    name = "sharedtasks"
    verbose_name = "shared tasks"
    default_auto_field = "django.db.models.BigAutoField"
