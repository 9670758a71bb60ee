"""Celery tasks of shared tasks: thin wrappers (names are the wire format: never rename them)."""

from __future__ import annotations

import smtplib

from celery import shared_task

from .notifications import SEND_TASK, notification_send, notifications_resend
from .services import closing_reminders

NOTICES_TICK_TASK = "campaigns.notices_tick"


@shared_task(name=SEND_TASK, autoretry_for=(OSError, smtplib.SMTPException), retry_backoff=10,
             retry_backoff_max=600, retry_jitter=True, max_retries=6, acks_late=True)
def send_notification(notification_id: int) -> str:
    """Send one recorded e-mail (a no-op when it was sent): SMTP errors are retried with backoff."""
    return notification_send(notification_id=int(notification_id))


@shared_task(name=NOTICES_TICK_TASK, ignore_result=True)
def notices_tick() -> dict:
    """Beat: the 24-hour reminders and the resending of notifications whose message was lost."""
    return {"reminders": closing_reminders(), "resent": notifications_resend()}
