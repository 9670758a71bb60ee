"""The disclosure module: the grid, the bands, what a hidden split releases (submissions/disclosure.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from submissions import disclosure


@pytest.mark.parametrize(("n_topics", "step"), [
    (100, 0.01), (222, 0.005), (20, 0.05), (3, 0.5), (1, 1.0), (0, 1.0), (50, 0.02), (1000, 0.001), (501, 0.002),
])
def test_it_picks_the_smallest_nice_step_of_at_least_one_topic(n_topics, step):
    assert disclosure.step_for(n_topics) == pytest.approx(step)
    assert disclosure.step_for(n_topics) >= 1 / max(1, n_topics)


@pytest.mark.parametrize(("value", "step", "expected"), [
    (0.8204, 0.01, 0.82), (0.825, 0.01, 0.83), (0.8249, 0.005, 0.825), (0.8226, 0.005, 0.825), (0.8224, 0.005, 0.82),
    (0.0, 0.05, 0.0), (1.0, 0.05, 1.0), (0.1749, 0.05, 0.15),
])
def test_it_puts_values_on_the_grid(value, step, expected):
    assert disclosure.on_grid(value, step) == expected


@pytest.mark.parametrize(("p", "band"), [
    (0.0001, "p < 0.01"), (0.0099, "p < 0.01"), (0.01, "p < 0.05"), (0.0499, "p < 0.05"), (0.05, "p ≥ 0.05"),
    (0.9, "p ≥ 0.05"), (None, ""), (float("nan"), ""),
])
def test_it_shows_p_values_in_three_bands(p, band):
    assert disclosure.p_band(p) == band


def test_it_names_the_grid_in_points():
    assert disclosure.points(0.005) == "0.5 points"
    assert disclosure.points(0.01) == "1 point"
    assert disclosure.decimals_of(0.01) == 0
    assert disclosure.decimals_of(0.005) == 1
    assert disclosure.decimals_of(0.001) == 1
    assert disclosure.decimals_of(None) == 2


def test_a_hidden_split_releases_its_primary_measure_on_the_grid(tiny_dataset):
    hidden = tiny_dataset.splits.get(name="test")
    public = tiny_dataset.splits.get(name="dev")
    scores = {"R@10": 0.8204, "MAP@10": 0.61234, "MRR@10": 0.7, "nDCG@10": None}
    assert disclosure.scores_shown(scores, split=hidden, n_topics=100) == {"R@10": 0.82}
    assert disclosure.scores_shown(scores, split=hidden, n_topics=222) == {"R@10": 0.82}
    assert disclosure.scores_shown({"R@10": 0.8226}, split=hidden, n_topics=222) == {"R@10": 0.825}
    assert disclosure.scores_shown(scores, split=public) == scores  # public: everything, full precision
    assert disclosure.released_measures(hidden) == ["R@10"]
    assert disclosure.released_measures(public) == ["R@10", "MAP@10", "MRR@10", "nDCG@10"]
    assert disclosure.format_released(0.8226, split=hidden, n_topics=222) == "82.5"
    assert disclosure.format_released(0.8204, split=hidden, n_topics=100) == "82"
    assert disclosure.format_released(0.8204, split=public) == "82.04"
    assert disclosure.grid_note(hidden, n_topics=222) == "±0.25 points: hidden split"
    assert disclosure.grid_note(public) == ""


def test_the_budget_table_hides_per_query_facts_on_hidden_splits(tiny_dataset):
    hidden = tiny_dataset.splits.get(name="test")
    public = tiny_dataset.splits.get(name="dev")
    assert disclosure.shows(hidden, "primary_measure") and disclosure.shows(hidden, "p_bands")
    for name in ("per_query", "curves", "categories", "bootstrap", "judged_at_k", "other_measures", "p_values"):
        assert not disclosure.shows(hidden, name), name
        assert disclosure.shows(public, name), name


def test_docs_security_states_the_budget_table_of_the_module():
    """docs/security.md's table of features is the module's BUDGET, row for row."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| (shown|not shown) \|", text, re.M))
    assert rows == {name: ("shown" if f.hidden else "not shown") for name, f in disclosure.BUDGET.items()}


def test_a_run_the_ladder_withheld_moves_neither_the_grid_nor_the_topic_count(tiny_dataset, django_user_model):
    """A withheld run shows nothing: not through the split's grid (the largest stored step) or its N either."""
    from django.core.files.base import ContentFile

    from submissions.models import Result, Submission

    hidden = tiny_dataset.splits.get(name="test")
    user = django_user_model.objects.create_user("prober", "prober@example.org", "pw")

    def scored(n_queries: int, step: float, released: bool) -> None:
        sub = Submission.objects.create(user=user, split=hidden, system_name=f"run {n_queries} {released}",
                                        run_file=ContentFile(b"q1 Q0 d1 1 1.0 x\n", name="run.txt"),
                                        status=Submission.Status.SCORED)
        Result.objects.create(submission=sub, qrels_version=hidden.current_qrels, scores={"R@10": 0.5},
                              primary_score=0.5, n_queries=n_queries, released=released,
                              released_score=0.5 if released else None, released_step=step)
        hidden.bump_cache_version()
        hidden.refresh_from_db()

    scored(3, 0.5, released=True)
    assert (disclosure.split_step(hidden), disclosure.evaluated_topics(hidden)) == (0.5, 3)
    scored(2, 1.0, released=False)  # fewer evaluated topics, a coarser step: withheld
    assert (disclosure.split_step(hidden), disclosure.evaluated_topics(hidden)) == (0.5, 3)
