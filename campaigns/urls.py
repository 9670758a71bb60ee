"""Team actions of shared tasks, under /tasks/ (namespace ``campaigns``); the task's page and boards are the
leaderboards' (``leaderboard:task``, ``leaderboard:board_export``, ``leaderboard:mark_final``)."""

from django.urls import path

from . import views

app_name = "campaigns"

urlpatterns = [
    path("<id:phase_id>/teams/new/", views.team_create, name="team_create"),
    path("teams/<id:team_id>/invite/", views.invite, name="invite"),
    path("teams/<id:team_id>/new-link/", views.new_link, name="new_link"),
    path("teams/<id:team_id>/leave/", views.leave, name="leave"),
    path("join/<str:token>/", views.join, name="join"),
    path("invitations/<str:token>/", views.invitation, name="invitation"),
    path("notifications/", views.notification_settings, name="notifications"),
]
