from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    """Shared tasks on a hidden split: phases, teams, invitations, the private board snapshot, notifications."""

    name = "campaigns"
    label = "sharedtasks"  # the label of its tables and migrations since the first release: kept
    verbose_name = "shared tasks"
    default_auto_field = "django.db.models.BigAutoField"
