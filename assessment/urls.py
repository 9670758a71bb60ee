"""The assessment pages, under /assessment/ (namespace ``assessment``)."""

from django.urls import path

from . import views, views_curator

app_name = "assessment"

urlpatterns = [
    path("", views.home, name="home"),
    path("assignments/<id:assignment_id>/", views.assignment, name="assignment"),
    path("assignments/<id:assignment_id>/items/<id:item_id>/", views.item, name="item"),
    path("assignments/<id:assignment_id>/undo/", views.undo, name="undo"),
    path("pools/<id:pool_id>/", views_curator.pool, name="pool"),
    path("pools/<id:pool_id>/assign/", views_curator.assign, name="assign"),
    path("pools/<id:pool_id>/items/<id:item_id>/adjudicate/", views_curator.adjudicate, name="adjudicate"),
    path("pools/<id:pool_id>/pool.<str:fmt>", views_curator.export, name="export"),
    path("pools/<id:pool_id>/import/", views_curator.import_judgments, name="import"),
    path("pools/<id:pool_id>/bias/", views_curator.bias, name="bias"),
    path("pools/<id:pool_id>/qrels/", views_curator.make_qrels, name="make_qrels"),
]
