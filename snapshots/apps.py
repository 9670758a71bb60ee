from django.apps import AppConfig


class SnapshotsConfig(AppConfig):
    """Citable, immutable states of a board; its exports, its diff with the living board; benchmark archives."""

    name = "snapshots"
    verbose_name = "snapshots"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Connects the receiver of the catalogue's board_changing signal: the standard place.
        from . import receivers  # noqa: F401
