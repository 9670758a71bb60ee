from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    """Registers ``evaluation.tasks`` with Celery; the core modules import no Django."""

    name = "evaluation"
    verbose_name = "Evaluation"
