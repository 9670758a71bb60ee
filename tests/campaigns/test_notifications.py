"""E-mail notifications: sent after the commit, once per key, not to users who turned them off, retried on
failure (locmem backend; the real worker's part is in test_notifications_worker.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from campaigns.models import NotificationSetting, SentNotification
from campaigns.notifications import notification_send, notifications_resend, notify
from campaigns.services import closing_reminders
from submissions.models import Submission

from .conftest import ALICE_RANKS, upload

pytestmark = pytest.mark.django_db


def _send_all() -> None:
    for pk in SentNotification.objects.filter(sent_at__isnull=True, skipped="").values_list("pk", flat=True):
        notification_send(notification_id=pk)


def test_a_scored_run_sends_one_email_with_its_link(task_world, alice):
    run = upload(alice, task_world.split, ALICE_RANKS, "mailed run")
    row = SentNotification.objects.get(key=f"run-scored:{run.pk}")
    assert row.user == alice and row.sent_at is None  # recorded in the transaction, sent by the worker
    _send_all()
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["alice@example.org"] and "is scored" in message.subject
    assert f"/submissions/{run.pk}/" in message.body and "75.00" not in message.body and "0.75" not in message.body
    assert message.alternatives and f"/submissions/{run.pk}/" in message.alternatives[0][0]
    notification_send(notification_id=row.pk)  # a redelivered task
    assert len(mail.outbox) == 1


def test_a_failed_run_sends_its_reason(task_world, alice):
    run = upload(alice, task_world.split, ALICE_RANKS, "broken", score=False)
    Submission.objects.get(pk=run.pk).mark_failed(kind="input", message="line 3: the score is not a number")
    _send_all()
    assert len(mail.outbox) == 1 and "failed" in mail.outbox[0].subject
    assert "line 3: the score is not a number" in mail.outbox[0].body


def test_the_same_key_is_recorded_and_sent_once(alice):
    assert notify(key="k:1", kind="run_scored", user=alice, context={}) is not None
    assert notify(key="k:1", kind="run_scored", user=alice, context={}) is None
    _send_all()
    _send_all()
    assert len(mail.outbox) == 1 and SentNotification.objects.count() == 1


def test_nothing_is_sent_for_a_rolled_back_event(alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        try:
            with transaction.atomic():
                notify(key="k:2", kind="run_scored", user=alice, context={})
                raise RuntimeError("the event's transaction fails")
        except RuntimeError:
            pass
    assert callbacks == [] and not SentNotification.objects.exists()


def test_a_user_who_turned_emails_off_gets_none(task_world, alice, client):
    client.force_login(alice)
    client.post(reverse("campaigns:notifications"), {})
    assert NotificationSetting.objects.get(user=alice).emails is False
    upload(alice, task_world.split, ALICE_RANKS, "quiet run")
    _send_all()
    assert mail.outbox == []
    assert SentNotification.objects.get(kind="run_scored").skipped == "the user turned e-mails off"
    client.post(reverse("campaigns:notifications"), {"emails": "on"})
    assert NotificationSetting.objects.get(user=alice).emails is True


def test_a_failing_send_stays_unsent_for_the_retries(alice, settings):
    row = notify(key="k:3", kind="run_scored", user=alice, context={"system": "s", "url": "http://x/"})
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2  # nothing listens
    with pytest.raises(OSError):
        notification_send(notification_id=row.pk)
    assert SentNotification.objects.get(pk=row.pk).sent_at is None
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    SentNotification.objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(minutes=10))
    assert notifications_resend() == 1  # beat queues it again
    notification_send(notification_id=row.pk)
    assert len(mail.outbox) == 1 and SentNotification.objects.get(pk=row.pk).sent_at is not None


def test_the_24_hour_reminder_goes_once_to_every_member(task_world):
    phase = task_world.phase
    assert closing_reminders(now=phase.closes_at - timedelta(hours=30)) == 0  # too early
    assert closing_reminders(now=phase.closes_at - timedelta(hours=23)) == 3  # alice, carol, bob
    assert closing_reminders(now=phase.closes_at - timedelta(hours=2)) == 0  # never twice
    _send_all()
    assert len(mail.outbox) == 3 and all("24 hours" in m.subject for m in mail.outbox)
    assert all("COLIEE 2027 Task 3" in m.body and "Europe/Brussels" in m.body for m in mail.outbox)


def test_an_invitation_email_names_the_team_and_the_link(task_world, alice):
    from campaigns.services import invitation_send

    invitation = invitation_send(team=task_world.red, user=alice, email="newcomer@example.org")
    _send_all()
    assert mail.outbox[0].to == ["newcomer@example.org"]
    assert "Red" in mail.outbox[0].subject and invitation.get_absolute_url() in mail.outbox[0].body
