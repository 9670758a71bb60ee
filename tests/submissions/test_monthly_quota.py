"""The split's monthly cap: a calendar month in UTC, beside the daily and total limits, on every door."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone as dt_timezone

import pytest
from django.urls import reverse
from django.utils import timezone

from submissions import services
from submissions.errors import QuotaExceeded
from submissions.models import Submission
from submissions.selectors import month_bounds, submission_quota

from .conftest import METADATA, good_run, upload

pytestmark = pytest.mark.django_db


def create(user, split, n: int) -> Submission:
    return services.submission_create(user=user, split=split, upload=upload(good_run(n)), metadata=METADATA)


def monthly(split, limit: int | None):
    split.daily_limit, split.total_limit, split.monthly_limit = 0, 0, limit
    split.save()
    return split


def test_the_month_is_the_calendar_month_in_utc():
    # 00:30 on New Year's Day in Brussels is still December in UTC.
    brussels = dt_timezone(timedelta(hours=1))
    start, end = month_bounds(datetime(2027, 1, 1, 0, 30, tzinfo=brussels))
    assert (start, end) == (datetime(2026, 12, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))
    assert month_bounds(datetime(2027, 2, 28, 23, 59, tzinfo=UTC))[1] == datetime(
        2027, 3, 1, tzinfo=UTC)


def test_it_counts_this_months_uploads_and_names_the_first_of_next_month(alice, test_split):
    monthly(test_split, 2)
    start, end = month_bounds(timezone.now())
    last_month = create(alice, test_split, 1)
    Submission.objects.filter(pk=last_month.pk).update(created_at=start - timedelta(minutes=1))
    create(alice, test_split, 2)
    quota = submission_quota(user=alice, split=test_split)
    assert (quota.monthly_limit, quota.monthly_used, quota.monthly_remaining) == (2, 1, 1)
    assert quota.allowed and quota.next_allowed_at is None
    create(alice, test_split, 3)
    quota = submission_quota(user=alice, split=test_split)
    assert not quota.allowed and quota.monthly_remaining == 0
    assert quota.next_allowed_at == end
    with pytest.raises(QuotaExceeded) as refused:
        create(alice, test_split, 4)
    message = str(refused.value.message)
    assert "2 submissions to this split this calendar month (UTC)" in message
    assert f"accepted from {end:%Y-%m-%d} 00:00 UTC, the first day of next month" in message
    assert refused.value.retry_at == end
    assert Submission.objects.count() == 3  # the refusal used no slot


def test_no_monthly_limit_is_none_and_changes_nothing(alice, test_split):
    monthly(test_split, None)
    for n in range(3):
        create(alice, test_split, n)
    quota = submission_quota(user=alice, split=test_split)
    assert quota.monthly_remaining is None and quota.allowed


def test_the_monthly_cap_is_per_account_outside_a_shared_task(alice, bob, test_split):
    monthly(test_split, 1)
    create(alice, test_split, 1)
    assert not submission_quota(user=alice, split=test_split).allowed
    assert submission_quota(user=bob, split=test_split).monthly_remaining == 1


def test_the_upload_page_shows_what_is_left_this_month_before_upload(client, alice, test_split):
    monthly(test_split, 3)
    create(alice, test_split, 1)
    client.force_login(alice)
    page = client.get(reverse("participants:upload", args=[test_split.dataset.slug]) + "?split=test")
    body = page.content.decode()
    _, end = month_bounds(timezone.now())
    assert f"2 of 3 left this calendar month (UTC; the count starts again on {end:%Y-%m-%d})" in body
    dataset_page = client.get(test_split.dataset.get_absolute_url()).content.decode()
    assert "3 per calendar month (UTC)" in dataset_page
