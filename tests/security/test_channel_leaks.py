"""Channels of a hidden split beyond the means: significance on other measures, compare's p-values, the power
section, the qrels history, classification's first upload.

Through the real services and pages (Django's test client) on the analysis dataset of
``tests/analysis/conftest.py``: a hidden ``test`` split (Ladder on, 24 topics) and a public ``dev`` split; its
measures are R@10 (primary), MAP@10 and nDCG@10.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.analysis import conftest as analysis
from tests.users import verified

analysis_dataset = analysis.analysis_dataset
scored = analysis.scored
pytestmark = [pytest.mark.django_db, pytest.mark.own_cache, pytest.mark.private_storage]


def _board(client, split: str, query: str = "") -> str:
    return client.get(reverse("leaderboard:dataset", args=["anal"]) + f"?split={split}{query}").content.decode()


def test_sig_on_a_hidden_split_marks_the_primary_measure_only(client, scored, alice, bob):
    """``?sig=`` chose any of the measures: one more bit per pair on numbers the Ladder never judged."""
    scored("test", alice, "perfect", name="alice-perfect")
    scored("test", bob, "shifted", name="bob-shifted")
    for measure in ("MAP@10", "nDCG@10"):
        html = _board(client, "test", f"&sig={measure}")
        assert "sig-mark" in html
        assert f"Significance on {measure}" not in html, f"markers on {measure} shown on a hidden split"
        assert "Significance on R@10" in html
        assert f"sig={measure}" not in html.replace(f"&amp;sig={measure}", ""), "the switcher offers other measures"
    # The public split keeps every measure.
    scored("dev", alice, "perfect", name="dev-perfect")
    scored("dev", bob, "shifted", name="dev-shifted")
    assert "Significance on MAP@10" in _board(client, "dev", "&sig=MAP@10")


def test_the_boards_markers_on_a_hidden_split_carry_no_p_value_to_the_page(client, scored, alice, bob):
    """The markers' p-values were in each row's context, the template alone deciding not to print them."""
    scored("test", alice, "perfect", name="alice-perfect")
    scored("test", bob, "shifted", name="bob-shifted")
    response = client.get(reverse("leaderboard:dataset", args=["anal"]) + "?split=test")
    rows = [row for row in response.context["rows"] if row.extra.get("sig")]
    assert rows and response.context["sig_p_values"] is False
    for row in rows:
        sig = row.extra["sig"]
        for test in (sig["tier_test"], sig["leader"], sig["baseline"]):
            assert test is None or ("p" not in test and "p_adjusted" not in test), test
    assert "Bonferroni-adjusted" not in response.content.decode()
    # The public split shows them.
    scored("dev", alice, "perfect", name="dev-perfect")
    scored("dev", bob, "shifted", name="dev-shifted")
    response = client.get(reverse("leaderboard:dataset", args=["anal"]) + "?split=dev")
    assert response.context["sig_p_values"] is True and "Bonferroni-adjusted" in response.content.decode()


def test_the_progress_list_of_a_hidden_split_prints_its_values_at_the_grids_precision(client, scored, alice, bob):
    """The list under the progress chart printed "84.00" where the board printed "84": digits never released."""
    scored("test", alice, "perfect", name="alice-perfect")
    scored("test", bob, "shifted", name="bob-shifted")
    html = _board(client, "test")
    listed = re.search(r'<ol class="progress-list">(.*?)</ol>', html, re.S)
    assert listed is not None, "no progress list on the board"
    assert not re.search(r"\d\.\d\d\b", listed.group(1)), listed.group(1)


def test_compare_on_a_hidden_split_gives_bands_on_the_primary_measure_not_p_values(client, scored, alice, bob):
    """Compare gave randomization and t-test p-values (2 significant digits) on any measure of two released runs.

    The t-test's p carries Σd² of the per-query differences, an equation the means do not give; a second
    measure is a second equation on the same per-query values. Now: the primary measure, as a band.
    """
    from rest_framework.test import APIClient

    a = scored("test", alice, "perfect")
    b = scored("test", bob, "shifted")
    api = APIClient()
    for measure in ("MAP@10", "nDCG@10"):
        response = api.get(reverse("api:compare"), {"submissions": f"{a.pk},{b.pk}", "measure": measure})
        assert response.status_code == 403, f"compare on {measure} answered {response.status_code}: {response.content}"
        assert "R@10" in response.json()["error"]["message"]  # names the measure it may compare on
    body = api.get(reverse("api:compare"), {"submissions": f"{a.pk},{b.pk}"}).json()
    assert body["measure"] == "R@10"
    assert body["p_randomization"] is None and body["p_ttest"] is None, "p-value digits on a hidden split"
    assert body["p_band"] in ("p < 0.01", "p < 0.05", "p ≥ 0.05")
    html = client.get(reverse("participants:compare"), {"ids": f"{a.pk},{b.pk}", "measure": "MAP@10"}).content.decode()
    rows = re.findall(r'<th scope="row">([^<]+)</th>', html)
    assert rows == ["R@10"], f"compare rows on a hidden split: {rows}"
    assert "t-test" not in html and not re.search(r"<td class=\"num\">[<>]? ?0\.\d", html), "p-values on the page"
    assert body["p_band"] in html


def test_compare_on_a_hidden_split_shows_one_band_per_pair_whatever_else_is_on_the_page(client, scored, alice, bob,
                                                                                         django_user_model):
    """A Holm-adjusted band depends on how many entries share the page: comparing the same pair beside 0-4
    fillers tested its p-value against 0.05/m and 0.01/m for each m (about 3 bits instead of one, for free).
    On a hidden split each pair shows the band of its own randomization test, and nothing that moves with m.
    """
    a = scored("test", alice, "perfect")
    b = scored("test", bob, "shifted")
    # Each filler from an identity of its own: its first run is released (the Ladder would hold back a second). Each
    # scores above 0 on all 24 topics, a clear improvement over an empty run for the noisy margin (a random run scores
    # on about half of them, which the margin releases or not by its noise), and each stands at another distance from
    # the reference (the same values, under it on 5 topics, under it on 18): p-values that a page-wide adjustment
    # would order differently from the pair's own.
    fillers = [scored("test", verified(django_user_model.objects.create_user(f"filler{n}", f"f{n}@example.org",
                                                                             "correct horse battery staple")),
                      kind, name=f"filler {n}", tag=f"filler {n}") for n, kind in enumerate(("perfect", "shifted",
                                                                                             "late"))]
    pages = []
    for extra in (0, 3):
        ids = ",".join(str(s.pk) for s in [a, b, *fillers[:extra]])
        html = client.get(reverse("participants:compare"), {"ids": ids}).content.decode()
        assert "Holm" not in html, "a multiplicity-adjusted band on a hidden split moves with the entries shown"
        section = html.split(f'id="pair-{b.pk}"', 1)[1].split("</section>", 1)[0]
        pages.append(re.sub(r"\s+", " ", section))
    assert pages[0] == pages[1], "the pair's row changed when other entries were added to the page"


def _power(html: str) -> str:
    found = re.search(r'<p class="power">(.*?)</p>', html, flags=re.S)
    return found.group(1) if found else ""


def test_the_power_section_of_a_hidden_split_does_not_move_with_participants_entries(client, scored, alice, bob):
    """The power section's variance came from every released entry: each new one moved it (≈0.9 bit per entry).

    On a hidden split it comes from the baselines alone: a participant's released entry changes nothing of it.
    """
    scored("test", alice, "perfect", is_baseline=True, name="base-perfect")
    scored("test", alice, "random", seed=2, is_baseline=True, name="base-random")
    before = _power(_board(client, "test"))
    assert "smallest difference" in before
    for seed, kind in ((5, "random"), (0, "shifted")):
        scored("test", bob, kind, seed=seed, name=f"bob-{kind}", tag=str(seed))
        after = _power(_board(client, "test"))
        assert after == before, f"the power section moved with a participant's entry:\n{before}\n{after}"


def test_a_new_qrels_version_on_a_hidden_split_shows_no_before_and_after(client, scored, alice, bob, analysis_dataset):
    """A version that adds one judgment showed, per entry, its score on both versions, and on the dataset page
    the entries that moved: their difference told the topic's relevant count and which public runs hold the
    new document. A hidden split now shows counts, and each entry's current score only."""
    from catalogue.services import qrels_version_add
    from submissions.services import qrels_version_publish_and_rescore, submission_rescore_on

    split = analysis_dataset.splits.get(name="test")
    a = scored("test", alice, "perfect", name="alice-perfect")
    b = scored("test", bob, "shifted", name="bob-shifted")
    v1 = split.current_qrels
    # One judgment more: a document of topic 0 that neither run retrieves becomes relevant. Each run's R@10 drops
    # by (1 − 1/2) / 24: before/after values say topic 0 had one relevant document and neither run holds the new.
    qrels = {analysis.qid(i): {d: 1 for d in analysis.relevant_docs(i)} for i in range(analysis.N_TOPICS)}
    others = [f"doc{d}" for d in range(1, analysis.N_DOCS + 1) if f"doc{d}" not in analysis.relevant_docs(0)]
    qrels[analysis.qid(0)][others[40]] = 1
    v2, _ = qrels_version_add(split=split, qrels=qrels, note="one more")
    # A one-judgment change is refused unless a curator says why (test_qrels_batch_leak.py); when one does,
    # the pages still show no before/after.
    qrels_version_publish_and_rescore(split=split, version=v2, small_change_reason="a wrong judgment")
    for sub in (a, b):
        assert submission_rescore_on(submission_id=sub.pk, qrels_version_id=v2.pk) == "stored"
    split.refresh_from_db()
    assert split.current_qrels_id == v2.pk
    page = client.get(b.get_absolute_url()).content.decode()
    history = re.search(r"Scores by qrels version.*?</table>", page, flags=re.S)
    assert history is not None
    cells = re.findall(r"<tr><td>v(\d+)[^<]*</td><td>[^<]*</td><td>([^<]*)</td></tr>", history.group(0))
    assert cells and dict(cells).get(str(v1.version)) == "not shown", f"v1's score beside v2's: {cells}"
    board = _board(client, "test")
    section = re.search(r'id="qrels-history".*?</section>', board, flags=re.S)
    assert section is not None and "one more" in section.group(0)
    assert "→" not in section.group(0) and "Kendall" not in section.group(0), "the entries that moved are named"
