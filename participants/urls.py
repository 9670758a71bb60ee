"""The participant's pages, under /submissions/ (namespace ``participants``)."""

from django.urls import path

from . import views, views_analysis, views_ledger

app_name = "participants"

urlpatterns = [
    path("new/<slug:dataset_slug>/", views.upload, name="upload"),
    path("mine/", views.mine, name="mine"),
    path("<id:submission_id>/", views.detail, name="detail"),
    path("<id:submission_id>/status.json", views.status, name="status"),
    path("<id:submission_id>/edit/", views.edit, name="edit"),
    path("<id:submission_id>/visibility/", views.visibility, name="visibility"),
    path("<id:submission_id>/withdraw/", views.withdraw, name="withdraw"),
    path("<id:submission_id>/resubmit/", views.resubmit, name="resubmit"),
    # Analyses: participants/views_analysis.py
    path("compare/", views_analysis.compare, name="compare"),
    path("fusion/", views_analysis.fusion, name="fusion"),
    path("<id:submission_id>/per-query.csv", views_analysis.per_query_csv, name="per_query_csv"),
    # Curators: the release ledger of a hidden split.
    path("ledger/<id:split_id>/", views_ledger.ledger, name="ledger"),
]
