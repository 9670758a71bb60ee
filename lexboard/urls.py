"""Top-level URLs: each app owns its own URL module."""

# First: registers <id:...> once, before any app's URL module below is imported.
from lexboard import converters  # noqa: F401

# isort: split
from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.urls import include, path

from accounts.urls import allauth_urlpatterns

# The admin logs in through allauth's page: its rate limits and lock-out rules cover curators too.
# (mypy flags any assignment to a method; this wraps the bound method of this one site on purpose.)
admin.site.login = secure_admin_login(admin.site.login)  # type: ignore[method-assign]

urlpatterns = [
    path("", include("lexboard.health")),  # /healthz
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    path("accounts/", include(allauth_urlpatterns)),
    path("submissions/", include("participants.urls")),
    path("assessment/", include("assessment.urls")),
    path("sandbox/", include("sandbox.urls")),
    path("api/v1/", include("api.urls")),
    path("tasks/", include("campaigns.urls")),
    path("snapshots/", include("snapshots.urls")),
    path("", include("leaderboard.urls")),
]

handler400 = "lexboard.error_pages.bad_request"
handler403 = "lexboard.error_pages.permission_denied"
handler404 = "lexboard.error_pages.page_not_found"
handler500 = "lexboard.error_pages.server_error"
