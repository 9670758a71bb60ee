"""Leaks found in review: what a reader of every digit still got from a hidden split or an anonymous entry.

Through the real services and pages (Django's test client): the analysis
dataset of ``tests/analysis/conftest.py`` has a hidden ``test`` split with the
Ladder on and 24 topics in three categories, family (12), work (10) and rare
(2), with ``category_min_queries`` 10.
"""

from __future__ import annotations

import csv
import io
import re
from html import unescape

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from catalogue.services import qrels_version_add
from participants.compare import compare
from submissions import disclosure
from submissions.models import Result
from submissions.selectors import load_per_query
from submissions.services import qrels_version_publish_and_rescore, submission_rescore_on
from tests.analysis import conftest as analysis
from tests.analysis.conftest import N_TOPICS, qid, relevant_docs
from tests.users import verified

# The analysis tests' fixtures: their dataset, runs scored by the real service, a cache and storage of their own.
analysis_dataset = analysis.analysis_dataset
scored = analysis.scored
pytestmark = [pytest.mark.django_db, pytest.mark.own_cache, pytest.mark.private_storage]


def _percent(text: str) -> float:
    return float(text.strip().replace("−", "-").replace("+", "")) / 100


def _category_rows(table_html: str) -> list[tuple[str, int, float]]:
    """(label, n, first value) of each row of a category table."""
    rows = []
    for tr in re.findall(r"<tr>(.*?)</tr>", table_html, flags=re.S):
        cells = [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, flags=re.S)]
        if len(cells) >= 3 and cells[1].isdigit():
            rows.append((cells[0], int(cells[1]), _percent(cells[2])))
    return rows


def test_the_left_out_categories_cannot_be_recovered_from_the_shown_ones_and_the_overall_mean(client, scored, alice):
    """Overall mean × N − Σ shown categories' n × mean = the left-out queries' sum: they must be ≥ the minimum too."""
    sub = scored("test", alice, "shifted", seed=1)
    result = Result.objects.get(submission=sub)
    assert result.released
    html = client.get(sub.get_absolute_url()).content.decode()
    n_queries = result.n_queries
    overall = round(result.primary_score, 4)  # the page's own rounded mean (intervals table, scores table)
    section = re.search(r"By category.*?</table>", html, flags=re.S)
    shown = _category_rows(section.group(0)) if section else []  # none since test_category_leak.py
    left_out = n_queries - sum(n for _, n, _ in shown)
    recovered = (overall * n_queries - sum(n * mean for _, n, mean in shown)) / left_out if left_out else None
    true_rare = float(np.mean(load_per_query(result)["R@10"][-2:]))
    assert left_out == 0 or left_out >= 10, (
        f"the {left_out} left-out queries' mean R@10 follows from the page: {recovered:.4f} (true: {true_rare:.4f})")


def test_the_compare_page_leaves_out_categories_whose_difference_follows_from_the_others(client, scored, alice, bob):
    a = scored("test", alice, "shifted", seed=1)
    b = scored("test", bob, "random", seed=3)
    assert Result.objects.get(submission=b).released
    html = client.get(reverse("participants:compare") + f"?ids={a.pk},{b.pk}").content.decode()
    rows = re.findall(r"<tr><th scope=\"row\">(\w+)</th><td class=\"num\">(\d+)</td>", html)
    shown = sum(int(n) for _, n in rows)
    left_out = N_TOPICS - shown  # every query since test_category_leak.py: no category on a hidden split
    assert left_out == 0 or left_out >= 10, f"the difference on the {left_out} left-out queries follows from the page"


def test_a_hidden_leaderboard_gives_one_bit_per_pair_not_p_values(client, scored, alice, bob):
    scored("test", alice, "perfect", name="alice-perfect")
    scored("test", bob, "shifted", name="bob-shifted")
    html = client.get(reverse("leaderboard:dataset", args=["anal"]) + "?split=test").content.decode()
    assert "sig-mark" in html, "the markers are shown"
    assert "p = " not in html and "adjusted p" not in html, "p-values at 4 decimals are finer than the budget's one bit"
    assert "significantly" in html  # the bit itself stays
    # A public split keeps them.
    scored("dev", alice, "perfect", name="dev-perfect")
    scored("dev", bob, "shifted", name="dev-shifted")
    html = client.get(reverse("leaderboard:dataset", args=["anal"]) + "?split=dev").content.decode()
    assert "p = " in html


def test_best_per_participant_does_not_tie_an_anonymous_entry_to_its_owner(client, scored, alice):
    scored("dev", alice, "perfect", name="alice-public")
    scored("dev", alice, "shifted", name="secret-entry", visibility="anonymous")
    url = reverse("leaderboard:dataset", args=["anal"])
    assert "secret-entry" in client.get(url + "?split=dev").content.decode()
    # "Best per participant" must not drop the anonymous row for being worse than its owner's public one:
    # that names its owner (with the family and size filters, down to one person).
    assert "secret-entry" in client.get(url + "?split=dev&best=1").content.decode()
    body = client.get(reverse("leaderboard:export", args=["anal", "csv"]) + "?split=dev&best=1").content.decode()
    assert "secret-entry" in [row["system"] for row in csv.DictReader(io.StringIO(body))]


def test_results_the_ladder_never_judged_show_no_number(scored, alice, analysis_dataset):
    """Results on a qrels version that was staged and then replaced are never judged: they must not be shown."""
    split = analysis_dataset.splits.get(name="test")
    best = scored("test", alice, "shifted", name="first")
    held = scored("test", alice, "random", name="held-back", seed=2)
    assert not Result.objects.get(submission=held, qrels_version=split.current_qrels).released
    others = {i: [f"doc{d}" for d in range(1, 81) if f"doc{d}" not in relevant_docs(i)] for i in range(N_TOPICS)}
    v2, _ = qrels_version_add(split=split, qrels={qid(i): {d: 1 for d in others[i][:3]} for i in range(N_TOPICS)})
    qrels_version_publish_and_rescore(split=split, version=v2)
    assert submission_rescore_on(submission_id=held.pk, qrels_version_id=v2.pk) == "stored"
    # The curators replace the staged version before the switch: v2 is never current, never judged.
    v3, _ = qrels_version_add(split=split, qrels={qid(i): {d: 1 for d in others[i][:4]} for i in range(N_TOPICS)})
    qrels_version_publish_and_rescore(split=split, version=v3)
    split.refresh_from_db()
    assert split.current_qrels_id not in (v2.pk, v3.pk)
    on_v2 = Result.objects.get(submission=held, qrels_version=v2)
    web = Client()
    web.force_login(alice)
    page = web.get(reverse("participants:detail", args=[held.pk])).content.decode()
    assert f"<td>v{v2.version}</td>" not in page, "the held-back run's score on the replaced version is on its page"
    assert not on_v2.released, "a result no Ladder judged counts as released"
    assert Result.objects.get(submission=best, qrels_version=split.current_qrels).released  # her best stays


def test_the_compare_page_shows_the_difference_of_the_shown_means_on_a_hidden_split(scored, alice, bob, django_user_model):
    """Rounding the exact difference as well as both means gives a third constraint finer than the display step."""
    carol = verified(django_user_model.objects.create_user("carol", "carol@example.org", "correct horse battery staple"))
    entries = [scored("test", alice, "shifted", seed=1), scored("test", bob, "random", seed=3),
               scored("test", carol, "random", seed=5)]
    mismatches = []
    for reference, other in ((0, 1), (0, 2), (1, 2), (2, 1)):
        comparison = compare(submissions=[entries[reference], entries[other]])
        for row in comparison.pairs[0]["rows"]:
            shown = _percent(row["mean_b"]) - _percent(row["mean_a"])
            difference = _percent(row["difference"].replace("−", "-"))
            if abs(difference - shown) > 1e-9:
                mismatches.append((row["measure"], row["mean_a"], row["mean_b"], row["difference"]))
    assert not mismatches, f"differences finer than the shown means: {mismatches}"


def test_a_public_entrys_ladder_message_does_not_give_away_its_owners_private_best(scored, alice, bob):
    """Released with "a significant improvement over your best (X)": X is her private entry's score."""
    # "late" under "perfect" on 18 of 24 topics: a clear improvement for the Ladder's noisy margin ("shifted" is
    # under it on 5 topics only, no longer released), so the public entry's message names the private best.
    private = scored("test", alice, "late", name="private-first", visibility="private")
    public = scored("test", alice, "perfect", name="public-second")
    split = private.split
    best = disclosure.ladder_format(split)(  # as the owner's message names it: "R@10 50 %"
        disclosure.released_value(Result.objects.get(submission=private).primary_score, split=split))
    assert Result.objects.get(submission=public).released
    api = APIClient()
    api.force_authenticate(bob)
    assert best not in api.get(reverse("api:submission", args=[public.pk])).json()["message"]
    web = Client()
    web.force_login(bob)
    assert best not in web.get(reverse("participants:status", args=[public.pk])).json()["message"]
    assert best not in web.get(public.get_absolute_url()).content.decode()
    # Its owner reads the whole message.
    web.force_login(alice)
    assert best in web.get(reverse("participants:status", args=[public.pk])).json()["message"]


def test_a_split_made_hidden_shows_rounded_values_at_once(client, scored, alice, analysis_dataset):
    """The leaderboard's row cache is keyed by the split's version: a curator hiding the split changes no version."""
    dev = analysis_dataset.splits.get(name="dev")
    sub = scored("dev", alice, "random", seed=7, name="full-precision")
    exact = Result.objects.get(submission=sub).primary_score
    assert round(exact, 4) != exact
    url = reverse("api:leaderboard", args=["anal"]) + "?split=dev"
    [entry] = client.get(url).json()["entries"]
    assert entry["scores"]["R@10"] == exact  # a public split: full precision (and now cached)
    dev.refresh_from_db()
    dev.hidden = True
    dev.save()  # what the admin does (with the row it has just read)
    [entry] = client.get(url + "&sort=R@10").json()["entries"]
    assert entry["scores"]["R@10"] == disclosure.released_value(exact, split=dev)  # on the hidden split's grid


def test_raising_the_category_minimum_takes_effect_at_once(client, scored, alice, analysis_dataset):
    """A hidden split shows no category, whatever the minimum a curator sets (test_category_leak.py)."""
    analysis_dataset.category_min_queries = 5
    analysis_dataset.save()
    sub = scored("test", alice, "shifted", seed=1)
    assert ">family<" not in client.get(sub.get_absolute_url()).content.decode()
    analysis_dataset.category_min_queries = 13
    analysis_dataset.save()
    assert ">family<" not in client.get(sub.get_absolute_url()).content.decode()
