"""The page sweep in a real browser: every kind of page, as a visitor, a participant and a curator, with no console
error (script error, CSP refusal, failed request) and no axe-core violation of WCAG 2.1 A/AA.

axe-core is vendored in tests/browser/vendor/ (the npm package's axe.min.js and its licence) and injected by the
test; the site never serves it. The server-side half of the sweep (every URL of the access matrix, each role, no
5xx, no raw template syntax) is tests/robustness/test_access_matrix.py.
"""

from __future__ import annotations

import io
from datetime import timedelta

import pytest

from tests.users import participant

from .helpers import axe_violations

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.slow]

PASSWORD = "a long pass phrase for the sweep"


def _world(demo):
    """A flash message, a shared task with a team, the demo's pool: what the pages of each role show."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.utils import timezone

    from assessment.models import Pool
    from campaigns.models import Phase
    from campaigns.services import team_create
    from catalogue.models import Split
    from demo.assessment import ASSESSOR_USERNAME
    from submissions.models import Submission

    call_command("load_cards", stdout=io.StringIO())
    now = timezone.now()
    task = Split.objects.create(dataset=demo, name="task", kind="test", hidden=True, min_coverage=0, ladder=False)
    phase = Phase.objects.create(split=task, title="Sweep task", opens_at=now - timedelta(days=1),
                                 closes_at=now + timedelta(days=5), daily_cap=3, total_cap=9)
    member = participant("sweeper", PASSWORD)
    team_create(phase=phase, user=member, name="Sweepers")
    curator = participant("curator", PASSWORD, is_staff=True, is_superuser=True)
    tests = list(Submission.objects.filter(split__dataset=demo, split__name="test", status="scored")
                 .values_list("pk", flat=True))
    dev = Submission.objects.filter(split__dataset=demo, split__name="dev", status="scored").first()
    pool = Pool.objects.filter(split__dataset=demo).first()
    visitor_pages = [
        "/", f"/b/{demo.benchmark.slug}/", f"/d/{demo.slug}/", f"/d/{demo.slug}/?split=dev", "/d/bsard/", "/d/greekbarretrieval/",
        f"/submissions/{dev.pk}/", f"/submissions/{tests[0]}/",
        f"/submissions/compare/?ids={tests[0]}&ids={tests[1]}", "/submissions/compare/",
        f"/tasks/{phase.pk}/", "/docs/metrics/", "/api/v1/docs/",
        "/accounts/login/", "/accounts/signup/", "/accounts/password/reset/",
        f"/submissions/new/{demo.slug}/?split=dev",  # a flash message on the log-in page it sends to
    ]
    participant_pages = [
        "/accounts/profile/", "/submissions/mine/", f"/submissions/new/{demo.slug}/?split=test",
        f"/submissions/new/{demo.slug}/?split=task", f"/tasks/{phase.pk}/", f"/submissions/fusion/?split={dev.split_id}",
        "/tasks/notifications/",
    ]
    assessor = get_user_model().objects.get(username=ASSESSOR_USERNAME)  # load_demo's, with its assignment
    assessor.set_password(PASSWORD)
    assessor.save()
    assignment = pool.assignments.get(assessor=assessor)
    assessor_pages = ["/assessment/", f"/assessment/assignments/{assignment.pk}/",
                      f"/assessment/assignments/{assignment.pk}/items/{assignment.items.first().pk}/"]
    curator_pages = ["/assessment/", f"/assessment/pools/{pool.pk}/", f"/assessment/assignments/{assignment.pk}/",
                     f"/assessment/assignments/{assignment.pk}/items/{assignment.items.first().pk}/",
                     f"/assessment/pools/{pool.pk}/bias/", f"/d/{demo.slug}/"]
    return (("visitor", None, visitor_pages), ("participant", member, participant_pages),
            ("assessor", assessor, assessor_pages), ("curator", curator, curator_pages))


def _log_in(page, username: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.locator("main form button[type=submit]").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def test_every_page_has_no_console_error_and_no_axe_violation(demo, page_factory, shoot):
    problems: dict[str, list[str]] = {}
    for role, user, urls in _world(demo):
        page = page_factory()
        if user is not None:
            _log_in(page, user.get_username())
        for url in urls:
            page.js_errors.clear()
            response = page.goto(url)
            found = [f"HTTP {response.status}"] if response.status >= 400 else []
            found += list(page.js_errors) + axe_violations(page)
            if found:
                problems[f"{role} {url}"] = found
                shoot(page, f"sweep-{role}-{len(problems)}", full_page=True)
        page.context.close()
    assert problems == {}, "\n".join(f"{where}: {found}" for where, found in problems.items())
