from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    """The dataset catalogue: benchmarks, datasets, splits, topics, corpora, judgments; importers and cards."""

    name = "leaderboard"
    verbose_name = "Benchmarks and datasets"
