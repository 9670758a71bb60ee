"""A participant in headless Chromium: sign up, log in, create an API token, upload a run through
the form, watch the status page reach "scored" by itself, find the entry on the leaderboard,
compare it with a baseline, and read the line-numbered reasons of a failed upload.

Scoring happens in the real Celery worker process; the page only polls.
"""

from __future__ import annotations

import re
import signal

import pytest

from tests.users import participant

from .helpers import SCORING_TIMEOUT_MS, accessibility_problems
from .runs import fused_demo_run

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.slow]

expect = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed").expect

PASSWORD = "a long pass phrase for the tests"


def log_in(page, username: str, password: str = PASSWORD) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.locator("main form button[type=submit]").click()
    expect(page.locator("header.site")).to_contain_text(username)


def upload_through_the_form(page, dataset, *, content: bytes, filename: str, system_name: str) -> None:
    """From the dataset page: "Upload a run", choose the file, describe the system, submit."""
    page.goto(f"/d/{dataset.slug}/")
    page.get_by_role("link", name="Upload a run").first.click()
    page.wait_for_url(f"**/submissions/new/{dataset.slug}/**")
    page.locator("input[name=run]").set_input_files(
        files=[{"name": filename, "mimeType": "text/plain", "buffer": content}]
    )
    page.get_by_label("System name").fill(system_name)
    page.locator("select[name=family]").select_option("hybrid")
    page.locator("input[name=visibility][value=public]").check()


def test_a_participant_signs_up_uploads_a_run_and_watches_it_get_scored(
    demo, browser_page, shoot, celery_worker_process
):
    page = browser_page

    # Sign up (which logs in), log out, log in again.
    page.goto("/")
    page.get_by_role("link", name="Sign up").click()
    page.wait_for_url("**/accounts/signup/")
    assert accessibility_problems(page) == []
    page.get_by_label("Username").fill("marie")
    page.get_by_label("Email").fill("marie@example.org")
    page.locator("input[name=display_name]").fill("Marie Curie-Sklodowska")
    page.locator("input[name=password1]").fill(PASSWORD)
    page.locator("input[name=password2]").fill(PASSWORD)
    page.get_by_role("button", name="Sign Up").click()
    page.wait_for_url("**/accounts/profile/")
    expect(page.locator(".messages")).to_contain_text("signed in as marie")
    expect(page.locator(".messages")).to_contain_text("marie@example.org")  # the verification mail went there
    expect(page.locator("main")).to_contain_text("not verified yet")
    # Clicking the mailed link (the mail is in gunicorn's process): hidden splits take uploads from verified addresses.
    from allauth.account.models import EmailAddress

    assert EmailAddress.objects.filter(email="marie@example.org").update(verified=True) == 1
    page.get_by_role("button", name="Log out").first.click()
    expect(page.get_by_role("link", name="Log in")).to_be_visible()
    log_in(page, "marie")

    # The profile, one click away; a token whose key is shown once.
    page.locator("header.site").get_by_role("link", name="marie").click()
    page.wait_for_url("**/accounts/profile/")
    page.locator("input[name=name]").fill("laptop")
    page.get_by_role("button", name="Create a token").click()
    key = page.locator(".new-key code.key").inner_text().strip()
    assert re.fullmatch(r"lxb_[-\w]{30,}", key), key
    assert accessibility_problems(page) == []
    shoot(page, "profile-token")
    page.goto("/accounts/profile/")
    assert key not in page.content(), "the key must be shown only once"
    expect(page.locator("table.tokens")).to_contain_text("laptop")
    expect(page.locator("table.tokens")).to_contain_text(key[:12])

    # Upload through the form; the status page follows the worker without a manual reload.
    upload_through_the_form(
        page, demo, content=fused_demo_run("test"), filename="rrf-bm25-tfidf.run", system_name="RRF(BM25, TF-IDF)"
    )
    page.get_by_label("Description").fill("Reciprocal rank fusion (k=60) of the BM25 and TF-IDF baselines.")
    assert accessibility_problems(page) == []
    shoot(page, "upload", canonical=True)
    # The worker is paused (SIGSTOP) until the page has shown "queued" and polled once, so the
    # test sees the page follow the worker whatever the worker's speed.
    celery_worker_process.kill(signal.SIGSTOP)
    try:
        page.get_by_role("button", name="Upload and score").click()
        page.wait_for_url(re.compile(r".*/submissions/\d+/$"))
        submission_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
        expect(page.locator(".messages")).to_contain_text("queued for scoring")
        status = page.locator("#status")
        expect(status).to_have_attribute("data-status", "queued")
        # The page asks for its status by itself, and asks the server to hold the answer (static/js/status.js).
        with page.expect_request(lambda request: f"/submissions/{submission_id}/status.json?wait=" in request.url):
            pass
        shoot(page, "submission-queued")
    finally:
        celery_worker_process.kill(signal.SIGCONT)
    expect(status).to_have_attribute("data-status", "scored", timeout=SCORING_TIMEOUT_MS)
    expect(page.locator("[data-status-text]")).to_have_text(re.compile("scored", re.I))
    expect(page.locator("section.scores")).to_contain_text(demo.primary_measure)
    primary = page.locator("section.scores td").first.inner_text()
    assert re.fullmatch(r"\d+(\.\d+)?", primary.strip()), primary
    shoot(page, "submission-scored", canonical=True)

    # The entry on the leaderboard, linked to its page.
    page.get_by_role("navigation", name="Breadcrumb").get_by_role("link", name=re.compile(demo.name)).click()
    row = page.locator("table.lb tbody tr", has=page.locator(f"a[href='/submissions/{submission_id}/']"))
    expect(row).to_have_count(1)
    expect(row).to_contain_text("RRF(BM25, TF-IDF)")
    expect(row).to_contain_text("Marie Curie-Sklodowska")
    expect(row.locator("td.rank")).to_have_text(re.compile(r"\d+"))

    assert accessibility_problems(page) == []

    # Compare the new entry with the BM25 baseline.
    page.locator(f"input[name=ids][value='{submission_id}']").check()
    bm25 = page.locator("table.lb tbody tr", has_text="BM25 (").locator("input[name=ids]")
    bm25.check()
    page.get_by_role("button", name="Compare the checked entries").click()
    page.wait_for_url("**/submissions/compare/**")
    expect(page.locator("h1")).to_have_text("Compare submissions")
    pair = page.locator("section.compare-pair")
    expect(pair).to_have_count(1)
    expect(pair).to_contain_text("BM25")
    # The test split is hidden: the primary measure only, its values on the grid and the p-value as a band
    # (submissions/disclosure.py); a public split shows every measure with its p-values' digits.
    measures = pair.locator("table").first.locator("tbody tr")
    expect(measures).to_have_count(1)
    expect(measures.locator("th")).to_have_text(demo.primary_measure)
    expect(measures.locator("td").last).to_have_text(re.compile(r"p [<≥] 0\.0[15]"))
    assert accessibility_problems(page) == []
    shoot(page, "compare", canonical=True)
    assert page.js_errors == []


def _run_with_a_duplicate_far_down(content: bytes, *, at_line: int) -> bytes:
    """The fused run with one (query, document) pair repeated after the lines the upload form checks."""
    lines = content.decode().splitlines(keepends=True)
    qid, _, docid = lines[at_line - 2].split()[:3]
    repeated = f"{qid} Q0 {docid} 999 -1.0 rrf\n"
    return "".join(lines[: at_line - 1] + [repeated] + lines[at_line - 1:]).encode()


def test_a_participant_sees_the_line_and_the_fix_when_an_upload_fails(demo, browser_page, django_user_model, shoot):
    participant("yannick", PASSWORD)
    page = browser_page
    log_in(page, "yannick")

    # Refused at once: the form names the line.
    bad_early = b"1 Q0 1 1 2.5 run\n1 Q0 2 two 1.5 run\n"
    upload_through_the_form(page, demo, content=bad_early, filename="broken.run", system_name="Broken")
    page.get_by_role("button", name="Upload and score").click()
    refusal = page.locator(".errors[role=alert]")
    expect(refusal).to_be_visible()
    expect(refusal).to_contain_text(re.compile(r"line 2\b"))
    assert "/submissions/new/" in page.url
    shoot(page, "upload-refused")

    # Fails in the worker (past the lines checked at upload): the status page lists the line.
    content = _run_with_a_duplicate_far_down(fused_demo_run("test"), at_line=500)
    upload_through_the_form(page, demo, content=content, filename="duplicate.run", system_name="Duplicate")
    page.get_by_role("button", name="Upload and score").click()
    page.wait_for_url(re.compile(r".*/submissions/\d+/$"))
    expect(page.locator("#status")).to_have_attribute("data-status", "failed", timeout=SCORING_TIMEOUT_MS)
    failure = page.locator("section.failure")
    expect(failure).to_be_visible()
    expect(failure.locator("tbody tr").first.locator("td").first).to_have_text("500")
    expect(failure).to_contain_text(re.compile("twice|duplicate", re.I))
    expect(page.get_by_role("button", name="Resubmit")).to_be_visible()
    shoot(page, "submission-failed")
