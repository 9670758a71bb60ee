from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Benchmarks and datasets"

    def ready(self) -> None:
        from .page_cache import connect_signals

        connect_signals()  # curators' edits make cached pages stale (leaderboard/page_cache.py)
