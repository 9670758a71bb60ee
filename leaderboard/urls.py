from django.urls import path, re_path

from . import views, views_tasks, views_terms

app_name = "leaderboard"

urlpatterns = [
    path("", views.home, name="home"),
    path("b/<slug:slug>/", views.benchmark, name="benchmark"),
    path("d/<slug:slug>/", views.dataset, name="dataset"),
    re_path(r"^d/(?P<slug>[-a-zA-Z0-9_]+)/files/(?P<name>[-a-zA-Z0-9_.]+\.gz)$", views.dataset_file, name="dataset_file"),
    path("d/<slug:slug>/terms/", views_terms.data_terms, name="data_terms"),
    path("d/<slug:slug>/terms/<id:version>/", views_terms.data_terms_version, name="data_terms_version"),
    re_path(r"^d/(?P<slug>[-a-zA-Z0-9_]+)/export\.(?P<fmt>csv|json|tex|bib)$", views.export, name="export"),
    path("docs/metrics/", views.docs, name="docs"),
    path("favicon.ico", views.favicon, name="favicon"),
    # Shared tasks: the task's page, its private board's exports, marking a team's final run.
    path("tasks/<id:phase_id>/", views_tasks.task, name="task"),
    path("tasks/<id:phase_id>/private-board.<str:fmt>", views_tasks.board_export, name="board_export"),
    path("tasks/runs/<id:submission_id>/final/", views_tasks.mark_final, name="mark_final"),
]
