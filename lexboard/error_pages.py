"""The site's error pages (handler400/403/404/500 in lexboard/urls.py): JSON in the API's shape under /api/,
a page elsewhere. Wiring, like urls.py: it may import the apps."""

from django.http import HttpResponse
from django.shortcuts import render
from django.template import loader
from django.views import defaults

from api.errors import api_error_response, is_api_path


def page_not_found(request, exception=None):
    if is_api_path(request):
        return api_error_response(404, "Nothing here: GET /api/v1/schema/ lists the API's URLs.")
    message = ""
    if exception is not None and exception.args and isinstance(exception.args[0], str):
        message = exception.args[0]
    return render(request, "404.html", {"message": message}, status=404)


def server_error(request):
    if is_api_path(request):
        return api_error_response(500, "Something went wrong on our side; the error was logged. Please try again later.")
    # No request context: whatever broke the page may break a context processor too.
    return HttpResponse(loader.get_template("500.html").render({}), status=500)


def bad_request(request, exception=None):
    """Django's own refusals outside a view (a malformed request, a body over the size cap)."""
    if is_api_path(request):
        return api_error_response(400, "The request is malformed and was not processed.")
    return defaults.bad_request(request, exception)


def permission_denied(request, exception=None):
    if is_api_path(request):
        return api_error_response(403, "You may not do this.")
    return defaults.permission_denied(request, exception)
