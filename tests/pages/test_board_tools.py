"""The leaderboard's reader tools: filters, best per participant, the progress chart, one percent scale."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

import pytest
from django.http import QueryDict
from django.urls import reverse
from django.utils import timezone

from catalogue.models import ReportedResult
from leaderboard.selectors import (
    LeaderboardFilters,
    LeaderboardRow,
    best_per_participant,
    filter_rows,
    leaderboard_rows,
    params_range,
    parse_params,
    progress_points,
    year_in,
)
from lexboard_cli.client import format_scores
from submissions.models import Submission


def _at(sub, day: str) -> None:
    """Date an entry (the leaderboard shows the submission date)."""
    when = timezone.make_aware(dt.datetime.fromisoformat(day + "T12:00:00"))
    Submission.objects.filter(pk=sub.pk).update(created_at=when)
    sub.split.bump_cache_version()


@pytest.fixture
def board(split_test, alice, bob, staff, make_entry):
    """Hand-made entries with families, parameter counts, training data and dates."""
    a1 = make_entry(split_test, alice, "alice-bm25", {"R@10": 0.40}, family="lexical", params="",
                    training_data="none", could_have_seen="no")
    a2 = make_entry(split_test, alice, "alice-dense", {"R@10": 0.70}, family="dense", params="110M",
                    training_data="train_split", could_have_seen="corpus", models_used="BAAI/bge-m3 MIT")
    b1 = make_entry(split_test, bob, "bob-splade", {"R@10": 0.60}, family="sparse", params="1.5B",
                    training_data="train_split")
    b2 = make_entry(split_test, bob, "bob-llm", {"R@10": 0.65}, family="llm", params="7B", training_data="unknown",
                    could_have_seen="test_questions")
    for sub, day in ((a1, "2023-02-01"), (a2, "2025-03-10"), (b1, "2024-06-01"), (b2, "2025-01-15")):
        _at(sub, day)
    ReportedResult.objects.create(dataset=split_test.dataset, system="Paper dense", family="dense (API)",
                                  scores={"R@10": 0.50}, params="220M", source="Doe et al., ACL 2022, Table 2")
    ReportedResult.objects.create(dataset=split_test.dataset, system="Paper BM25", family="lexical",
                                  scores={"R@10": 0.30}, source="Doe et al., ACL 2022, Table 2")
    ReportedResult.objects.create(dataset=split_test.dataset, system="Undated", family="lexical",
                                  scores={"R@10": 0.20}, source="a blog post")
    split_test.refresh_from_db()
    return split_test


def _filters(query: str) -> LeaderboardFilters:
    return LeaderboardFilters.from_query(QueryDict(query))


def _systems(split, query: str) -> list[tuple[str, int | None]]:
    rows = filter_rows(leaderboard_rows(split=split), _filters(query), measure="R@10")
    return [(r.system, r.rank) for r in rows]


# --- filters ------------------------------------------------------------------------------


def test_it_reads_parameter_counts_as_written():
    assert parse_params("110M") == 110e6 and parse_params("7B") == 7e9 and parse_params("1.5 b") == 1.5e9
    assert parse_params("") is None and parse_params("a lot") is None
    assert [params_range(p) for p in ("110M", "7B", "50M", "70B", "")] == [
        "100m-1b", "1b-10b", "lt100m", "gt10b", "unknown"]


def test_it_finds_the_year_of_a_source():
    assert year_in("Louis & Spanakis, ACL 2022 (arXiv:2108.11792), Table 2") == 2022
    assert year_in("a blog post") is None


def test_it_filters_by_family_and_ranks_among_the_kept_rows(board):
    assert _systems(board, "family=dense") == [("alice-dense", 1), ("Paper dense", None)]
    assert _systems(board, "family=sparse&family=llm") == [("bob-llm", 1), ("bob-splade", 2)]


def test_it_filters_by_training_data_parameters_and_kind(board):
    assert _systems(board, "training=no") == [("bob-llm", 1), ("alice-bm25", 2)]
    assert _systems(board, "params=1b-10b") == [("bob-llm", 1), ("bob-splade", 2)]
    assert _systems(board, "params=unknown&kind=reported") == [("Paper BM25", None), ("Undated", None)]
    assert [s for s, _ in _systems(board, "kind=scored")] == ["alice-dense", "bob-llm", "bob-splade", "alice-bm25"]


def test_it_filters_by_stated_provenance_and_the_disclosed_mark(board):
    assert _systems(board, "training_data=train_split") == [("alice-dense", 1), ("bob-splade", 2)]
    assert _systems(board, "training_data=none&training_data=unknown") == [("bob-llm", 1), ("alice-bm25", 2)]
    assert _systems(board, "could_have_seen=corpus&could_have_seen=test_questions") == [
        ("alice-dense", 1), ("bob-llm", 2)]
    # Complete statements only; reported rows state nothing here (their paper does) and drop out.
    assert _systems(board, "disclosed=1") == [("alice-dense", 1), ("alice-bm25", 2)]
    assert _systems(board, "disclosed=1&training_data=none") == [("alice-bm25", 1)]


def test_an_old_link_to_the_training_filter_still_filters(board):
    # ?training=yes|no meant "used the dataset's training data": yes is the train split, no everything else.
    assert _systems(board, "training=yes") == _systems(board, "training_data=train_split")
    assert _systems(board, "training=no") == [("bob-llm", 1), ("alice-bm25", 2)]
    assert _filters("training=yes").query_items() == [("training_data", "train_split")]


def test_it_ignores_unknown_filter_values():
    assert not _filters("family=quantum&params=huge&training=maybe&kind=x&training_data=lots&could_have_seen=x"
                        "&disclosed=maybe").active


def test_it_keeps_the_best_entry_per_participant(board):
    assert _systems(board, "best=1") == [
        ("alice-dense", 1), ("bob-llm", 2), ("Paper dense", None), ("Undated", None)]


def test_best_per_participant_keeps_the_earliest_of_equals():
    rows = [LeaderboardRow(rank=None, kind="scored", submission_id=i, system=s, owner="", family="", paper_url="",
                           code_url="", date=None, scores={"m": v}, participant=p)
            for i, (s, v, p) in enumerate([("old", 0.5, "u1"), ("new", 0.5, "u1"), ("other", 0.1, "u2")])]
    assert [r.system for r in best_per_participant(rows, measure="m")] == ["old", "other"]


def test_the_page_filters_and_keeps_the_filters_in_its_export_links(client, board):
    url = reverse("leaderboard:dataset", args=["tiny"])
    html = client.get(url, {"family": "sparse", "best": "1"}).content.decode()
    table = html.split("<tbody>")[1].split("</tbody>")[0]
    assert "bob-splade" in table and "alice-dense" not in table and "bob-llm" not in table
    assert "1 of 7 rows shown" in html
    assert "family=sparse" in html and "best=1" in html
    assert html.count("?split=test&amp;family=sparse&amp;best=1") == 3  # CSV, JSON, LaTeX


def test_the_export_applies_the_same_filters(client, board):
    url = reverse("leaderboard:export", args=["tiny", "csv"])
    rows = list(csv.DictReader(io.StringIO(client.get(url, {"best": "1", "kind": "scored"}).content.decode())))
    assert [(r["system"], r["rank"]) for r in rows] == [("alice-dense", "1"), ("bob-llm", "2")]


def test_the_export_never_names_the_participant_behind_a_row(client, board):
    data = json.loads(client.get(reverse("leaderboard:export", args=["tiny", "json"])).content)
    assert all("participant" not in e for e in data["entries"])


def test_it_offers_the_sparse_family_to_participants():
    assert Submission.Family.SPARSE.value == "sparse"


# --- progress -------------------------------------------------------------------------------


def test_progress_keeps_only_the_entries_that_raised_the_best_score(board):
    points, undated = progress_points(leaderboard_rows(split=board), measure="R@10")
    assert [(p.label, p.system, p.value, p.kind) for p in points] == [
        ("2022", "Paper dense", 0.5, "reported"),
        ("2024-06-01", "bob-splade", 0.6, "scored"),
        ("2025-01-15", "bob-llm", 0.65, "scored"),
        ("2025-03-10", "alice-dense", 0.7, "scored"),
    ]
    assert undated == 1  # "a blog post" names no year


def test_progress_leaves_out_private_entries(board, alice, make_entry):
    secret = make_entry(board, alice, "secret", {"R@10": 0.99}, visibility="private")
    _at(secret, "2025-06-01")
    points, _ = progress_points(leaderboard_rows(split=board, user=alice), measure="R@10")
    assert "secret" not in [p.system for p in points]


def test_the_page_draws_the_progress_chart(client, board):
    html = client.get(reverse("leaderboard:dataset", args=["tiny"])).content.decode()
    assert 'class="plot plot-progress"' in html
    assert "Best R@10 over time" in html
    assert "2025-03-10 alice-dense 70.00" in html  # the chart's description, in percent
    assert ">2022</text>" in html and "2,022" not in html  # year ticks, not thousands
    assert "1 reported result without a year is not placed" in html


# --- one scale ------------------------------------------------------------------------------


def test_every_dataset_shows_percent_with_two_decimals(client, board):
    html = client.get(reverse("leaderboard:dataset", args=["tiny"])).content.decode()
    assert ">70.00<" in html and "0.7000" not in html
    assert "Scores in percent" in html


def test_the_home_page_shows_reported_fractions_in_percent(client, reported):
    # Only a paper's result on the board: the home page's "best" is that reported fraction (0.55).
    home = client.get(reverse("leaderboard:home")).content.decode()
    assert "55.00" in home and "0.5500" not in home


def test_exports_show_percent_and_json_keeps_labelled_fractions(client, board):
    rows = list(csv.DictReader(io.StringIO(
        client.get(reverse("leaderboard:export", args=["tiny", "csv"])).content.decode())))
    assert rows[0]["R@10"] == "70.00"
    tex = client.get(reverse("leaderboard:export", args=["tiny", "tex"])).content.decode()
    assert "\\textbf{70.00}" in tex and "in percent" in tex
    data = json.loads(client.get(reverse("leaderboard:export", args=["tiny", "json"])).content)
    assert data["scale"] == "fraction" and data["entries"][0]["scores"]["R@10"] == 0.7


def test_the_client_prints_percent():
    table = format_scores({"scores": {"R@10": 0.7, "nDCG@10": 0.51333}})
    assert "70.00" in table and "51.33" in table and "percent" in table


def test_the_client_prints_a_hidden_splits_values_at_the_grids_precision_and_says_why_a_run_was_withheld():
    """"84.00" on a grid of whole points printed digits the site never released (and looked more precise)."""
    assert "84.00" not in format_scores({"scores": {"R@100": 0.84}, "grid": 0.01, "released": True})
    assert " 84\n" in format_scores({"scores": {"R@100": 0.84}, "grid": 0.01, "released": True}) + "\n"
    assert "82.5" in format_scores({"scores": {"R@100": 0.825}, "grid": 0.005, "released": True})
    assert "82.25" in format_scores({"scores": {"R@100": 0.8225}, "grid": 0.0025, "released": True})
    withheld = format_scores({"scores": {}, "grid": None, "released": False,
                              "message": "Not a significant improvement over your best (R@100)."})
    assert withheld == "not released: Not a significant improvement over your best (R@100)."
