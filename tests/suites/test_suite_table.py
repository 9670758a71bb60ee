"""Suite tables: a row per system across a benchmark's datasets, gaps shown, aggregates never silent."""

from __future__ import annotations

import pytest

from leaderboard.suites import suite_table

pytestmark = pytest.mark.django_db


def by_system(table):
    return {(r.system, r.owner): r for r in table.rows}


def test_it_builds_a_row_per_system_with_a_column_per_dataset(suite, make_entry, alice, bob):
    bench, t1, t2 = suite
    make_entry(t1, alice, "BM25", {"R@10": 0.2, "MAP@10": 0.9})
    make_entry(t2, alice, "BM25", {"MAP@10": 0.6, "R@10": 0.1})
    make_entry(t1, bob, "Dense", {"R@10": 0.5})
    table = suite_table(benchmark=bench)
    assert [c.dataset.slug for c in table.columns] == ["tiny", "tiny2"]
    assert [c.measure for c in table.columns] == ["R@10", "MAP@10"]
    rows = by_system(table)
    bm25 = rows[("BM25", "alice")]
    assert [c.value for c in bm25.cells] == [0.2, 0.6]  # each dataset's primary measure
    assert bm25.aggregate == pytest.approx(2 / (1 / 0.2 + 1 / 0.6))  # harmonic mean = 0.3
    assert bm25.rank == 1 and not bm25.partial and bm25.missing == []


def test_a_system_missing_a_dataset_shows_a_gap_and_gets_no_aggregate(suite, make_entry, alice, bob):
    bench, t1, t2 = suite
    make_entry(t1, alice, "BM25", {"R@10": 0.2})
    make_entry(t2, alice, "BM25", {"MAP@10": 0.6})
    make_entry(t1, bob, "Dense", {"R@10": 0.9})
    table = suite_table(benchmark=bench)
    dense = by_system(table)[("Dense", "bob")]
    assert [c.value for c in dense.cells] == [0.9, None]
    assert dense.cells[1].display == "–"
    assert dense.aggregate is None and dense.rank is None
    assert dense.missing == ["Tiny Two"]
    # complete rows first, even though Dense's one score is the best
    assert [r.system for r in table.rows] == ["BM25", "Dense"]
    assert table.has_gaps


def test_partial_aggregates_are_marked_and_not_ranked(suite, make_entry, alice, bob):
    bench, t1, t2 = suite
    make_entry(t1, alice, "BM25", {"R@10": 0.2})
    make_entry(t2, alice, "BM25", {"MAP@10": 0.6})
    make_entry(t1, bob, "Dense", {"R@10": 0.9})
    table = suite_table(benchmark=bench, partial=True)
    dense = by_system(table)[("Dense", "bob")]
    assert dense.aggregate == pytest.approx(0.9) and dense.partial and dense.rank is None
    assert dense.missing == ["Tiny Two"]
    assert by_system(table)[("BM25", "alice")].rank == 1


def test_a_system_is_the_same_user_and_system_name(suite, make_entry, alice, bob):
    bench, t1, t2 = suite
    make_entry(t1, alice, "BM25", {"R@10": 0.2})
    make_entry(t2, bob, "BM25", {"MAP@10": 0.6})
    table = suite_table(benchmark=bench)
    assert len(table.rows) == 2
    assert all(r.aggregate is None for r in table.rows)


def test_anonymous_entries_never_join_named_ones(suite, make_entry, alice):
    bench, t1, t2 = suite
    make_entry(t1, alice, "BM25", {"R@10": 0.2})
    make_entry(t2, alice, "BM25", {"MAP@10": 0.6}, visibility="anonymous")
    table = suite_table(benchmark=bench)
    assert sorted(r.owner for r in table.rows) == ["alice", "anonymous"]
    assert all(r.aggregate is None for r in table.rows)


def test_anonymous_entries_of_one_user_are_not_joined_across_datasets(suite, make_entry, alice):
    """Joined, they would say that two anonymous entries have one owner (and give a row its owner's full suite)."""
    bench, t1, t2 = suite
    make_entry(t1, alice, "Secret", {"R@10": 0.2}, visibility="anonymous")
    make_entry(t2, alice, "Secret", {"MAP@10": 0.6}, visibility="anonymous")
    table = suite_table(benchmark=bench)
    assert [r.owner for r in table.rows] == ["anonymous", "anonymous"]
    assert all(r.aggregate is None for r in table.rows)


def test_private_entries_stay_out_of_the_suite(suite, make_entry, alice):
    bench, t1, t2 = suite
    make_entry(t1, alice, "BM25", {"R@10": 0.2}, visibility="private")
    assert suite_table(benchmark=bench).rows == []


def test_a_systems_best_entry_on_a_dataset_counts(suite, make_entry, alice):
    bench, t1, t2 = suite
    make_entry(t1, alice, "BM25", {"R@10": 0.2})
    best = make_entry(t1, alice, "BM25", {"R@10": 0.4})
    make_entry(t2, alice, "BM25", {"MAP@10": 0.4})
    [row] = suite_table(benchmark=bench).rows
    assert row.cells[0].value == 0.4 and row.cells[0].submission_id == best.pk
    assert row.aggregate == pytest.approx(0.4)


def test_mean_rank_ranks_lowest_first_with_shared_ranks_for_ties(suite, make_entry, alice, bob, staff):
    bench, t1, t2 = suite
    bench.aggregate = "mean-rank"
    bench.save()
    make_entry(t1, alice, "A", {"R@10": 0.5})
    make_entry(t2, alice, "A", {"MAP@10": 0.1})
    make_entry(t1, bob, "B", {"R@10": 0.5})
    make_entry(t2, bob, "B", {"MAP@10": 0.3})
    make_entry(t1, staff, "C", {"R@10": 0.2})
    make_entry(t2, staff, "C", {"MAP@10": 0.3})
    table = suite_table(benchmark=bench)
    assert table.lower_is_better
    # tiny: A, B tie (1.5 each), C 3; tiny2: B, C tie (1.5 each), A 3
    assert [(r.system, r.aggregate, r.rank) for r in table.rows] == [("B", 1.5, 1), ("A", 2.25, 2), ("C", 2.25, 2)]
    assert table.rows[0].aggregate_display == "1.50"


def test_reported_results_are_rows_without_rank(suite, make_entry, alice):
    from catalogue.models import ReportedResult

    bench, t1, t2 = suite
    make_entry(t1, alice, "BM25", {"R@10": 0.2})
    make_entry(t2, alice, "BM25", {"MAP@10": 0.6})
    for ds, scores in ((t1.dataset, {"R@10": 0.8}), (t2.dataset, {"MAP@10": 0.8})):
        ReportedResult.objects.create(dataset=ds, system="Paper model", scores=scores, source="Doe 2024")
    table = suite_table(benchmark=bench)
    paper = by_system(table)[("Paper model", "Doe 2024")]
    assert paper.kind == "reported" and paper.aggregate == pytest.approx(0.8) and paper.rank is None
    assert table.rows[0] is paper  # placed by value
    assert by_system(table)[("BM25", "alice")].rank == 1


def test_a_benchmark_without_aggregate_is_not_a_suite(tiny_dataset):
    assert not suite_table(benchmark=tiny_dataset.benchmark).is_suite


def test_the_lextreme_card_scores_its_reported_aggregates_by_their_harmonic_mean():
    from catalogue.cards import cards_load
    from catalogue.models import Benchmark

    cards_load()
    bench = Benchmark.objects.get(slug="lextreme")
    table = suite_table(benchmark=bench)
    assert table.method == "lextreme" and table.part_names == ["dataset aggregate", "language aggregate"]
    rows = {r.system: r for r in table.rows}
    xlmr = rows["XLM-R large"]
    assert xlmr.parts["dataset_aggregate"] == pytest.approx(0.485)
    assert xlmr.parts["language_aggregate"] == pytest.approx(0.36)
    assert xlmr.aggregate == pytest.approx(2 * 0.485 * 0.36 / (0.485 + 0.36))
    assert xlmr.aggregate_display == "41.33"
    assert table.rows[0].system == "XLM-R large"  # the best LEXTREME score first
    assert table.parts_from_dataset  # the page shows the dataset aggregate once, under its own name


def test_the_benchmark_page_shows_the_suite_table_with_gaps(client, suite, make_entry, alice, bob):
    bench, t1, t2 = suite
    make_entry(t1, alice, "BM25", {"R@10": 0.2})
    make_entry(t2, alice, "BM25", {"MAP@10": 0.6})
    make_entry(t1, bob, "Dense", {"R@10": 0.9})
    html = client.get(bench.get_absolute_url()).content.decode()
    assert 'id="suite-title"' in html and "harmonic mean across 2 datasets" in html
    assert "30.00" in html and "0.3000" not in html  # BM25's harmonic mean, in percent like every score
    assert "incomplete: no Tiny Two" in html
    assert "Systems missing a dataset get no aggregate." in html


def test_the_benchmark_page_has_no_suite_table_without_aggregate(client, tiny_dataset):
    html = client.get(tiny_dataset.benchmark.get_absolute_url()).content.decode()
    assert 'id="suite-title"' not in html


def test_the_lextreme_page_shows_the_score_and_both_aggregates(client):
    from catalogue.cards import cards_load

    cards_load()
    html = client.get("/b/lextreme/").content.decode()
    assert "LEXTREME score" in html and "language aggregate" in html
    assert "41.33" in html and "48.50" in html and "36.00" in html
    section = html[html.index('<section class="suite') : html.index("</section>", html.index('<section class="suite'))]
    assert section.count("48.50") == 1  # the dataset aggregate once, under its own name
