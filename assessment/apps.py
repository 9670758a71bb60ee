from django.apps import AppConfig


class AssessmentConfig(AppConfig):
    """Judgment pools built from the submitted runs, assessors judging in the browser, new qrels from their grades."""

    name = "assessment"
    verbose_name = "Assessment (pools and judgments)"
    default_auto_field = "django.db.models.BigAutoField"
