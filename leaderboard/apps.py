from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    """The leaderboards: pages, exports, suites, significance, the page cache, shared tasks' boards and the reveal."""

    name = "leaderboard"
    verbose_name = "Leaderboards"

    def ready(self) -> None:
        from .page_cache import connect_signals

        connect_signals()  # curators' edits make cached pages stale (leaderboard/page_cache.py)
