from django.urls import path

from . import views

app_name = "sandbox"
urlpatterns = [
    path("splits/<id:split_id>/submit/", views.upload, name="upload"),
    path("runs/<id:run_id>/", views.run_detail, name="run"),
    path("runs/<id:run_id>/cancel/", views.run_cancel, name="cancel"),
]
