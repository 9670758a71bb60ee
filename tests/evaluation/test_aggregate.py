"""Suite aggregates: means, mean rank with ties, and the LEXTREME aggregate on a worked example."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import rankdata

from evaluation.aggregate import (
    ScoresFormatError,
    aggregate_table,
    arithmetic_mean,
    average_ranks,
    harmonic_mean,
    lextreme_aggregates,
)
from evaluation.cli import main

#: The papers' reported results as the site ships them (tests/catalogue/test_cards.py pins them to the reference).
REPORTED_RESULTS = Path(__file__).resolve().parents[2] / "catalogue" / "cards" / "reported_results.json"

# The worked example of docs/metrics.md: two datasets, A with one configuration
# in two languages, B with two configurations.
WORKED = {
    "A/default/de": 0.6,
    "A/default/fr": 0.3,
    "B/c1/de": 1.0,
    "B/c2/de": 0.5,
    "B/c2/fr": 0.5,
}


def hm(*xs):
    """Exact harmonic mean, for checking by hand."""
    return len(xs) / sum(1 / Fraction(x) for x in xs)


def test_lextreme_worked_example_by_hand():
    # dataset aggregate: languages first, then configurations, then datasets
    a = hm(hm(Fraction(6, 10), Fraction(3, 10)))  # A/default: HM(0.6, 0.3) = 0.4
    b = hm(hm(1), hm(Fraction(1, 2), Fraction(1, 2)))  # B: HM(c1 = 1.0, c2 = 0.5) = 2/3
    assert (a, b) == (Fraction(2, 5), Fraction(2, 3))
    dataset_aggregate = hm(a, b)
    assert dataset_aggregate == Fraction(1, 2)
    # language aggregate: configurations first (per dataset), then datasets, then languages
    de = hm(hm(Fraction(6, 10)), hm(1, Fraction(1, 2)))  # HM(A = 0.6, B = HM(1.0, 0.5) = 2/3) = 12/19
    fr = hm(hm(Fraction(3, 10)), hm(Fraction(1, 2)))  # HM(A = 0.3, B = 0.5) = 3/8
    assert (de, fr) == (Fraction(12, 19), Fraction(3, 8))
    language_aggregate = hm(de, fr)
    assert language_aggregate == Fraction(8, 17)
    score = hm(dataset_aggregate, language_aggregate)
    assert score == Fraction(16, 33)

    got = lextreme_aggregates(WORKED)
    assert got["dataset_aggregate"] == pytest.approx(0.5, abs=1e-12)
    assert got["language_aggregate"] == pytest.approx(8 / 17, abs=1e-12)
    assert got["score"] == pytest.approx(16 / 33, abs=1e-12)


def test_lextreme_aggregate_per_system_in_a_table():
    result = aggregate_table({"sys": WORKED}, method="lextreme")["sys"]
    assert result.value == pytest.approx(16 / 33)
    assert result.parts == {"dataset_aggregate": pytest.approx(0.5), "language_aggregate": pytest.approx(8 / 17)}
    assert result.to_dict()["dataset_aggregate"] == pytest.approx(0.5)
    assert not result.partial and result.n_cells == 5


scores = st.floats(min_value=0.01, max_value=1.0, allow_nan=False)
cell_names = st.tuples(st.sampled_from("XYZ"), st.sampled_from(["c1", "c2"]), st.sampled_from(["de", "fr", "it"]))


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(cell_names.map("/".join), scores, min_size=1, max_size=12))
def test_lextreme_aggregates_lie_between_the_smallest_and_largest_cell(table):
    got = lextreme_aggregates(table)
    lo, hi = min(table.values()), max(table.values())
    for key in ("dataset_aggregate", "language_aggregate"):
        assert lo - 1e-12 <= got[key] <= hi + 1e-12
    d, lang = got["dataset_aggregate"], got["language_aggregate"]
    assert min(d, lang) - 1e-12 <= got["score"] <= max(d, lang) + 1e-12


@settings(deadline=None)
@given(st.dictionaries(cell_names.map("/".join), st.just(0.42), min_size=1, max_size=12))
def test_lextreme_aggregates_of_equal_cells_are_that_value(table):
    assert all(v == pytest.approx(0.42) for v in lextreme_aggregates(table).values())


def reported_lextreme():
    return json.loads(REPORTED_RESULTS.read_text())["lextreme"]


def test_reported_lextreme_aggregates_have_the_structure_the_score_needs():
    # The paper reports the dataset and language aggregates per model; the
    # LEXTREME score is their harmonic mean, so it lies between them and below
    # their arithmetic mean; and in the reported table the language aggregate is
    # the lower of the two for every model (a weak language weighs on it directly).
    reported = reported_lextreme()
    dataset, language = reported["dataset_aggregate"], reported["language_aggregate"]
    assert set(dataset) == set(language)
    for model in dataset:
        d, lang = dataset[model], language[model]
        score = harmonic_mean([d, lang])
        assert min(d, lang) <= score <= (d + lang) / 2
        assert lang <= d
    # XLM-R large: 2 · 48.5 · 36.0 / 84.5 = 41.33
    assert harmonic_mean([dataset["XLM-R large"], language["XLM-R large"]]) == pytest.approx(41.3254, abs=1e-4)


def test_lextreme_refuses_cells_without_three_parts():
    with pytest.raises(ScoresFormatError) as exc:
        aggregate_table({"sys": {"A/de": 0.5, "A/default/fr": 0.4}}, method="lextreme")
    [problem] = exc.value.problems
    assert "'A/de' is not dataset/config/language" in problem.reason and "sys" in problem.reason


# --------------------------------------------------------------------------- means and ranks


def test_means_by_hand():
    assert arithmetic_mean([0.2, 0.4]) == pytest.approx(0.3)
    assert harmonic_mean([0.2, 0.4]) == pytest.approx(2 / (5 + 2.5))
    assert harmonic_mean([0.0, 0.9]) == 0.0
    with pytest.raises(ValueError):
        harmonic_mean([])
    with pytest.raises(ValueError):
        harmonic_mean([-0.1, 0.5])


def test_mean_rank_shares_the_mean_rank_among_ties():
    table = {
        "s1": {"x": 0.5, "y": 0.1},
        "s2": {"x": 0.5, "y": 0.3},
        "s3": {"x": 0.2, "y": 0.3},
    }
    # x: s1 and s2 tie for ranks 1-2 → 1.5 each, s3 → 3; y: s2 and s3 tie → 1.5, s1 → 3
    got = {s: a.value for s, a in aggregate_table(table, method="mean-rank").items()}
    assert got == {"s1": 2.25, "s2": 1.5, "s3": 2.25}


@settings(deadline=None)
@given(st.dictionaries(st.sampled_from("abcdefg"), st.sampled_from([0.1, 0.2, 0.3, 0.5]), min_size=1))
def test_average_ranks_agree_with_scipy(column):
    names = list(column)
    expected = rankdata([-column[n] for n in names], method="average")
    assert [average_ranks(column)[n] for n in names] == pytest.approx(list(expected))


def test_mean_and_harmonic_of_complete_rows():
    table = {"bm25": {"bsard": 0.2, "gbr": 0.6}, "dense": {"bsard": 0.4, "gbr": 0.4}}
    mean = aggregate_table(table, method="mean")
    harmonic = aggregate_table(table, method="harmonic")
    assert mean["bm25"].value == pytest.approx(0.4) and mean["dense"].value == pytest.approx(0.4)
    # the harmonic mean does not let bm25 hide its weak dataset
    assert harmonic["bm25"].value == pytest.approx(0.3) and harmonic["dense"].value == pytest.approx(0.4)


# --------------------------------------------------------------------------- gaps


@pytest.mark.parametrize("method", ["mean", "harmonic", "mean-rank", "lextreme"])
def test_a_system_missing_a_cell_gets_no_aggregate(method):
    table = {"full": dict(WORKED), "gappy": {k: v for k, v in WORKED.items() if k != "B/c2/fr"}}
    got = aggregate_table(table, method=method)
    assert got["full"].value is not None and not got["full"].partial
    assert got["gappy"].value is None
    assert got["gappy"].missing == ("B/c2/fr",)
    assert got["gappy"].partial  # marked, even without a value


def test_a_partial_aggregate_is_over_the_cells_present_and_marked():
    table = {"full": {"a": 0.2, "b": 0.6}, "gappy": {"a": 0.5, "b": None}}
    got = aggregate_table(table, method="mean", partial=True)
    assert got["gappy"].value == pytest.approx(0.5)
    assert got["gappy"].partial and got["gappy"].missing == ("b",) and got["gappy"].n_cells == 1
    assert not got["full"].partial


def test_explicit_cells_make_a_gap_of_a_column_no_system_has():
    got = aggregate_table({"s": {"a": 0.5}}, method="harmonic", cells=["a", "b"])
    assert got["s"].value is None and got["s"].missing == ("b",)


def test_it_refuses_bad_scores_naming_each():
    table = {"s1": {"a": "0.5", "b": -1, "c": True, "d": float("nan")}, "s2": [0.1]}
    with pytest.raises(ScoresFormatError) as exc:
        aggregate_table(table, method="mean")
    reasons = [p.reason for p in exc.value.problems]
    assert len(reasons) == 5
    assert "cell 'a': score '0.5' is not a finite number" in reasons[0]
    assert "negative" in reasons[1]
    assert "s2" in reasons[4]


def test_it_refuses_an_unknown_method_and_an_empty_table():
    with pytest.raises(ValueError, match="choose one of mean, harmonic, mean-rank, lextreme"):
        aggregate_table({"s": {"a": 1.0}}, method="median")
    with pytest.raises(ScoresFormatError):
        aggregate_table({}, method="mean")


# --------------------------------------------------------------------------- command line


def test_the_aggregate_command_prints_the_lextreme_parts_as_json(tmp_path, capsys):
    path = tmp_path / "scores.json"
    gappy = {k: v for k, v in WORKED.items() if k != "A/default/fr"}
    path.write_text(json.dumps({"full": WORKED, "gappy": gappy}))
    assert main(["aggregate", "--method", "lextreme", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["full"]["value"] == pytest.approx(16 / 33)
    assert out["full"]["dataset_aggregate"] == pytest.approx(0.5)
    assert out["full"]["language_aggregate"] == pytest.approx(8 / 17)
    assert out["gappy"] == {
        "method": "lextreme",
        "value": None,
        "partial": True,
        "missing": ["A/default/fr"],
        "n_cells": 4,
        "dataset_aggregate": None,
        "language_aggregate": None,
    }


def test_the_aggregate_command_marks_partial_rows_in_its_table(tmp_path, capsys):
    path = tmp_path / "scores.json"
    path.write_text(json.dumps({"bm25": {"bsard": 0.2, "gbr": 0.6}, "new": {"bsard": 0.5}}))
    assert main(["aggregate", "--method", "harmonic", "--partial", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "harmonic aggregate (higher is better)"
    assert lines[2].split() == ["bm25", "0.3000"]
    assert lines[3].split()[:2] == ["new", "0.5000"] and "partial over 1 cells; missing gbr" in lines[3]


def test_the_aggregate_command_exits_2_on_bad_input(tmp_path, capsys):
    path = tmp_path / "scores.json"
    path.write_text('{"s": {"a": 0.5,}}')
    assert main(["aggregate", "--method", "mean", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"{path}:1: not valid JSON")
    path.write_text('{"s": {"a": -0.5}}')
    assert main(["aggregate", "--method", "mean", str(path)]) == 2
    assert f"{path}: system 's', cell 'a': score -0.5 is negative" in capsys.readouterr().err


def test_python_m_evaluation_aggregate_runs_as_a_subprocess(tmp_path):
    import subprocess
    import sys

    (tmp_path / "scores.json").write_text(json.dumps({"example": WORKED}))
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "evaluation", "aggregate", "--method", "lextreme", "scores.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(repo)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[2].split() == ["example", "0.4848", "0.5000", "0.4706"]
