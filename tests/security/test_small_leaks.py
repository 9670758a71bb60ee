"""The smaller leaks, tried against the live site as a visitor and as another participant.

* an anonymous entry names no paper or code URL anywhere (page, leaderboard,
  API, exports) — only its owner sees them;
* another person's failed public run shows no reason (which quotes the file)
  on its page, in status.json or in the API;
* the compare page prints no top-10 overlap on a hidden split;
* the CSV export writes no cell a spreadsheet would run as a formula.
"""

from __future__ import annotations

import csv
import io
import re

import pytest

from .conftest import submit

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MARK = "zq7731"
#: What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def test_an_anonymous_entry_names_no_paper_or_code_url(secret, person, visitor):
    alice, bob = person("alice"), person("bob")
    entry_id, answer = submit(alice, secret, secret.run_text(), visibility="anonymous", system_name="Anon system",
                              team=f"Team {MARK}", paper_url=f"https://example.org/paper-{MARK}",
                              code_url=f"https://example.org/code-{MARK}")
    assert answer["status"] == "scored", answer
    assert f"paper-{MARK}" in alice.get(f"/submissions/{entry_id}/").body  # its owner still sees the links
    seen = {
        "page (visitor)": visitor.get(f"/submissions/{entry_id}/").body,
        "page (another participant)": bob.get(f"/submissions/{entry_id}/").body,
        "leaderboard": visitor.get(f"/d/{secret.slug}/?split=test").body,
        "API leaderboard": visitor.get(f"/api/v1/datasets/{secret.slug}/leaderboard?split=test").body,
        "API submission": visitor.get(f"/api/v1/submissions/{entry_id}/").body,
        **{f"export {fmt}": visitor.get(f"/d/{secret.slug}/export.{fmt}?split=test").body
           for fmt in ("csv", "json", "tex")},
    }
    assert "Anon system" in seen["leaderboard"]
    leaks = [where for where, body in seen.items() if MARK in body]
    assert not leaks, f"the anonymous entry's paper, code or team shows on: {leaks}"


def test_another_persons_failed_run_shows_no_reason(secret, person, visitor):
    alice, bob = person("alice"), person("bob")
    # A duplicate (query, document) pair on the last line: past the upload's quick look, found by the worker.
    content = secret.run_text() + f"q03 Q0 {secret.run['q03'][4]} 1 99.5 attacker\n".encode()
    failed_id, answer = submit(alice, secret, content, visibility="public")
    assert answer["status"] == "failed", answer
    assert "appears twice" in str(answer["error"])  # its owner is told what to fix
    assert "appears twice" in alice.get(f"/submissions/{failed_id}/").body
    for who, client in (("a visitor", visitor), ("another participant", bob)):
        for what in (f"/submissions/{failed_id}/", f"/submissions/{failed_id}/status.json",
                     f"/api/v1/submissions/{failed_id}/"):
            answer = client.get(what)
            assert answer.status == 200, (who, what, answer.status)
            assert "appears twice" not in answer.body and "2001" not in answer.body, \
                f"{what} shows {who} why alice's run failed: {answer.body[:500]}"


def test_the_compare_page_shows_no_overlap_on_a_hidden_split(secret, person, visitor):
    alice, bob = person("alice"), person("bob")  # each one's first run: both released by the Ladder
    first, _ = submit(alice, secret, secret.run_text(), visibility="public", system_name="one")
    reordered = {q: docs[5:] + docs[:5] for q, docs in secret.run.items()}
    second, _ = submit(bob, secret, secret.run_text(overrides=reordered), visibility="public", system_name="two")
    page = visitor.get(f"/submissions/compare/?ids={first},{second}")
    assert page.status == 200 and f"#{second}" in page.body
    assert "overlap" not in page.body.lower() and "jaccard" not in page.body.lower()


def test_the_csv_export_holds_no_formula(secret, person, visitor):
    alice, bob = person("alice"), person("bob")
    submit(alice, secret, secret.run_text(), visibility="public", system_name='=HYPERLINK("http://evil.example","x")',
           team="@SUM(1+1)")
    submit(bob, secret, secret.run_text(), visibility="public", system_name="+cmd|' /C calc'!A0", team="-2+3")
    # A spreadsheet in a ;-separated locale splits this cell at the ; and runs the rest; spaces and zero-width
    # characters before a formula are dropped by some.
    submit(person("carol"), secret, secret.run_text(), visibility="public",
           system_name='x;=HYPERLINK("http://evil.example","x")', team=" \u200b@SUM(1+1)")
    answer = visitor.get(f"/d/{secret.slug}/export.csv?split=test")
    assert answer.status == 200
    rows = list(csv.DictReader(io.StringIO(answer.body)))
    assert {r["system"].lstrip("'") for r in rows} >= {'=HYPERLINK("http://evil.example","x")', "+cmd|' /C calc'!A0"}
    formulas = [(r["system"], field, r[field]) for r in rows for field in r
                if (r[field] or "").startswith(FORMULA_STARTS)]
    assert not formulas, f"cells a spreadsheet runs as formulas: {formulas}"
    pieces = [(field, piece) for r in rows for field in r for piece in re.split(r"[;,\t|\r\n]", r[field] or "")
              if piece.lstrip(" \u00a0\u200b\u200c\u200d\u2060\ufeff").startswith(FORMULA_STARTS)]
    assert not pieces, f"cells a spreadsheet splitting on ; , tab or | runs as formulas: {pieces}"
    assert all(line.startswith('"') for line in answer.body.splitlines())  # every cell quoted


def test_an_unpublished_datasets_entries_are_not_reachable_by_id(secret, person, visitor):
    """A curator who unpublishes a dataset takes its entries off the site: its pages answer 404, and so must its
    entries' pages, status, API records, the compare page and the fusion form's ``?split=`` (ids are guessable)."""
    from catalogue.models import Dataset

    alice, bob = person("alice"), person("bob")
    entry_id, answer = submit(alice, secret, secret.run_text(), visibility="public", system_name=f"Entry {MARK}")
    assert answer["status"] == "scored", answer
    other_id, _ = submit(bob, secret, secret.run_text(), visibility="public", system_name="Bob's entry")
    assert visitor.get(f"/submissions/{entry_id}/").status == 200  # published: everyone's
    Dataset.objects.filter(slug=secret.slug).update(is_published=False)
    reached = []
    for who, client in (("a visitor", visitor), ("another participant", bob)):
        for path in (f"/submissions/{entry_id}/", f"/submissions/{entry_id}/status.json",
                     f"/api/v1/submissions/{entry_id}/", f"/submissions/compare/?ids={entry_id},{other_id}",
                     f"/api/v1/compare/?submissions={entry_id},{other_id}"):
            got = client.get(path)
            if got.status == 200 or MARK in got.body:
                reached.append((who, path, got.status))
    fusion_form = bob.get(f"/submissions/fusion/?split={secret.split.pk}")
    if "Secret" in fusion_form.body or MARK in fusion_form.body:
        reached.append(("another participant", "fusion form", fusion_form.status))
    assert not reached, f"an unpublished dataset's entry is reachable: {reached}"
    assert alice.get(f"/submissions/{entry_id}/").status == 200  # its owner keeps it (nothing uploaded is lost)
