from django.urls import path, re_path

from . import views

app_name = "snapshots"

urlpatterns = [
    path("d/<slug:slug>/", views.board_list, name="board"),
    path("d/<slug:slug>/take/", views.take, name="take"),
    path("<slug:key>/", views.detail, name="detail"),
    path("<slug:key>/diff/", views.diff, name="diff"),
    re_path(r"^(?P<key>[-a-zA-Z0-9_]+)/snapshot\.(?P<fmt>csv|json|tex|bib)$", views.export, name="export"),
]
