from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Accounts on django-allauth: sign-up, verified e-mail, profiles and API tokens, who may upload where."""

    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"
