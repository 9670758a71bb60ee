"""URLs of shared tasks (namespace ``sharedtasks``): the task's page and board (boards), team actions (sharedtasks)."""

from django.urls import path

from sharedtasks import views as team_views

from . import views_tasks

app_name = "sharedtasks"

urlpatterns = [
    path("<id:phase_id>/", views_tasks.task, name="task"),
    path("<id:phase_id>/private-board.<str:fmt>", views_tasks.board_export, name="board_export"),
    path("<id:phase_id>/teams/new/", team_views.team_create, name="team_create"),
    path("teams/<id:team_id>/invite/", team_views.invite, name="invite"),
    path("teams/<id:team_id>/new-link/", team_views.new_link, name="new_link"),
    path("teams/<id:team_id>/leave/", team_views.leave, name="leave"),
    path("join/<str:token>/", team_views.join, name="join"),
    path("invitations/<str:token>/", team_views.invitation, name="invitation"),
    path("runs/<id:submission_id>/final/", views_tasks.mark_final, name="mark_final"),
    path("notifications/", team_views.notification_settings, name="notifications"),
]
