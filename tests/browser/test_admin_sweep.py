"""The curator's admin pages in a real browser: no console error and no axe-core violation of WCAG 2.1 A/AA, in the
light and the dark scheme and on a 390 px phone, logged in as staff (issue #38: the admin is a curator's tool).

The pages are the curator flow of docs/operations.md and the README: the dataset list, "Add dataset", a dataset with
its split and reported-result inlines, the import form, the publish preview, splits, qrels versions, topics, data
terms, shared tasks (a phase's date and time inputs), the sandbox's split picker (an autocomplete widget is opened
and checked too, where a page has one), the submissions and the release ledger. The public pages' sweep is
test_sweep.py; both use the same axe-core rules (``helpers.axe_violations``). Screenshots of a dataset with its
inlines and of a phase (``admin-<view>-dataset.png``, ``admin-<view>-phase.png``) are kept for a look.
"""

from __future__ import annotations

import io
from datetime import timedelta

import pytest

from tests.fixtures_site import serve_site
from tests.users import participant

from .conftest import pages_on
from .helpers import axe_violations

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.slow]

PASSWORD = "a long pass phrase for the admin sweep"

#: The three ways a curator sees the admin: a laptop in either scheme, and a phone.
LAPTOP = {"width": 1366, "height": 900}
VIEWS = {
    "light": {"color_scheme": "light", "viewport": LAPTOP},
    "dark": {"color_scheme": "dark", "viewport": LAPTOP},
    "phone": {"color_scheme": "light", "viewport": {"width": 390, "height": 844}, "is_mobile": True,
              "has_touch": True},
}


@pytest.fixture
def admin_site(demo, private_data_dir, worker_queue, tmp_path):
    """A gunicorn of this test's own, stopped with it, on the session's database and queue.

    The admin's pages cache each model's content type id in the server's processes, and the flush that ends a
    transactional test makes the content types again under new ids: on the session's server, a later test's admin
    save then logs under a stale id (test_curator.py and test_data_terms.py failed that way, IntegrityError on
    django_admin_log, when they ran after this sweep). A server of its own takes its cache with it.
    """
    from django.conf import settings
    from django.db import connection

    from tests.fixtures_worker import database_url

    with serve_site(database_url=database_url(connection.settings_dict), data_dir=private_data_dir,
                    worker_queue=worker_queue, var_dir=settings.VAR_DIR, folder=tmp_path) as site:
        yield site


@pytest.fixture
def admin_pages(chromium_browser, admin_site):
    """``admin_pages(color_scheme="dark", …)``: pages on ``admin_site``, closed after the test."""
    yield from pages_on(chromium_browser, admin_site)


def _curator_world(demo) -> list[str]:
    """The rows the curator's pages show (a shared task, data terms, a reported result, a ledger alert) and the
    pages themselves, as addresses."""
    from django.core.management import call_command
    from django.utils import timezone

    from campaigns.models import Phase
    from catalogue.models import QrelsVersion, ReportedResult, Split, Topic
    from catalogue.services import data_terms_publish
    from submissions.models import LedgerAlert, Submission

    call_command("load_cards", stdout=io.StringIO())
    now = timezone.now()
    task = Split.objects.create(dataset=demo, name="task", kind="test", hidden=True, min_coverage=0, ladder=False)
    phase = Phase.objects.create(split=task, title="Admin sweep task", opens_at=now + timedelta(days=1),
                                 closes_at=now + timedelta(days=5), daily_cap=3, total_cap=9)
    terms = data_terms_publish(dataset=demo, title="Demo licence", text="Research use only.")
    test = demo.splits.get(name="test")
    if not ReportedResult.objects.filter(dataset=demo).exists():
        ReportedResult.objects.create(dataset=demo, split=test, system="Reported BM25", family="lexical",
                                      scores={demo.primary_measure: 0.5}, source="A paper")
    submission = Submission.objects.filter(split=test, status="scored").first()
    version = QrelsVersion.objects.filter(split=test).first()
    topic = Topic.objects.filter(split=test).first()
    alert = LedgerAlert.objects.create(split=test, scope="identity", identity="u1", identity_label="marie",
                                       day=now.date(), bits=9.0, limit=6.0)
    assert submission and version and topic, "the demo lacks a scored submission, a qrels version or a topic"
    return [
        "/admin/",
        "/admin/catalogue/",
        "/admin/catalogue/dataset/",
        "/admin/catalogue/dataset/add/",
        f"/admin/catalogue/dataset/{demo.pk}/change/",
        f"/admin/catalogue/dataset/{demo.pk}/import/",
        "/admin/catalogue/split/",
        f"/admin/catalogue/split/{test.pk}/change/",
        "/admin/catalogue/qrelsversion/",
        f"/admin/catalogue/qrelsversion/{version.pk}/change/",
        "/admin/catalogue/topic/",
        f"/admin/catalogue/topic/{topic.pk}/change/",
        "/admin/catalogue/dataterms/",
        "/admin/catalogue/dataterms/add/",
        f"/admin/catalogue/dataterms/add/?dataset={demo.pk}",
        f"/admin/catalogue/dataterms/{terms.pk}/change/",
        "/admin/campaigns/phase/",
        "/admin/campaigns/phase/add/",
        f"/admin/campaigns/phase/{phase.pk}/change/",
        "/admin/catalogue/reportedresult/",
        "/admin/sandbox/splitsandbox/add/",
        "/admin/submissions/submission/",
        f"/admin/submissions/submission/{submission.pk}/change/",
        "/admin/submissions/release/",
        "/admin/submissions/ledgeralert/",
        f"/admin/submissions/ledgeralert/{alert.pk}/change/",
        "/admin/submissions/releasepolicy/add/",
        f"/submissions/ledger/{test.pk}/",
    ]


def _log_in(page, username: str) -> None:
    page.goto("/admin/login/")  # the site's log-in page (allauth), then back to the admin
    page.locator("#id_login").fill(username)
    page.locator("#id_password").fill(PASSWORD)
    page.locator("main form button[type=submit]").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def _problems(page) -> list[str]:
    return list(page.js_errors) + axe_violations(page)


def test_the_curators_admin_pages_have_no_console_error_and_no_axe_violation(demo, admin_pages, shoot):
    curator = participant("curator", PASSWORD, is_staff=True, is_superuser=True)
    urls = _curator_world(demo)
    # Kept for a look: a dataset with its inlines, a phase with its date and time inputs.
    shots = {url: url.split("/")[3] for url in urls if url.startswith(("/admin/catalogue/dataset/",
                                                                       "/admin/campaigns/phase/"))
             and url.endswith("/change/")}
    problems: dict[str, list[str]] = {}
    for view, options in VIEWS.items():
        page = admin_pages(**options)
        _log_in(page, curator.get_username())
        for url in urls:
            page.js_errors.clear()
            response = page.goto(url)
            found = [f"HTTP {response.status}"] if response.status >= 400 else []
            found += _problems(page)
            if page.locator(".select2-selection").count():  # an autocomplete picker, opened: its search box, results
                page.locator(".select2-selection").first.click()
                page.locator(".select2-results__option").first.wait_for()
                found += [f"(picker open) {p}" for p in _problems(page)]
            if found:
                problems[f"{view} {url}"] = found
                shoot(page, f"admin-sweep-{view}-{len(problems)}", full_page=True)
            if url in shots:
                shoot(page, f"admin-{view}-{shots[url]}", full_page=True)
        # The publish preview: a draft ticked in the dataset list, the action chosen, "Go".
        page.js_errors.clear()
        page.goto("/admin/catalogue/dataset/")
        page.locator(f"input.action-select[value='{demo.pk}']").check()
        page.locator("select[name=action]").select_option("publish_with_preview")
        page.locator("button[name=index]").first.click()
        page.wait_for_load_state()
        found = _problems(page)
        if found:
            problems[f"{view} publish preview"] = found
            shoot(page, f"admin-sweep-{view}-preview", full_page=True)
    n = sum(len(found) for found in problems.values())
    assert problems == {}, f"{n} problems on {len(problems)} pages:\n" + "\n".join(
        f"{where}: {found}" for where, found in problems.items())
