"""An assessor in headless Chromium judges a pool with the keyboard alone: grade keys, next, previous,
skip and undo; every judgment lands in the database with its assessor and time, and the page runs under
the strict CSP without a script error."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group

from assessment.judging import grades_of, judgment_record
from assessment.models import Judgment
from assessment.pools import pool_assign, pool_build
from catalogue.models import Split
from catalogue.services import corpus_set
from tests.assessment.conftest import RUN_A, RUN_B, submit
from tests.users import verified
from tests.waiting import wait_until

from .helpers import SCORING_TIMEOUT_MS, accessibility_problems

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.slow]

expect = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed").expect

PASSWORD = "correct horse battery staple"


@pytest.fixture
def assignment(site, tiny_dataset, alice, bob, django_user_model):
    """carol's assignment: the whole depth-2 pool of the tiny test split (q1: d11 d14 d9, q2: d15 d12, q3: d13 d16)."""
    split = tiny_dataset.splits.get(name="test")
    split.topics.filter(qid="q1").update(text="Can a tenant end the lease early?", category="housing")
    ids = [f"d{i}" for i in range(1, 21)]
    corpus_set(dataset=tiny_dataset, ids=ids, documents=[
        {"_id": d, "title": f"Article {d[1:]}", "text": f"A tenant may end the lease with three months notice ({d})."}
        for d in ids])
    submit(alice, split, RUN_A, "A")
    submit(bob, split, RUN_B, "B")
    carol = verified(django_user_model.objects.create_user("carol", "carol@example.org", PASSWORD))
    carol.groups.add(Group.objects.get_or_create(name="assessors")[0])
    pool = pool_build(split=split, name="Tiny depth-2", method="depth", params={"k": 2})
    (a,) = pool_assign(pool=pool, assessors=[carol], overlap_share=0)
    return a


def docid_shown(page) -> str:
    return page.locator("#doc-h code").inner_text()


def test_an_assessor_judges_with_the_keyboard_alone(browser_page, assignment, shoot):
    page = browser_page
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("carol")
    page.get_by_label("Password").fill(PASSWORD)
    page.keyboard.press("Enter")
    expect(page.locator("header.site")).to_contain_text("carol")

    page.goto("/assessment/")
    expect(page.get_by_role("link", name="Start")).to_be_visible()
    page.get_by_role("link", name="Start").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/assessment/assignments/\d+/$"))
    page.locator("#resume").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#question")).to_have_text("Can a tenant end the lease early?")
    expect(page.locator("#category")).to_contain_text("housing")
    expect(page.locator("#document-text mark").first).to_have_text("tenant")
    assert docid_shown(page) == "d11"
    assert accessibility_problems(page) == []
    shoot(page, "assessor-judging", canonical=True)

    page.keyboard.press("2")  # grade d11, on to the next document not judged yet
    expect(page.locator("#doc-h code")).to_have_text("d14")
    page.keyboard.press("0")
    expect(page.locator("#doc-h code")).to_have_text("d9")
    page.keyboard.press("u")  # take back d14's grade: its page again, without a grade
    expect(page.locator("#doc-h code")).to_have_text("d14")
    expect(page.locator("#current-grade")).to_have_text("Not judged yet.")
    page.keyboard.press("s")  # skip to the next unjudged: d9
    expect(page.locator("#doc-h code")).to_have_text("d9")
    page.keyboard.press("p")
    expect(page.locator("#doc-h code")).to_have_text("d14")
    page.keyboard.press("p")
    expect(page.locator("#doc-h code")).to_have_text("d11")
    expect(page.locator("#current-grade")).to_contain_text("Your grade: 2")
    page.keyboard.press("n")
    expect(page.locator("#doc-h code")).to_have_text("d14")
    page.keyboard.press("3")
    expect(page.locator("#doc-h code")).to_have_text("d9")
    # Typing in the terms box types; it does not grade.
    page.locator("#terms").focus()
    page.keyboard.type("notice 1")
    page.keyboard.press("Enter")
    expect(page.locator("#document-text mark", has_text="notice").first).to_be_visible()
    assert docid_shown(page) == "d9"

    graded = {assignment.items.get(pk=k).docid: g for k, g in grades_of(assignment).items()}
    assert graded == {"d11": 2, "d14": 3}
    rows = Judgment.objects.filter(assessor=assignment.assessor).order_by("pk")
    assert [(j.item.docid, j.grade) for j in rows] == [("d11", 2), ("d14", 0), ("d14", None), ("d14", 3)]
    assert all(j.seconds_taken is not None and 0 <= j.seconds_taken < 120 for j in rows if j.undoes_id is None)
    assert page.js_errors == []


def test_the_curator_reads_the_pool_and_makes_a_qrels_version(browser_page, assignment, staff, shoot,
                                                               celery_worker_process):
    for item, grade in zip(assignment.items.order_by("qid", "position"), (2, 0, 1, 1, 0)):
        judgment_record(assignment=assignment, item=item, grade=grade, seconds=4.0)
    page = browser_page
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(staff.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.keyboard.press("Enter")
    expect(page.locator("header.site")).to_contain_text(staff.username)
    page.goto(f"/assessment/pools/{assignment.pool_id}/")
    expect(page.locator("#pool-size")).to_contain_text("7 documents over 4 queries")
    expect(page.locator("#per-assessor")).to_contain_text("carol")
    shoot(page, "assessment-pool", full_page=True)
    page.get_by_role("link", name="Make a qrels version from this pool").click()
    expect(page.locator("#merge-summary")).to_contain_text("5 judgments added")
    page.get_by_label("Note").fill("depth-2 pool judged by carol")
    # Five new judgments on a hidden split: under its minimum batch, so the curator says why it goes out alone.
    expect(page.locator("#batch-minimum")).to_contain_text("too few to publish")
    page.get_by_label("reason for a small change").fill("the first pool of a new split")
    page.locator("#store-version").click()
    expect(page.locator(".messages")).to_contain_text("Made tiny/test qrels v2")
    assert page.js_errors == []
    # The worker rescores both entries on v2, then the leaderboard switches (and the test ends with no task
    # still writing, so the next test starts on a clean database).
    def switched() -> bool:
        split = Split.objects.select_related("current_qrels").get(pk=assignment.pool.split_id)
        return split.current_qrels.version == 2 and split.pending_qrels_id is None

    wait_until(switched, timeout=SCORING_TIMEOUT_MS / 1000, what="the split on qrels v2, rescored",
               worker=celery_worker_process, interval=0.25)
    page.goto("/d/tiny/?split=test")
    expect(page.locator("#qrels-history")).to_contain_text("depth-2 pool judged by carol")
