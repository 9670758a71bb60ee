from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"
    verbose_name = "Submissions"

    def ready(self) -> None:
        # Connects the receivers of the catalogue's signals (catalogue/signals.py): the standard place.
        from . import receivers  # noqa: F401
