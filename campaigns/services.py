"""Writes of shared tasks: a phase (checked like the admin's form), teams (create, join, invite, accept, leave), reminders.

A user is in at most one team per phase (a database constraint, checked here
first for a readable refusal). Teams are made and joined until the close; the
runs a member sent stay the team's when they leave.
"""

from __future__ import annotations

from allauth.account.models import EmailAddress
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from .errors import TaskRefused
from .models import Invitation, Membership, Phase, Team
from .notifications import absolute, notify
from .selectors import team_members, team_of


def phase_create(*, split, title: str, opens_at, closes_at, **options) -> Phase:
    """A new phase on ``split``, checked as the admin's form checks it (``Phase.clean``: a hidden split of a
    retrieval dataset, dates in order); raises ``TaskRefused`` with the reason, nothing stored.

    Not the admin's partition of runs already stored on the split (``curation.admin.tasks`` cuts them).
    """
    phase = Phase(split=split, title=title, opens_at=opens_at, closes_at=closes_at, **options)
    try:
        phase.full_clean()
    except ValidationError as exc:
        raise TaskRefused(" ".join(message for messages in exc.message_dict.values() for message in messages)) from None
    phase.fix_partition(list(split.topics.values_list("qid", flat=True)))
    phase.save()
    return phase


def _check_can_join(*, phase: Phase, user) -> None:
    if phase.state() in ("closed", "revealed"):
        raise TaskRefused(f"\u201c{phase.title}\u201d closed at {phase.when(phase.closes_at)}: teams can no longer "
                          "be made or joined.")
    current = team_of(user=user, phase=phase)
    if current is not None:
        raise TaskRefused(f"You are already in the team \u201c{current.name}\u201d for \u201c{phase.title}\u201d "
                          "(one team per person per task): leave it first.")


def _join(*, team: Team, user) -> Membership:
    try:
        with transaction.atomic():
            return Membership.objects.create(team=team, phase_id=team.phase_id, user=user)
    except IntegrityError:
        raise TaskRefused("You are already in a team for this task (one team per person per task): "
                          "leave it first.") from None


def team_create(*, phase: Phase, user, name: str) -> Team:
    """A new team in ``phase`` with ``user`` as its first member."""
    name = (name or "").strip()
    if not name:
        raise TaskRefused("Give the team a name.")
    _check_can_join(phase=phase, user=user)
    if Team.objects.filter(phase=phase, name__iexact=name).exists():
        raise TaskRefused(f"A team called \u201c{name}\u201d already takes part in this task: choose another name.")
    with transaction.atomic():
        team = Team.objects.create(phase=phase, name=name[:120], created_by=user)
        _join(team=team, user=user)
    return team


def team_join(*, token: str, user) -> Team:
    """Join the team whose invitation link holds ``token``."""
    team = Team.objects.select_related("phase").filter(invite_token=token).first()
    if team is None:
        raise TaskRefused("This invitation link is not valid (it may have been replaced): ask the team for a new one.")
    _check_can_join(phase=team.phase, user=user)
    _join(team=team, user=user)
    return team


def team_new_link(*, team: Team, user) -> Team:
    """Replace the team's invitation link (the old one stops working)."""
    _check_member(team=team, user=user)
    team.invite_token = Team._meta.get_field("invite_token").default()
    team.save(update_fields=["invite_token"])
    return team


def _check_member(*, team: Team, user) -> None:
    if not Membership.objects.filter(team=team, user=user).exists():
        raise TaskRefused("Only the team's members can do this.")


def invitation_send(*, team: Team, user, email: str) -> Invitation:
    """Invite ``email`` to ``team``: an e-mail with a link; the account holding that verified address accepts."""
    _check_member(team=team, user=user)
    email = (email or "").strip()
    if "@" not in email:
        raise TaskRefused("Give the e-mail address of the person to invite.")
    phase = team.phase
    if phase.state() in ("closed", "revealed"):
        raise TaskRefused(f"\u201c{phase.title}\u201d has closed: no more invitations.")
    invitation = Invitation.objects.create(team=team, email=email, invited_by=user)
    address = EmailAddress.objects.filter(email__iexact=email, verified=True).select_related("user").first()
    notify(key=f"invitation:{invitation.pk}", kind="invitation", user=address.user if address else None, email=email,
           context={"team": team.name, "task": phase.title, "inviter": user.get_username(),
                    "closes": phase.when(phase.closes_at), "url": absolute(invitation.get_absolute_url())})
    return invitation


def invitation_accept(*, token: str, user) -> Team:
    """Accept an e-mail invitation: ``user`` must hold the invited address, verified (allauth's addresses)."""
    invitation = Invitation.objects.select_related("team__phase").filter(token=token).first()
    if invitation is None:
        raise TaskRefused("This invitation does not exist: ask the team to invite you again.")
    if invitation.accepted_at is not None:
        raise TaskRefused("This invitation was already accepted.")
    if not EmailAddress.objects.filter(user=user, email__iexact=invitation.email, verified=True).exists():
        raise TaskRefused(f"This invitation is for {invitation.email}: add that address to your account and verify "
                          "it (Account → E-mail), then open the link again.")
    _check_can_join(phase=invitation.team.phase, user=user)
    with transaction.atomic():
        _join(team=invitation.team, user=user)
        Invitation.objects.filter(pk=invitation.pk).update(accepted_at=timezone.now(), accepted_by=user)
    return invitation.team


def team_leave(*, team: Team, user) -> None:
    """Leave the team (before the close); its runs stay the team's."""
    phase = team.phase
    if phase.state() in ("closed", "revealed"):
        raise TaskRefused(f"\u201c{phase.title}\u201d has closed: teams are fixed.")
    deleted, _ = Membership.objects.filter(team=team, user=user).delete()
    if not deleted:
        raise TaskRefused("You are not in this team.")


def closing_reminders(*, now=None) -> int:
    """Remind every member of every open phase that closes within 24 hours (once per member and phase)."""
    now = now or timezone.now()
    sent = 0
    for phase in Phase.objects.filter(opens_at__lte=now, closes_at__gt=now, revealed_at__isnull=True):
        if not phase.closing_soon(now):
            continue
        for team in phase.teams.all():
            for member in team_members(team=team):
                row = notify(key=f"closing:{phase.pk}:{member.pk}", kind="closing_soon", user=member,
                             context={"task": phase.title, "team": team.name, "closes": phase.when(phase.closes_at),
                                      "max_final_runs": phase.max_final_runs,
                                      "url": absolute(phase.get_absolute_url())})
                sent += row is not None
    return sent
