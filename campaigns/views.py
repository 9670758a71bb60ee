"""Team pages' actions: create, join by link, invite by e-mail, accept, leave; the e-mail setting.

Thin views: a logged-in user, a service call, a message, back to the task's
page. An anonymous invitee is sent to django-allauth's sign-up page, which
brings them back to the invitation once their account exists.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from . import services
from .errors import TaskRefused
from .models import Invitation, NotificationSetting, Phase, Team
from .selectors import notifications_on


def _back(phase: Phase) -> HttpResponse:
    return redirect(phase.get_absolute_url())


def _signup_then(request: HttpRequest) -> HttpResponse:
    """allauth's sign-up page, coming back here afterwards (its log-in page links back to it)."""
    return redirect(reverse("account_signup") + "?" + urlencode({"next": request.get_full_path()}))


@login_required
@require_POST
def team_create(request: HttpRequest, phase_id: int) -> HttpResponse:
    phase = get_object_or_404(Phase, pk=phase_id)
    try:
        team = services.team_create(phase=phase, user=request.user, name=request.POST.get("name", ""))
        messages.success(request, f"Team \u201c{team.name}\u201d created: invite your team mates below.")
    except TaskRefused as exc:
        messages.error(request, exc.message)
    return _back(phase)


def join(request: HttpRequest, token: str) -> HttpResponse:
    """An invitation link: GET shows the team and a button; POST joins. Anonymous visitors sign up first."""
    team = get_object_or_404(Team.objects.select_related("phase__split__dataset"), invite_token=token)
    return _joining(request, team, None, accept=lambda: services.team_join(token=token, user=request.user))


def invitation(request: HttpRequest, token: str) -> HttpResponse:
    """An e-mail invitation: accepted by the account holding the invited address (verified)."""
    invite = get_object_or_404(Invitation.objects.select_related("team__phase__split__dataset"), token=token)
    return _joining(request, invite.team, invite,
                    accept=lambda: services.invitation_accept(token=token, user=request.user))


def _joining(request: HttpRequest, team: Team, invite: Invitation | None, *, accept) -> HttpResponse:
    """The one flow of both ways in: sign up first, then a page with a button; POST joins (or says why not)."""
    if not request.user.is_authenticated:
        return _signup_then(request)
    if request.method == "POST":
        try:
            accept()
            messages.success(request, f"You joined the team \u201c{team.name}\u201d.")
        except TaskRefused as exc:
            messages.error(request, exc.message)
        return _back(team.phase)
    return render(request, "campaigns/join.html", {"team": team, "phase": team.phase, "invitation": invite})


@login_required
@require_POST
def invite(request: HttpRequest, team_id: int) -> HttpResponse:
    team = get_object_or_404(Team.objects.select_related("phase"), pk=team_id)
    try:
        sent = services.invitation_send(team=team, user=request.user, email=request.POST.get("email", ""))
        messages.success(request, f"Invitation sent to {sent.email}.")
    except TaskRefused as exc:
        messages.error(request, exc.message)
    return _back(team.phase)


@login_required
@require_POST
def new_link(request: HttpRequest, team_id: int) -> HttpResponse:
    team = get_object_or_404(Team.objects.select_related("phase"), pk=team_id)
    try:
        services.team_new_link(team=team, user=request.user)
        messages.success(request, "A new invitation link replaces the old one.")
    except TaskRefused as exc:
        messages.error(request, exc.message)
    return _back(team.phase)


@login_required
@require_POST
def leave(request: HttpRequest, team_id: int) -> HttpResponse:
    """Leave the team, once confirmed: the page's button opens a confirmation that posts ``confirm=yes``."""
    team = get_object_or_404(Team.objects.select_related("phase"), pk=team_id)
    if request.POST.get("confirm") != "yes":
        messages.error(request, f"You are still in \u201c{team.name}\u201d: to leave it, open \u201cLeave the team\u201d "
                                "under Your team and confirm with its button.")
        return _back(team.phase)
    try:
        services.team_leave(team=team, user=request.user)
        messages.success(request, f"You left the team \u201c{team.name}\u201d; its runs stay the team's.")
    except TaskRefused as exc:
        messages.error(request, exc.message)
    return _back(team.phase)


@login_required
def notification_settings(request: HttpRequest) -> HttpResponse:
    """Turn the e-mails about runs, teams and tasks on or off."""
    if request.method == "POST":
        on = request.POST.get("emails") == "on"
        NotificationSetting.objects.update_or_create(user=request.user, defaults={"emails": on})
        messages.success(request, "E-mails are on." if on else "E-mails are off: Lexboard sends you none.")
        return redirect("campaigns:notifications")
    return render(request, "campaigns/notifications.html", {"emails_on": notifications_on(user=request.user)})
