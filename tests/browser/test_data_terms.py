"""Data terms in headless Chromium: a curator puts terms on the demo dataset in the admin; a participant who
tries to download one of its files is sent to the terms, accepts version 1 and gets the file; the curator adds
version 2 and the participant is asked again before the next download."""

from __future__ import annotations

import gzip
import re

import pytest

from accounts.models import TermsAcceptance
from tests.users import PASSWORD, participant

from .helpers import accessibility_problems, axe_violations

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.slow]

expect = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed").expect

TOPICS = re.compile(r"^topics-test\.tsv\.gz$")


def log_in(page, username: str) -> None:
    page.goto("/accounts/login/")
    page.locator("#id_login").fill(username)
    page.locator("#id_password").fill(PASSWORD)
    page.locator("main form button[type=submit]").click()
    expect(page.locator("header.site")).to_contain_text(username)


def curator_publishes(page, dataset, text: str) -> None:
    """The admin's "Add data terms version" form: the dataset, a title, the text; the version is numbered."""
    page.goto(f"/admin/catalogue/dataterms/add/?dataset={dataset.pk}")
    page.locator("#id_title").fill("Demo licence")
    page.locator("#id_text").fill(text)
    page.locator("input[name=_save]").click()
    expect(page.locator(".messagelist")).to_contain_text("is in force")


def test_a_participant_accepts_the_terms_before_a_download_and_again_after_a_new_version(
        demo, browser_page, page_factory, staff, tmp_path, shoot):
    curator = page_factory()
    log_in(curator, staff.username)
    curator_publishes(curator, demo, "Research use only.\n\nDo not redistribute the corpus.")

    participant("marie")
    page = browser_page
    log_in(page, "marie")
    page.goto(f"/d/{demo.slug}/")
    expect(page.locator("#data-terms-note")).to_contain_text("Demo licence, version 1")
    page.get_by_role("link", name=TOPICS).click()

    # Sent to the terms, with the text and the button for this version.
    page.wait_for_url(f"**/d/{demo.slug}/terms/?next=*")
    expect(page.locator("#terms-text")).to_contain_text("Do not redistribute the corpus.")
    assert accessibility_problems(page) == []
    assert axe_violations(page) == []
    shoot(page, "data-terms")
    with page.expect_download() as download_info:
        page.get_by_role("button", name="I accept version 1").click()
    download = download_info.value
    assert download.suggested_filename == f"{demo.slug}-topics-test.tsv.gz"
    path = tmp_path / download.suggested_filename
    download.save_as(path)
    first = gzip.decompress(path.read_bytes()).decode().splitlines()[0]
    assert first.split("\t")[0] and len(first.split("\t")) >= 2  # qid, question
    assert list(TermsAcceptance.objects.values_list("username", "version")) == [("marie", 1)]

    # Accepted: the next download goes straight through.
    page.goto(f"/d/{demo.slug}/")
    with page.expect_download():
        page.get_by_role("link", name=TOPICS).click()

    # A new version: asked again, told why.
    curator_publishes(curator, demo, "Research use only.\n\nCite the dataset in every paper.")
    page.goto(f"/d/{demo.slug}/")
    page.get_by_role("link", name=TOPICS).click()
    page.wait_for_url(f"**/d/{demo.slug}/terms/?next=*")
    expect(page.locator("main")).to_contain_text("They changed since you accepted version 1")
    expect(page.locator("#terms-text")).to_contain_text("Cite the dataset in every paper.")
    expect(page.get_by_role("link", name="Version 1")).to_be_visible()  # the old text stays readable
    with page.expect_download():
        page.get_by_role("button", name="I accept version 2").click()
    assert sorted(TermsAcceptance.objects.values_list("username", "version")) == [("marie", 1), ("marie", 2)]
    assert page.js_errors == []
