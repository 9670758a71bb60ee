from django.apps import AppConfig


class ParticipantsConfig(AppConfig):
    """The participant's pages: upload, their runs, a run's page, compare, fusion, per-query downloads, the ledger."""

    name = "participants"
    verbose_name = "Participants' pages"
