"""bpref and the condensed-list measures (MAP'@k, nDCG'@k): hand-worked, then against trec_eval.

Hand-worked fixture (query q1), the same as test_measures_handworked:

    qrels: d1 grade 1, d2 grade 2, d3 grade 0, d4 grade 1 -> R = 3 relevant, N = 1 judged non-relevant
    run:   d5 (unjudged), d1, d3, d2; d4 not retrieved

bpref: d1 has no judged non-relevant above it -> 1; d2 has d3 above it -> 1 − min(1, 3) / min(1, 3) = 0;
bpref = (1 + 0) / 3. Condensed list (d5 removed): d1, d3, d2 at ranks 1, 2, 3.

The reference comparisons: pytrec_eval (``bpref``; ``map_cut``/``ndcg_cut`` with
``judged_docs_only_flag``, i.e. trec_eval -J) on hypothesis cases, and the
trec_eval 9.0.8 binary itself, built in a temporary directory from the source
tarball kept in the repository (``tests/data/reference/``); those tests skip,
saying why, when the tarball or a C compiler is missing.
"""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings, strategies as st

from evaluation import Qrels, Run, evaluate, parse_measure, parse_measures
from tests.evaluation.test_pytrec_eval_agreement import QIDS, SCORES, cut

QRELS = {"q1": {"d1": 1, "d2": 2, "d3": 0, "d4": 1}}
RUN = {"q1": {"d5": 4.0, "d1": 3.0, "d3": 2.0, "d2": 1.0}}
LOG2_3 = math.log2(3)
IDCG = 2 + 1 / LOG2_3 + 1 / 2  # grades 2, 1, 1 at ranks 1, 2, 3

CASES = [
    ("bpref", (1 + 0) / 3),
    ("MAP'@1", (1 / 1) / 3),
    ("MAP'@3", (1 / 1 + 2 / 3) / 3),
    ("MAP'@4", (1 / 1 + 2 / 3) / 3),
    ("nDCG'@1", 1 / 2),  # d1 (grade 1) at condensed rank 1; ideal has grade 2 there
    ("nDCG'@3", (1 + 2 / 2) / IDCG),  # d1 at 1, d2 (grade 2) at condensed rank 3: 2 / log2 4
]


def score(qrels, run, measures, *, threshold=1, depth=1000):
    return evaluate(Qrels.from_dict(qrels, threshold=threshold), Run.from_dict(run), measures, depth=depth)


@pytest.mark.parametrize("name,expected", CASES)
def test_it_computes_the_hand_worked_value(name, expected):
    assert score(QRELS, RUN, [name]).means[name] == pytest.approx(expected, abs=1e-12)


def test_condensed_measures_ignore_unjudged_documents_where_the_plain_ones_count_them_wrong():
    plain = score(QRELS, RUN, ["MAP@4"]).means["MAP@4"]
    assert plain == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert score(QRELS, RUN, ["MAP'@4"]).means["MAP'@4"] > plain


def test_bpref_counts_only_the_first_R_judged_nonrelevant():
    # R = 1, N = 3: with three judged non-relevant above it, min(3, 1) / min(3, 1) = 1 -> 0.
    qrels = {"q": {"r": 1, "n1": 0, "n2": 0, "n3": 0}}
    assert score(qrels, {"q": {"n1": 4, "n2": 3, "n3": 2, "r": 1}}, ["bpref"]).means["bpref"] == 0.0
    # One non-relevant above: 1 − min(1, 1) / min(3, 1) = 0 as well; none above: 1.
    assert score(qrels, {"q": {"n1": 2, "r": 1}}, ["bpref"]).means["bpref"] == 0.0
    assert score(qrels, {"q": {"x": 3, "r": 2, "n1": 1}}, ["bpref"]).means["bpref"] == 1.0


def test_bpref_with_more_relevant_than_nonrelevant_divides_by_N():
    # R = 3, N = 2: d_b has one non-relevant above -> 1 − 1/2; d_c two -> 1 − 2/2; d_a none -> 1.
    qrels = {"q": {"a": 1, "b": 1, "c": 1, "n1": 0, "n2": 0}}
    run = {"q": {"a": 5, "n1": 4, "b": 3, "n2": 2, "c": 1}}
    assert score(qrels, run, ["bpref"]).means["bpref"] == pytest.approx((1 + 0.5 + 0) / 3)


def test_a_negative_grade_is_unjudged_for_these_measures_as_in_trec_eval():
    # n has grade -1: "in the pool, not judged" -- neither a penalty for bpref nor kept in the condensed list.
    qrels = {"q": {"r": 1, "n": -1, "m": 0}}
    run = {"q": {"n": 2, "r": 1}}
    ev = score(qrels, run, ["bpref", "MAP'@1"])
    assert ev.means == {"bpref": 1.0, "MAP'@1": 1.0}


def test_edge_cases_empty_run_no_judged_nonrelevant_and_the_depth_cut():
    assert score(QRELS, {}, ["bpref", "MAP'@10", "nDCG'@10"]).means == {"bpref": 0.0, "MAP'@10": 0.0, "nDCG'@10": 0.0}
    assert score({"q": {"r": 1}}, {"q": {"r": 1.0}}, ["bpref"]).means["bpref"] == 1.0
    # Depth 1 keeps only d5 (unjudged): the condensed list is empty.
    assert score(QRELS, RUN, ["MAP'@10"], depth=1).means["MAP'@10"] == 0.0


def test_the_measures_are_declared_as_data_with_their_citation():
    for name in ("bpref", "MAP'@10", "nDCG′@10"):
        m = parse_measure(name)
        assert m.citation and m.formula and m.trec_eval
    assert parse_measure("nDCG′@10").name == "nDCG'@10"
    assert [m.name for m in parse_measures("bpref,MAP'@100")] == ["bpref", "MAP'@100"]
    with pytest.raises(ValueError, match="takes no cutoff"):
        parse_measure("bpref@10")
    with pytest.raises(ValueError, match="unknown measure"):
        parse_measure("R'@10")


# ---------------------------------------------------------------- against pytrec_eval

# A small docid universe and mostly non-relevant grades, so runs meet judged documents often and
# queries with more judged non-relevant than relevant documents (where min(N, R) matters) are common.
DOCS = [f"d{i}" for i in range(8)] + ["CivC::11"]
qrels_st = st.dictionaries(
    st.sampled_from(QIDS),
    st.dictionaries(st.sampled_from(DOCS), st.sampled_from([-1, 0, 0, 0, 1, 2, 3]), min_size=1, max_size=9),
    min_size=1, max_size=4)
run_st = st.dictionaries(
    st.sampled_from(QIDS + ["extra"]),
    st.dictionaries(st.sampled_from(DOCS + ["u1", "u2"]), SCORES, min_size=1, max_size=11),
    min_size=0, max_size=5)
K_VALUES = (1, 3, 10)
MEASURES = ["bpref"] + [f"MAP'@{k}" for k in K_VALUES] + [f"nDCG'@{k}" for k in K_VALUES]


def pytrec_reference(qrels, run, depth, threshold):
    evaluated = sorted(q for q, d in qrels.items() if any(g >= threshold for g in d.values()))
    run = {q: d for q, d in cut(run, depth).items() if d}
    plain = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}, relevance_level=threshold).evaluate(run)
    condensed = pytrec_eval.RelevanceEvaluator(
        qrels, {f"map_cut.{','.join(map(str, K_VALUES))}", f"ndcg_cut.{','.join(map(str, K_VALUES))}"},
        relevance_level=threshold, judged_docs_only_flag=True).evaluate(run)
    out = {}
    for q in evaluated:
        row = {"bpref": plain.get(q, {}).get("bpref", 0.0)}
        for k in K_VALUES:
            row[f"MAP'@{k}"] = condensed.get(q, {}).get(f"map_cut_{k}", 0.0)
            row[f"nDCG'@{k}"] = condensed.get(q, {}).get(f"ndcg_cut_{k}", 0.0)
        out[q] = row
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels=qrels_st, run=run_st, depth=st.sampled_from([1, 2, 5, 1000]), threshold=st.sampled_from([1, 2]))
def test_it_agrees_with_pytrec_eval_per_query(qrels, run, depth, threshold):
    ev = score(qrels, run, MEASURES, threshold=threshold, depth=depth)
    expected = pytrec_reference(qrels, run, depth, threshold)
    assert ev.qids == sorted(expected)
    for i, q in enumerate(ev.qids):
        for name in MEASURES:
            got = float(ev.per_query[name][i])
            assert math.isclose(got, expected[q][name], abs_tol=1e-9), (q, name, got, expected[q][name])


# ---------------------------------------------------------------- against the trec_eval binary

# trec_eval_binary: tests/evaluation/conftest.py builds it from the copy in tests/data/reference/.


def trec_eval_per_query(binary: Path, tmp: Path, qrels: dict, run: dict, measures: list[str], threshold: int,
                        judged_only: bool) -> dict[tuple[str, str], float]:
    # trec_eval 9.0.8 cannot compute bpref for a query whose grades are all negative (it has nothing
    # to count); such a query has no relevant document, so neither side evaluates it.
    qrels = {q: ds for q, ds in qrels.items() if max(ds.values()) >= 0}
    if not qrels:
        return {}
    (tmp / "qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items()))
    (tmp / "run").write_text("".join(f"{q} Q0 {d} {r} {s!r} t\n" for q, ds in run.items()
                                     for r, (d, s) in enumerate(ds.items(), start=1)))
    args = [str(binary), "-q", "-l", str(threshold)] + (["-J"] if judged_only else [])
    for m in measures:
        args += ["-m", m]
    done = subprocess.run(args + [str(tmp / "qrels"), str(tmp / "run")], capture_output=True, text=True, timeout=60)
    if done.returncode and "No queries with both results and relevance info" in done.stderr:
        return {}
    assert done.returncode == 0, done.stderr
    out = done.stdout
    values = {}
    for line in out.splitlines():
        name, qid, value = line.split()
        if qid != "all":
            values[(name, qid)] = float(value)
    return values


# Many small cases in one trec_eval call: each case's queries get a prefix.
cases_st = st.lists(st.tuples(qrels_st, run_st, st.sampled_from([1, 2, 5, 1000])), min_size=5, max_size=25)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(cases=cases_st, threshold=st.sampled_from([1, 2]))
def test_it_agrees_with_the_trec_eval_binary(trec_eval_binary, tmp_path, cases, threshold):
    all_qrels, all_run, ours = {}, {}, {}
    for c, (qrels, run, depth) in enumerate(cases):
        ev = score(qrels, run, MEASURES, threshold=threshold, depth=depth)
        for i, q in enumerate(ev.qids):
            ours[f"c{c}-{q}"] = {name: float(ev.per_query[name][i]) for name in MEASURES}
        all_qrels.update({f"c{c}-{q}": d for q, d in qrels.items()})
        all_run.update({f"c{c}-{q}": dict(sorted(d.items())) for q, d in cut(run, depth).items() if d})
    if not all_run:
        return
    ks = ",".join(map(str, K_VALUES))
    plain = trec_eval_per_query(trec_eval_binary, tmp_path, all_qrels, all_run, ["bpref"], threshold, False)
    condensed = trec_eval_per_query(trec_eval_binary, tmp_path, all_qrels, all_run,
                                    [f"map_cut.{ks}", f"ndcg_cut.{ks}"], threshold, True)
    for q, row in ours.items():
        expected = {"bpref": plain.get(("bpref", q), 0.0)}
        for k in K_VALUES:
            expected[f"MAP'@{k}"] = condensed.get((f"map_cut_{k}", q), 0.0)
            expected[f"nDCG'@{k}"] = condensed.get((f"ndcg_cut_{k}", q), 0.0)
        for name, got in row.items():
            # trec_eval prints four decimals.
            assert abs(got - expected[name]) <= 5e-5 + 1e-12, (q, name, got, expected[name])


def test_the_trec_eval_binary_scores_the_hand_worked_example(trec_eval_binary, tmp_path):
    got = trec_eval_per_query(trec_eval_binary, tmp_path, QRELS, RUN, ["bpref"], 1, False)
    assert got[("bpref", "q1")] == round((1 + 0) / 3, 4)
    assert np.isclose(score(QRELS, RUN, ["bpref"]).means["bpref"], got[("bpref", "q1")], atol=5e-5)
