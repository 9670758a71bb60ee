"""The compare page and API: values from evaluation.stats on the stored vectors, scipy agreement, visibility."""

from __future__ import annotations

import re

import numpy as np
import pytest
from django.urls import reverse
from rest_framework.test import APIClient
from scipy import stats as scipy_stats

from evaluation.stats import paired_ttest, randomization_test
from participants.compare import pair_stats, top_k_overlap
from submissions import disclosure
from submissions.selectors import load_per_query, submission_current_result

from .conftest import qid


def vectors(sub, measure):
    return load_per_query(submission_current_result(submission=sub))[measure]


def test_the_compare_api_answers_the_documented_shape_with_the_core_statistics(scored, alice, bob):
    a = scored("dev", alice, "perfect")
    b = scored("dev", bob, "shifted")
    response = APIClient().get(reverse("api:compare"), {"submissions": f"{a.pk},{b.pk}", "measure": "MAP@10"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"measure", "a", "b", "mean_a", "mean_b", "p_randomization", "p_ttest", "p_band", "wins",
                         "ties", "losses"}
    va, vb = vectors(a, "MAP@10"), vectors(b, "MAP@10")
    assert body["measure"] == "MAP@10" and (body["a"], body["b"]) == (a.pk, b.pk)
    assert body["mean_a"] == pytest.approx(va.mean()) and body["mean_b"] == pytest.approx(vb.mean())
    assert body["p_randomization"] == randomization_test(va, vb, n_resamples=10000, seed=0)
    assert body["p_ttest"] == pytest.approx(paired_ttest(va, vb))
    assert body["p_band"] == "p < 0.01"
    assert body["wins"] == int((va > vb).sum()) and body["losses"] == int((va < vb).sum())
    assert body["wins"] + body["ties"] + body["losses"] == len(va)
    assert "secretq" not in response.content.decode()  # aggregates only, on a hidden split too


def test_the_t_test_p_value_agrees_with_scipy():
    rng = np.random.default_rng(5)
    a = rng.random(40)
    b = np.clip(a + rng.normal(0.05, 0.1, 40), 0, 1)
    stats = pair_stats(a, b, measure="R@10", n_resamples=2000)
    assert stats.p_ttest == pytest.approx(scipy_stats.ttest_rel(a, b).pvalue, rel=1e-12)


def test_the_randomization_test_is_exact_for_few_queries():
    a, b = np.array([1.0, 1.0, 1.0, 0.0]), np.array([0.0, 0.0, 0.0, 0.0])
    # 16 sign patterns; |sum| >= 3 for the 2 patterns with all three ones the same sign.
    assert pair_stats(a, b, measure="R@10").p_randomization == pytest.approx(4 / 16)


def test_the_compare_api_refuses_other_peoples_private_submissions_as_not_found(scored, alice, bob):
    a = scored("test", alice, "perfect")
    hidden = scored("test", bob, "shifted", visibility="private")
    response = APIClient().get(reverse("api:compare"), {"submissions": f"{a.pk},{hidden.pk}"})
    assert response.status_code == 404
    assert response.json()["error"]["message"] == f"No submission #{hidden.pk} is visible to you."
    client = APIClient()
    client.force_authenticate(bob)
    assert client.get(reverse("api:compare"), {"submissions": f"{a.pk},{hidden.pk}"}).status_code == 200


def test_the_compare_api_answers_an_id_beyond_the_largest_as_not_found(scored, alice):
    """The schema's pattern takes any 19-digit id; one past the largest a row can have is not found, like elsewhere."""
    a = scored("test", alice, "perfect")
    too_large = 2**63
    response = APIClient().get(reverse("api:compare"), {"submissions": f"{too_large},{a.pk}"})
    assert response.status_code == 404
    assert response.json()["error"]["message"] == f"No submission #{too_large} is visible to you."


def test_the_compare_api_explains_bad_requests(scored, alice):
    a = scored("test", alice, "perfect")
    response = APIClient().get(reverse("api:compare"), {"submissions": f"{a.pk}"})
    assert response.status_code == 400 and "exactly two" in response.json()["error"]["message"]
    b = scored("dev", alice, "shifted")
    response = APIClient().get(reverse("api:compare"), {"submissions": f"{a.pk},{b.pk}"})
    # Both exist and are visible: their state is what forbids it (another split), a conflict.
    assert response.status_code == 409 and "same dataset split" in response.json()["error"]["message"]
    c = scored("test", alice, "random")
    response = APIClient().get(reverse("api:compare"), {"submissions": f"{a.pk},{c.pk}", "measure": "P@7"})
    assert response.status_code == 404 and "no measure 'P@7'" in response.json()["error"]["message"]


def test_top_k_overlap_averages_over_queries():
    a = {"q1": ["d1", "d2"], "q2": ["d1", "d2"]}
    b = {"q1": ["d2", "d3"], "q2": ["d1", "d2"]}
    out = top_k_overlap(a, b, k=2)
    assert out["overlap"] == pytest.approx((0.5 + 1.0) / 2)
    assert out["jaccard"] == pytest.approx((1 / 3 + 1.0) / 2)


def test_the_compare_page_on_a_dev_split_shows_the_scatter_and_categories(client, scored, alice, bob):
    a = scored("dev", alice, "perfect")
    b = scored("dev", bob, "shifted")
    c = scored("dev", bob, "random", seed=4)
    response = client.get(reverse("participants:compare"), {"ids": f"{a.pk},{b.pk},{c.pk}", "measure": "R@10"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "plot-scatter" in html and qid(0) in html
    # In the site's unit (#38): the axes run 0 to 100, as the tables beside them, and say so.
    scatter = re.search(r'<svg\b[^>]*plot-scatter.*?</svg>', html, flags=re.S).group(0)
    ticks = re.findall(r'class="plot-tick"[^>]*>([^<]+)<', scatter)
    assert "100" in ticks and not [t for t in ticks if "." in t], ticks
    assert "R@10 (%)" in scatter and re.search(r"<title>[^<]*: \d+\.\d\d, \d+\.\d\d</title>", scatter)
    assert "difference by category" in html and "Top-10 overlap" in html
    assert "over the 6 comparisons on this page" in html  # 2 pairs × 3 measures, Holm over all


def test_the_compare_page_on_a_hidden_split_shows_no_per_query_values(client, scored, alice, bob):
    a = scored("test", alice, "perfect")
    b = scored("test", bob, "shifted")
    html = client.get(reverse("participants:compare"), {"ids": f"{a.pk},{b.pk}"}).content.decode()
    assert "randomization test" in html and "p &lt; 0.01" in html and "p (randomization)" not in html
    assert "secretq" not in html and "plot-scatter" not in html
    # No category difference: two released runs may differ in one query of a category (docs/security.md).
    assert "difference by category" not in html and "rare" not in html and ">family<" not in html


def test_the_compare_page_hides_submissions_the_visitor_may_not_see(client, scored, alice, bob):
    a = scored("dev", alice, "perfect")
    private = scored("dev", bob, "shifted", visibility="private")
    response = client.get(reverse("participants:compare"), {"ids": f"{a.pk},{private.pk}"})
    assert response.status_code == 400
    assert f"No submission #{private.pk} is visible to you." in response.content.decode()
    assert "shifted" not in response.content.decode()


def test_the_compare_page_with_one_id_offers_the_other_visible_entries(client, scored, alice, bob):
    a = scored("dev", alice, "perfect")
    b = scored("dev", bob, "shifted", name="Bob public")
    scored("dev", bob, "random", name="Bob private", visibility="private")
    html = client.get(reverse("participants:compare"), {"ids": str(a.pk)}).content.decode()
    assert f"?ids={a.pk},{b.pk}" in html and "Bob public" in html and "Bob private" not in html


def test_the_compare_service_gives_each_comparison_the_p_value_of_its_own_test(scored, alice, bob):
    from participants.compare import compare

    a = scored("dev", alice, "perfect")
    b = scored("dev", bob, "shifted")
    c = scored("dev", bob, "random", seed=4)
    comparison = compare(submissions=[a, b, c], overlap=False)
    assert comparison.n_comparisons == 2 * len(comparison.measures)
    for pair in comparison.pairs:
        other = pair["entry"].submission
        for stats in pair["stats"]:
            va, vb = vectors(a, stats.measure), vectors(other, stats.measure)
            # Batched across the page, yet each p-value is the single test's, in the same direction.
            assert stats.p_randomization == randomization_test(va, vb, n_resamples=10000, seed=0)
            assert stats.p_ttest == pytest.approx(paired_ttest(va, vb))


def test_randomization_p_values_match_the_pair_by_pair_tests():
    from participants.compare import randomization_p_values

    rng = np.random.default_rng(12)
    pairs = [(rng.random(30), rng.random(30)) for _ in range(5)] + [(np.full(30, 0.5), np.full(30, 0.5))]
    assert randomization_p_values(pairs, n_resamples=3000) == [randomization_test(a, b, n_resamples=3000)
                                                                for a, b in pairs]
    assert randomization_p_values([]) == []


def test_on_a_hidden_split_the_compare_api_gives_released_means_a_band_and_no_counts(scored, alice, bob):
    a = scored("test", alice, "perfect")
    b = scored("test", bob, "shifted")
    body = APIClient().get(reverse("api:compare"), {"submissions": f"{a.pk},{b.pk}"}).json()
    va, vb = vectors(a, "R@10"), vectors(b, "R@10")
    split = a.split
    assert (body["mean_a"], body["mean_b"]) == tuple(
        disclosure.scores_shown({"R@10": float(v.mean())}, split=split, n_topics=len(va))["R@10"] for v in (va, vb))
    assert body["p_randomization"] is None and body["p_ttest"] is None
    assert body["p_band"] == disclosure.p_band(randomization_test(va, vb, n_resamples=10000, seed=0))
    assert body["wins"] is None and body["ties"] is None and body["losses"] is None


def test_on_a_hidden_split_only_released_entries_can_be_compared(scored, alice, bob):
    a = scored("test", alice, "perfect")
    worse = scored("test", alice, "shifted", name="worse")  # not better than her best: not released
    assert not worse.results.get().released
    response = APIClient().get(reverse("api:compare"), {"submissions": f"{a.pk},{worse.pk}"})
    assert response.status_code == 409 and "not released" in response.json()["error"]["message"]  # exists, not comparable
