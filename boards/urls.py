from django.urls import path, re_path

from . import views

app_name = "leaderboard"

urlpatterns = [
    path("", views.home, name="home"),
    path("b/<slug:slug>/", views.benchmark, name="benchmark"),
    path("d/<slug:slug>/", views.dataset, name="dataset"),
    re_path(r"^d/(?P<slug>[-a-zA-Z0-9_]+)/files/(?P<name>[-a-zA-Z0-9_.]+\.gz)$", views.dataset_file, name="dataset_file"),
    re_path(r"^d/(?P<slug>[-a-zA-Z0-9_]+)/export\.(?P<fmt>csv|json|tex|bib)$", views.export, name="export"),
    path("docs/metrics/", views.docs, name="docs"),
    path("favicon.ico", views.favicon, name="favicon"),
]
