"""A curator in headless Chromium: imports a dataset's files through the admin's import form,
adds a second qrels version, publishes it with the admin action, and watches the worker rescore
the split's submissions until the leaderboard shows the new numbers.

The files are a wider copy of the importer tests' TREC release (tests/data/import/trec_wide): its
six topics extended to sixteen, fifteen of them judged, twenty documents, and a second qrels file that
judges four more documents relevant (on topics 2 to 5, as in the importer tests' release). The split
is hidden, where the Ladder's noisy margin (#37) releases a first run only when it improves on an
empty run on net + Laplace noise ≥ 8 topics: over the 5 judged topics of the narrower release no run
is released, so no score cell would ever show.
"""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import pytest

from tests.users import participant

from .helpers import SCORING_TIMEOUT_MS, accessibility_problems

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.slow]

expect = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed").expect

TREC = Path(__file__).resolve().parents[1] / "data" / "import" / "trec_wide"
PASSWORD = "correct horse battery staple"  # the staff fixture's (tests/conftest.py)


def _other(q: int) -> str:
    """The document judged non-relevant on topic ``q`` in the first judgments: doc1q up to topic 9, then wrapping."""
    return f"doc{q + 10}" if q <= 10 else f"doc{q - 10}"


#: Ranks doc1x then docx (then an unjudged document) for topic x, on the 15 judged topics: under the first
#: judgments doc12…doc15 are judged 0, under the second they are relevant, so the scores move when the second
#: version is published. Every topic scores (net 15 over an empty run): the Ladder releases it.
RUN = "".join(f"{q} Q0 {_other(q)} 1 2.0 mine\n{q} Q0 doc{q} 2 1.0 mine\n"
              f"{q} Q0 {'doc19' if q == 10 else 'doc20'} 3 0.5 mine\n" for q in range(1, 16))


@pytest.fixture
def empty_dataset(site):
    """A dataset card without files yet, as a curator leaves it after "Add dataset"."""
    from catalogue.models import Benchmark, Dataset

    benchmark = Benchmark.objects.create(slug="statutes", name="Statutes")
    return Dataset.objects.create(
        benchmark=benchmark, slug="statutes-trec", name="Statutes (TREC release)", language="fr",
        docid_example="doc1", measures=["MAP@10", "nDCG@10", "R@10"], primary_measure="MAP@10", is_published=True,
    )


def admin_log_in(page, username: str) -> None:
    page.goto("/admin/login/")  # the site's log-in page (allauth), then back to the admin
    page.locator("#id_login").fill(username)
    page.locator("#id_password").fill(PASSWORD)
    page.locator("main form button[type=submit]").click()
    expect(page.locator("#site-name")).to_be_visible()


def import_trec(page, dataset, *, qrels: str, publish: bool) -> None:
    page.goto(f"/admin/catalogue/dataset/{dataset.pk}/change/")
    page.get_by_role("link", name="Import files").click()
    page.wait_for_url(f"**/admin/catalogue/dataset/{dataset.pk}/import/")
    page.locator("#id_format").select_option("trec")
    page.locator("#id_split").fill("test")
    page.locator("#id_topics").set_input_files(str(TREC / "topics.tsv"))
    page.locator("#id_qrels").set_input_files(str(TREC / qrels))
    page.locator("#id_corpus_ids").set_input_files(str(TREC / "ids.txt"))
    page.locator("#id_hidden").check()
    if publish:
        page.locator("#id_publish").check()
    page.locator("#id_note").fill(f"from {qrels}")
    page.locator("input[type=submit][value=Import]").click()
    expect(page.locator("#import-report")).to_be_visible()


def reload_until(page, selector: str, text: str, *, timeout_ms: int) -> None:
    """Reload the page until ``selector`` contains ``text`` (a scored page does not poll by itself)."""
    deadline = time.monotonic() + timeout_ms / 1000
    while text not in " ".join(page.locator(selector).all_inner_texts()):
        assert time.monotonic() < deadline, f"{selector} never showed {text!r} on {page.url}"
        page.wait_for_timeout(500)
        page.reload()


def primary_score(page, dataset, submission_id: int) -> str:
    page.goto(f"/d/{dataset.slug}/")
    row = page.locator("table.lb tbody tr", has=page.locator(f"a[href='/submissions/{submission_id}/']"))
    return row.locator("td.primary").inner_text().strip()


def test_a_curator_imports_a_dataset_publishes_new_qrels_and_sees_the_rescored_leaderboard(
    empty_dataset, staff, django_user_model, browser_page, shoot, celery_worker_process
):
    from catalogue.models import QrelsVersion
    from submissions.services import submission_create

    from .runs import upload_of

    page = browser_page
    dataset = empty_dataset
    admin_log_in(page, staff.get_username())

    # Import the release: topics, corpus ids and the first judgments (published, being the first).
    import_trec(page, dataset, qrels="test.qrels", publish=False)
    report = page.locator("#import-report")
    expect(report.locator("h2")).to_have_text("Imported")
    expect(report).to_contain_text("for 15 topics")
    assert "doc11" not in page.content(), "the import report must not show judgments"
    shoot(page, "admin-import", canonical=True)
    split = dataset.splits.get(name="test")
    assert split.hidden and split.current_qrels.version == 1

    # A participant's run, scored by the worker on version 1. It ranks 15 of the 16 topics (94%: the hidden split's
    # coverage rule asks for 90%).
    marie = participant("marie", PASSWORD)
    submission = submission_create(
        user=marie, split=split, upload=upload_of(RUN.encode(), "mine.run"),
        metadata={"system_name": "Reference first", "family": "lexical", "visibility": "public"},
    )
    page.goto(f"/submissions/{submission.pk}/")
    expect(page.locator("#status")).to_have_attribute("data-status", "scored", timeout=SCORING_TIMEOUT_MS)
    before = primary_score(page, dataset, submission.pk)

    # Different judgments: a second version, not published yet, so nothing changes.
    import_trec(page, dataset, qrels="test_v2.qrels", publish=False)
    expect(page.locator("#import-report")).to_contain_text(re.compile("version 2|v2", re.I))
    split.refresh_from_db()
    assert split.current_qrels.version == 1
    assert primary_score(page, dataset, submission.pk) == before

    # Publish version 2 with the admin action, the worker paused (SIGSTOP) so the rescoring in
    # progress can be looked at: until it is done, the site keeps showing version 1's numbers.
    version = QrelsVersion.objects.get(split=split, version=2)
    page.goto("/admin/catalogue/qrelsversion/")
    page.locator(f"input.action-select[value='{version.pk}']").check()
    page.locator("select[name=action]").select_option("publish")
    celery_worker_process.kill(signal.SIGSTOP)
    try:
        page.locator("button[name=index], input[name=index]").first.click()
        # Five regraded judgments on a hidden split, four of them crossing the relevance threshold: fewer than its
        # minimum batch, so the action refuses, writes nothing, and asks why it cannot wait; the reason publishes it.
        expect(page.locator(".messagelist")).to_contain_text("changes 4 judgments against the current v1")
        shoot(page, "admin-small-change")
        page.locator("#id_small_change_reason").fill("the release's grades were off by one")
        page.locator("#small-change-form input[type=submit]").click()
        expect(page.locator(".messagelist")).to_contain_text("published; 1 submission queued for rescoring")
        shoot(page, "admin-publish")
        page.goto(f"/admin/catalogue/split/{split.pk}/change/")
        shoot(page, "admin-rescoring")
        page.goto(f"/submissions/{submission.pk}/")
        assert "qrels version 2" not in page.locator("body").inner_text()
        shoot(page, "submission-rescoring")
    finally:
        celery_worker_process.kill(signal.SIGCONT)

    # The worker rescores; the submission's scores and the leaderboard move to version 2 without
    # anyone touching the submission (whether the split switches at once or when the last
    # rescoring is stored is the service's business; the end state is the same).
    page.goto(f"/submissions/{submission.pk}/")
    reload_until(page, "section.scores caption", "qrels version 2", timeout_ms=SCORING_TIMEOUT_MS)
    expect(page.locator("#status")).to_have_attribute("data-status", "scored")
    after = primary_score(page, dataset, submission.pk)
    assert after != before, f"the leaderboard still shows {before} after the rescoring"
    assert accessibility_problems(page) == []
    shoot(page, "leaderboard-rescored")
