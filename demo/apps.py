from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo: a generated corpus, baselines scored through the real pipeline, ``load_demo`` and ``seed_bench``."""

    name = "demo"
    verbose_name = "Demo"
