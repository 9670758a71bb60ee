from django.apps import AppConfig


class BoardsConfig(AppConfig):
    """The pages that show the catalogue and its scored submissions: leaderboards, exports, suites, the admin."""

    name = "boards"
    verbose_name = "Leaderboards"

    def ready(self) -> None:
        from .page_cache import connect_signals

        connect_signals()  # curators' edits make cached pages stale (boards/page_cache.py)
