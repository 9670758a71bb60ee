from django.apps import AppConfig


class SandboxConfig(AppConfig):
    name = "sandbox"
    label = "sandbox"
    verbose_name = "Sandboxed runs"

    def ready(self) -> None:
        # Registers the software-only rule with the submissions' upload checks (sandbox/receivers.py).
        from . import receivers  # noqa: F401
