from django.apps import AppConfig


class CatalogueConfig(AppConfig):
    """The dataset catalogue: benchmarks, datasets, splits, topics, corpora, judgments; importers and cards."""

    name = "catalogue"
    label = "leaderboard"  # the label of its tables and migrations since the first release: kept
    verbose_name = "Benchmarks and datasets"
