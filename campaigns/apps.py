from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    """Shared tasks on a hidden split: phases, teams, invitations, the private board snapshot, notifications."""

    name = "campaigns"
    verbose_name = "shared tasks"
    default_auto_field = "django.db.models.BigAutoField"
