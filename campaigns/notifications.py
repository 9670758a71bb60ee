"""E-mail notifications: recorded in the event's transaction, sent by a task after the commit, never twice.

:func:`notify` records a :class:`~campaigns.models.SentNotification` under a
key that names what it is about (``run-scored:<submission id>``,
``closing:<phase>:<user>``...). The key is unique in the database, so a second
event about the same thing records nothing and sends nothing. The message is
sent by :func:`notification_send` (the ``campaigns.send_notification``
task, after the commit): it locks the row, sends, and marks it sent in the
same transaction; a send that fails leaves the row unsent for the task's
retries and for :func:`notifications_resend` (beat). A user who turned
e-mails off gets none (the row records why).

Messages are subject/text/html triplets rendered by one helper,
:func:`render_email`, from ``templates/campaigns/email/<kind>.*``. They
carry links and statuses, never a score: a score during a shared task is
the public part's, and the page says what it is.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from .models import SentNotification
from .selectors import notifications_on

logger = logging.getLogger(__name__)

#: The registered name of the sending task (``campaigns.tasks``): the wire format.
SEND_TASK = "campaigns.send_notification"
#: A request or a worker must not wait long on a broker that is away: beat resends (notifications_resend).
SEND_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}
KINDS = ("run_scored", "run_failed", "invitation", "closing_soon", "board_published", "ledger_alert")


def absolute(path: str) -> str:
    """A site path as a link for an e-mail (``LEXBOARD_SITE_URL`` + path)."""
    return settings.LEXBOARD_SITE_URL.rstrip("/") + path


def render_email(kind: str, context: dict) -> tuple[str, str, str]:
    """(subject, text, html) of a notification: the one helper every e-mail of this app goes through."""
    base = f"campaigns/email/{kind}"
    context = {**context, "settings_url": absolute(reverse("campaigns:notifications"))}
    subject = render_to_string(f"{base}_subject.txt", context).strip().replace("\n", " ")
    return (settings.ACCOUNT_EMAIL_SUBJECT_PREFIX + subject, render_to_string(f"{base}.txt", context),
            render_to_string(f"{base}.html", context))


def _send_after_commit(notification_id: int) -> None:
    def send() -> None:
        try:
            current_app.send_task(SEND_TASK, args=[notification_id], retry=True, retry_policy=SEND_RETRY_POLICY)
        except Exception:  # the broker is away: notifications_resend (beat) sends it later
            logger.warning("could not queue notification %s; beat will resend it", notification_id, exc_info=True)
    transaction.on_commit(send)


def notify(*, key: str, kind: str, context: dict, user=None, email: str = "") -> SentNotification | None:
    """Record the notification ``key`` (once ever) and send it after the commit; None when it was recorded before."""
    if kind not in KINDS:
        raise ValueError(f"no e-mail template for the notification kind {kind!r}; one of {', '.join(KINDS)}")
    try:
        with transaction.atomic():
            row = SentNotification.objects.create(key=key[:200], kind=kind, context=context, user=user,
                                                  email=email)
    except IntegrityError:
        return None
    _send_after_commit(row.pk)
    return row


def notification_send(*, notification_id: int) -> str:
    """Send one recorded notification unless it was sent or skipped; returns what happened.

    The row is locked while the message goes out and marked sent in the same
    transaction: of two deliveries of the task, the second waits, then finds
    it sent. A failing send raises (the task retries) and leaves it unsent.
    """
    with transaction.atomic():
        row = SentNotification.objects.select_for_update().filter(pk=notification_id).first()
        if row is None or row.sent_at is not None or row.skipped:
            return "done before"
        if row.user is not None and not notifications_on(user=row.user):
            row.skipped = "the user turned e-mails off"
            row.save(update_fields=["skipped"])
            return "skipped"
        to = row.email or (row.user.email if row.user is not None else "")
        if not to:
            row.skipped = "no e-mail address"
            row.save(update_fields=["skipped"])
            return "skipped"
        subject, text, html = render_email(row.kind, row.context)
        message = EmailMultiAlternatives(subject, text, settings.DEFAULT_FROM_EMAIL, [to])
        message.attach_alternative(html, "text/html")
        message.send()
        row.sent_at = timezone.now()
        row.attempts += 1
        row.save(update_fields=["sent_at", "attempts"])
    logger.info("notification %s sent to user %s", row.key, row.user_id)
    return "sent"


#: A notification still unsent this long after it was recorded is sent again by beat.
RESEND_AFTER = timedelta(minutes=5)
#: ... for this long; then it is left for a person to look at (the admin lists unsent ones).
GIVE_UP_AFTER = timedelta(days=2)


def notifications_resend(*, now=None) -> int:
    """Queue again the notifications whose message was lost or whose sending kept failing (beat)."""
    now = now or timezone.now()
    stale = SentNotification.objects.filter(sent_at__isnull=True, skipped="", created_at__lt=now - RESEND_AFTER,
                                            created_at__gt=now - GIVE_UP_AFTER)
    ids = list(stale.values_list("pk", flat=True)[:500])
    for pk in ids:
        try:
            current_app.send_task(SEND_TASK, args=[pk], retry=True, retry_policy=SEND_RETRY_POLICY)
        except Exception:
            logger.warning("could not queue notification %s", pk, exc_info=True)
            break
    return len(ids)
