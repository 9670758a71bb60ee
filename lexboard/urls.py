"""Top-level URLs: each app owns its own URL module."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("", include("lexboard.health")),  # /healthz
    path("admin/", admin.site.urls),
    path("accounts/", include("submissions.account_urls")),
    path("submissions/", include("submissions.urls")),
    path("api/v1/", include("boards.api_urls")),
    path("", include("boards.urls")),
]

handler400 = "boards.views.bad_request"
handler403 = "boards.views.permission_denied"
handler404 = "boards.views.page_not_found"
handler500 = "boards.views.server_error"
