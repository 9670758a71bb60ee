"""The analysis functions on hand-made per-query vectors (no database)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.stats import bootstrap_ci
from participants.analysis import (
    bootstrap_intervals,
    bucket_of,
    category_table,
    left_out_groups,
    recall_curve_points,
    relevant_breakdown,
    value_histogram,
)
from submissions.disclosure import HIDDEN_GROUP_FLOOR, min_group_size


def test_it_gives_a_bootstrap_interval_containing_the_mean():
    rng = np.random.default_rng(3)
    vectors = {"R@10": rng.random(50), "MAP@10": np.r_[np.zeros(25), np.ones(25)]}
    intervals = bootstrap_intervals(vectors, ["R@10", "MAP@10"], n_resamples=2000)
    for name, (mean, low, high) in intervals.items():
        assert low <= mean <= high
        assert mean == pytest.approx(vectors[name].mean())
        assert (low, high) == bootstrap_ci(vectors[name], n_resamples=2000, seed=0)
    assert intervals["MAP@10"][1] < 0.5 < intervals["MAP@10"][2]


def test_it_gives_a_degenerate_interval_for_a_constant_vector():
    assert bootstrap_intervals({"R@10": np.full(7, 0.25)}, ["R@10"]) == {"R@10": (0.25, 0.25, 0.25)}


@pytest.mark.parametrize(("n", "bucket"), [(1, "1"), (2, "2–5"), (5, "2–5"), (6, "6–20"), (20, "6–20"),
                                           (21, ">20"), (109, ">20")])
def test_it_puts_each_relevant_count_in_its_bucket(n, bucket):
    assert bucket_of(n) == bucket


def test_it_breaks_down_by_number_of_relevant_documents():
    n_relevant = np.array([1, 1, 3, 5, 6, 21, 40])
    values = np.array([1.0, 0.0, 0.5, 0.5, 0.2, 0.1, 0.3])
    rows, hidden = relevant_breakdown(n_relevant=n_relevant, vectors={"R@10": values}, measures=["R@10"])
    assert hidden == 0
    assert [(r.label, r.n_queries) for r in rows] == [("1", 2), ("2–5", 2), ("6–20", 1), (">20", 2)]
    assert [r.means["R@10"] for r in rows] == pytest.approx([0.5, 0.5, 0.2, 0.2])


def test_it_leaves_out_buckets_below_the_minimum_size():
    rows, hidden = relevant_breakdown(n_relevant=np.array([1, 1, 1, 30, 30]), vectors={"R@10": np.ones(5)},
                                      measures=["R@10"], min_queries=2)
    assert [r.label for r in rows] == ["1", ">20"]
    rows, hidden = relevant_breakdown(n_relevant=np.array([1, 1, 1, 3, 3, 30]), vectors={"R@10": np.ones(6)},
                                      measures=["R@10"], min_queries=2)
    assert [r.label for r in rows] == ["1"]  # ">20" (1 query) is too small, "2–5" is left out with it
    assert hidden == 2


def test_the_groups_left_out_hold_the_minimum_together_or_the_overall_mean_gives_them_away():
    """Family (4) and work (3) could be shown; left out alone, rare's one query would be total − family − work."""
    qids = [f"q{i}" for i in range(8)]
    categories = dict(zip(qids, ["family"] * 4 + ["work"] * 3 + ["rare"], strict=True))
    values = np.array([1.0, 0.5, 0.0, 0.2, 1.0, 1.0, 0.3, 0.7])
    rows, hidden = category_table(qids=qids, categories=categories, vectors={"R@10": values}, measures=["R@10"],
                                  min_queries=3)
    assert [r.label for r in rows] == ["family"] and hidden == 2
    shown = sum(r.n_queries * r.means["R@10"] for r in rows)
    left_out = len(qids) - sum(r.n_queries for r in rows)
    assert left_out >= 3  # what follows from the overall mean is a mean over at least the minimum
    assert (values.sum() - shown) / left_out == pytest.approx(values[4:].mean())
    assert left_out_groups({"a": 10, "b": 10}, 10) == set()
    assert left_out_groups({"a": 10, "b": 12, "c": 2}, 10) == {"a", "c"}
    assert left_out_groups({"a": 4, "b": 4, "c": 12}, 3) == set()
    assert left_out_groups({"a": 2, "b": 2, "c": 12}, 3) == {"a", "b"}


def test_it_counts_queries_per_category_and_hides_small_categories():
    qids = [f"q{i}" for i in range(6)]
    categories = {"q0": "family", "q1": "family", "q2": "family", "q3": "work", "q4": "work", "q5": ""}
    values = np.array([1.0, 0.5, 0.0, 1.0, 1.0, 0.3])
    rows, hidden = category_table(qids=qids, categories=categories, vectors={"R@10": values}, measures=["R@10"])
    assert [(r.label, r.n_queries) for r in rows] == [("family", 3), ("work", 2), ("(no category)", 1)]
    assert rows[0].means["R@10"] == pytest.approx(0.5)
    rows, hidden = category_table(qids=qids, categories=categories, vectors={"R@10": values}, measures=["R@10"],
                                  min_queries=3)
    assert [r.label for r in rows] == ["family"]
    assert hidden == 2


def test_it_shows_no_category_table_when_no_topic_has_a_category():
    assert category_table(qids=["a", "b"], categories={}, vectors={"R@10": np.ones(2)}, measures=["R@10"]) == ([], 0)


def test_it_puts_a_perfect_value_in_the_last_histogram_bin():
    counts, edges = value_histogram(np.array([0.0, 0.05, 0.5, 0.99, 1.0, 1.0]))
    assert len(counts) == 10 and len(edges) == 11
    assert counts[0] == 2 and counts[5] == 1 and counts[9] == 3
    assert sum(counts) == 6


def test_it_thins_the_recall_curve_from_k_1_to_the_depth():
    curve = np.linspace(0.01, 1.0, 1000)
    points = recall_curve_points(curve, max_points=50)
    assert points[0] == (1.0, pytest.approx(0.01)) and points[-1] == (1000.0, pytest.approx(1.0))
    assert len(points) <= 50
    assert all(a[0] < b[0] for a, b in zip(points, points[1:]))


@pytest.mark.django_db
def test_no_curator_setting_shows_a_group_below_five_queries_on_a_hidden_split(tiny_dataset):
    """A category of one query is that query's value: the floor holds whatever category_min_queries says."""
    type(tiny_dataset).objects.filter(pk=tiny_dataset.pk).update(category_min_queries=1)
    splits = type(tiny_dataset.splits.first()).objects  # fresh rows: the dataset read again, not the fixture's
    hidden, public = splits.get(dataset=tiny_dataset, name="test"), splits.get(dataset=tiny_dataset, name="dev")
    assert min_group_size(hidden) == HIDDEN_GROUP_FLOOR == 5
    assert min_group_size(public) == 1
    type(tiny_dataset).objects.filter(pk=tiny_dataset.pk).update(category_min_queries=12)
    assert min_group_size(splits.get(dataset=tiny_dataset, name="test")) == 12
