"""URLs of shared tasks (namespace ``sharedtasks``): the task's page and board (boards), team actions (sharedtasks)."""

from django.urls import path, re_path

from sharedtasks import views as team_views

from . import views_tasks

app_name = "sharedtasks"

urlpatterns = [
    path("<int:phase_id>/", views_tasks.task, name="task"),
    re_path(r"^(?P<phase_id>[0-9]+)/private-board\.(?P<fmt>csv|json|tex)$", views_tasks.board_export,
            name="board_export"),
    path("<int:phase_id>/teams/new/", team_views.team_create, name="team_create"),
    path("teams/<int:team_id>/invite/", team_views.invite, name="invite"),
    path("teams/<int:team_id>/new-link/", team_views.new_link, name="new_link"),
    path("teams/<int:team_id>/leave/", team_views.leave, name="leave"),
    path("join/<str:token>/", team_views.join, name="join"),
    path("invitations/<str:token>/", team_views.invitation, name="invitation"),
    path("runs/<int:submission_id>/final/", views_tasks.mark_final, name="mark_final"),
    path("notifications/", team_views.notification_settings, name="notifications"),
]
