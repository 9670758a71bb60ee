from django.apps import AppConfig


class PresentationConfig(AppConfig):
    """Formatting template tags ({% load formatting %}) and SVG plots; no models."""

    name = "presentation"
    verbose_name = "Presentation"
