"""URLs used only by tests/ops: views that fail the way a dead database makes them fail."""

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse
from django.urls import include, path


def database_gone(request):
    raise OperationalError('connection to server at "db.internal" (10.0.0.5), port 5432 failed: password=hunter2')


def connection_closed(request):
    raise InterfaceError("connection already closed")


def other_error(request):
    raise RuntimeError("a plain bug")


class SessionSaveFails:
    """Stands for an inner middleware (session save) that hits the database after the view."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.path.endswith("/after-view/"):
            raise OperationalError("server closed the connection unexpectedly")
        return response


def fine(request):
    return HttpResponse("<p>fine</p>")


urlpatterns = [
    path("page/", database_gone),
    path("api/v1/thing/", database_gone),
    path("closed/", connection_closed),
    path("bug/", other_error),
    path("after-view/", fine),
    path("", include("lexboard.health")),
]
