from django.apps import AppConfig


class CatalogueConfig(AppConfig):
    """The dataset catalogue: benchmarks, datasets, splits, topics, corpora, judgments; importers and cards."""

    name = "catalogue"
    verbose_name = "Benchmarks and datasets"
