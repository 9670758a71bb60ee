"""Who reaches the assessment pages: assessors their own assignments, staff everything.

Anyone else gets a 404 (the pages do not exist for them), a visitor who is
not logged in the log-in page.
"""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.http import Http404
from django.shortcuts import get_object_or_404

from .models import Assignment, Pool, is_assessor


def assessor_required(view):
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not is_assessor(request.user):
            raise Http404("No such page.")
        return view(request, *args, **kwargs)
    return wrapped


def staff_required(view):
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.is_staff:
            raise Http404("No such page.")
        return view(request, *args, **kwargs)
    return wrapped


def assignment_for(request, pk: int) -> Assignment:
    """The assignment, if it is the user's own (staff may look at anyone's)."""
    qs = Assignment.objects.select_related("pool__split__dataset", "assessor")
    if not request.user.is_staff:
        qs = qs.filter(assessor=request.user)
    return get_object_or_404(qs, pk=pk)


def pool_for(pk: int) -> Pool:
    return get_object_or_404(Pool.objects.select_related("split__dataset", "split__current_qrels", "qrels_version"),
                             pk=pk)
