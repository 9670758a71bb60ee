"""A shared task in headless Chromium: the dataset page's timeline and countdown (no script: the CSP allows
none inline), the task's page, making a team, and the page at a phone's width."""

from __future__ import annotations

from datetime import timedelta

import pytest

from .helpers import accessibility_problems
from .test_participant import PASSWORD, log_in

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.slow]

expect = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed").expect


def test_a_participant_finds_the_task_makes_a_team_and_reads_the_countdown(demo, browser_page, django_user_model,
                                                                          page_factory):
    from django.utils import timezone

    from campaigns.models import Phase, Team

    split = demo.splits.get(name="test")
    now = timezone.now()
    phase = Phase.objects.create(split=split, title="Demo task 2027", opens_at=now - timedelta(hours=2),
                                 closes_at=now + timedelta(days=3, hours=5, minutes=10), time_zone="Europe/Brussels",
                                 public_qids=sorted(split.topics.values_list("qid", flat=True))[:10])
    user = django_user_model.objects.create_user("ines", "ines@example.org", PASSWORD)
    from allauth.account.models import EmailAddress

    EmailAddress.objects.create(user=user, email=user.email, primary=True, verified=True)
    page = browser_page
    page.goto(f"/d/{demo.slug}/")
    timeline = page.locator("section.task-timelines")
    expect(timeline).to_contain_text("Demo task 2027")
    expect(timeline).to_contain_text("closes in 3 days 5 hours")
    expect(timeline).to_contain_text("Europe/Brussels")
    timeline.get_by_role("link", name="Demo task 2027").click()
    expect(page.locator("h1")).to_have_text("Demo task 2027")
    log_in(page, "ines")
    page.goto(f"/tasks/{phase.pk}/")
    page.get_by_label("Team name").fill("Les Juristes")
    page.get_by_role("button", name="Create a team").click()
    expect(page.locator("main")).to_contain_text("You are in Les Juristes")
    assert Team.objects.filter(phase=phase, name="Les Juristes").exists()
    assert accessibility_problems(page) == []
    assert page.js_errors == [], page.js_errors  # CSP refusals and script errors land here
    phone = page_factory(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    phone.goto(f"/tasks/{phase.pk}/")
    width, inner = phone.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= inner
