"""Score precision (trec_eval 9.x float vs trec_eval 10 double) and the empty-query convention.

Hand-worked cases for both trec_eval versions, and random near-tie runs
against a real trec_eval 9.0.8 binary (built from the reference source, or
skipped with the reason).
"""

from __future__ import annotations

import math
import random
import subprocess
import sys

import numpy as np
import pytest

from evaluation import evaluate, read_qrels, read_run
from evaluation.scoring import rank_rows

from .conftest import ROOT

# a scores 29.958970 and b 29.958969: equal as C floats (one float apart is 1.9e-6 here), not as doubles.
NEAR_TIE_RUN = b"q1 Q0 a 1 29.958970 t\nq1 Q0 b 2 29.958969 t\n"
NEAR_TIE_QRELS = b"q1 0 a 1\n"


def test_it_ties_near_equal_scores_in_single_precision_as_trec_eval_9():
    ev = evaluate(read_qrels(NEAR_TIE_QRELS), read_run(NEAR_TIE_RUN), "MRR@10,P@1,Success@1",
                  score_precision="float32")
    # A tie in float32, broken by docid descending: b first, the relevant a second.
    assert ev.per_query["MRR@10"].tolist() == [0.5]
    assert ev.per_query["P@1"].tolist() == [0.0]
    assert ev.per_query["Success@1"].tolist() == [0.0]
    assert "ties" in [w.code for w in ev.warnings]


def test_it_orders_near_equal_scores_by_value_in_double_precision_as_trec_eval_10():
    ev = evaluate(read_qrels(NEAR_TIE_QRELS), read_run(NEAR_TIE_RUN), "MRR@10,P@1,Success@1",
                  score_precision="float64")
    assert ev.per_query["MRR@10"].tolist() == [1.0]
    assert ev.per_query["P@1"].tolist() == [1.0]
    assert ev.per_query["Success@1"].tolist() == [1.0]
    assert "ties" not in [w.code for w in ev.warnings]


def test_double_precision_still_breaks_exact_ties_by_docid():
    run = read_run(b"q1 Q0 a 1 29.958970 t\nq1 Q0 b 2 29.958970 t\nq1 Q0 c 3 29.958969 t\n")
    rank, ties, _, _ = rank_rows(run, 1000, score_precision="float64")
    assert rank.tolist() == [2, 1, 3]  # b, a (tied, docid descending), then c
    assert ties is not None
    rank32, _, _, _ = rank_rows(run, 1000, score_precision="float32")
    assert rank32.tolist() == [3, 2, 1]  # all three tied in float32: c, b, a


def test_it_sorts_an_unranked_run_in_double_precision():
    run = read_run(b"q1 Q0 c 1 29.958969 t\nq1 Q0 a 2 29.958970 t\nq1 Q0 b 3 29.0 t\n")
    assert rank_rows(run, 1000, score_precision="float64")[0].tolist() == [2, 1, 3]  # a, c, b
    assert rank_rows(run, 1000, score_precision="float32")[0].tolist() == [1, 2, 3]  # c, a (tied), b


def test_it_refuses_an_unknown_precision_or_convention():
    qrels, run = read_qrels(NEAR_TIE_QRELS), read_run(NEAR_TIE_RUN)
    with pytest.raises(ValueError, match="float32 .* or float64"):
        evaluate(qrels, run, score_precision="double")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="omit .*, count .* or trec_eval"):
        evaluate(qrels, run, empty_queries="zero")  # type: ignore[arg-type]


def thirty_one_queries() -> tuple[bytes, bytes]:
    """The docs' example: 31 judged queries, 30 with a relevant document found at rank 1, one with none."""
    qrels = "".join(f"q{i:02d} 0 d{i} 1\n" for i in range(30)) + "q30 0 x 0\n"
    run = "".join(f"q{i:02d} Q0 d{i} 1 1.0 t\n" for i in range(31))
    return qrels.encode(), run.encode()


def test_empty_queries_are_left_out_by_default():
    qrels, run = thirty_one_queries()
    ev = evaluate(read_qrels(qrels), read_run(run), "R@100,MRR@10,nDCG@10")
    assert len(ev.qids) == 30
    assert ev.means == {"R@100": 1.0, "MRR@10": 1.0, "nDCG@10": 1.0}


def test_empty_queries_count_as_zero_when_asked_as_trec_eval_c():
    qrels, run = thirty_one_queries()
    ev = evaluate(read_qrels(qrels), read_run(run), "R@100,MAP@100,MRR@10,nDCG@10,RP,P@1",
                  empty_queries="count")
    assert len(ev.qids) == 31
    assert ev.means["R@100"] == pytest.approx(30 / 31)
    assert ev.means["P@1"] == pytest.approx(30 / 31)
    row = ev.qids.index("q30")
    assert [float(ev.per_query[m.name][row]) for m in ev.measures] == [0.0] * 6
    assert "empty_queries_counted" in [w.code for w in ev.warnings]


def test_a_counted_empty_query_keeps_its_ndcg_from_grades_below_the_threshold():
    # Threshold 2: d is graded 1, not relevant, yet a gain for nDCG (trec_eval -l2 gives 1.0 too).
    ev = evaluate(read_qrels(b"q1 0 d 1\n", threshold=2), read_run(b"q1 Q0 d 1 1.0 t\n"), "nDCG@10,R@10",
                  empty_queries="count")
    assert ev.per_query["nDCG@10"].tolist() == [1.0]
    assert ev.per_query["R@10"].tolist() == [0.0]


# ---------------------------------------------------------------- against trec_eval 9.0.8


def _trec_eval(binary: str, qrels: bytes, run: bytes, tmp_path, *extra: str) -> dict[tuple[str, str], float]:
    (tmp_path / "q").write_bytes(qrels)
    (tmp_path / "r").write_bytes(run)
    out = subprocess.run([binary, "-q", *extra, "-m", "recip_rank", "-m", "P.1,5", "-m", "ndcg_cut.5",
                          "-m", "map_cut.10", "-m", "recall.5", str(tmp_path / "q"), str(tmp_path / "r")],
                         capture_output=True, text=True, check=True).stdout
    values = {}
    for line in out.splitlines():
        name, qid, value = line.split()
        values[(qid, name)] = float(value)
    return values


OURS = {"recip_rank": "MRR@1000", "P_1": "P@1", "P_5": "P@5", "ndcg_cut_5": "nDCG@5", "map_cut_10": "MAP@10",
        "recall_5": "R@5"}


def near_tie_case(seed: int) -> tuple[bytes, bytes]:
    """Scores around 30 with six decimals, many one or two millionths apart: ties in float32 only."""
    rng = random.Random(seed)
    run_lines, qrels_lines = [], []
    for q in range(8):
        docs = rng.sample(range(100), 12)
        base = 20 + rng.random() * 20
        for rank, d in enumerate(docs, start=1):
            score = base + rng.choice([0, 1, 2, 3, 50]) * 1e-6 - rank * rng.choice([0, 1e-6, 1e-3])
            run_lines.append(f"q{q} Q0 D{d} {rank} {score:.6f} t\n")
        for d in rng.sample(docs, 3) + [100 + q]:
            qrels_lines.append(f"q{q} 0 D{d} {rng.choice([0, 1, 2])}\n")
    qrels_lines.append("q9 0 D1 0\n")  # a judged query without a relevant document
    return "".join(qrels_lines).encode(), "".join(run_lines).encode()


@pytest.mark.parametrize("seed", range(12))
def test_float32_equals_trec_eval_9_on_near_ties(trec_eval_binary, tmp_path, seed):
    qrels, run = near_tie_case(seed)
    expected = _trec_eval(trec_eval_binary, qrels, run, tmp_path, "-c")
    ev = evaluate(read_qrels(qrels), read_run(run), list(OURS.values()), score_precision="float32",
                  empty_queries="count")
    checked = 0
    for i, q in enumerate(ev.qids):
        for name, ours in OURS.items():
            if (q, name) in expected:  # trec_eval -q leaves out queries the run lacks
                assert math.isclose(float(ev.per_query[ours][i]), expected[(q, name)], abs_tol=5.1e-5), (q, name)
                checked += 1
    assert checked >= 40
    # The averages (trec_eval -c counts every qrels query, as empty_queries="count" does).
    for name, ours in OURS.items():
        assert math.isclose(ev.means[ours], expected[("all", name)], abs_tol=5.1e-5), name


def test_the_near_tie_cases_do_tell_the_precisions_apart():
    differing = 0
    for seed in range(12):
        qrels, run = near_tie_case(seed)
        a = evaluate(read_qrels(qrels), read_run(run), list(OURS.values()), score_precision="float32")
        b = evaluate(read_qrels(qrels), read_run(run), list(OURS.values()), score_precision="float64")
        differing += sum(int(np.any(a.per_query[m] != b.per_query[m])) for m in OURS.values())
    assert differing > 0


def test_trec_eval_9_ties_the_docs_example(trec_eval_binary, tmp_path):
    values = _trec_eval(trec_eval_binary, NEAR_TIE_QRELS, NEAR_TIE_RUN, tmp_path)
    assert values[("q1", "recip_rank")] == 0.5  # and trec_eval 10 gives 1.0: the docs' example


def test_omit_and_count_match_trec_eval_without_and_with_c(trec_eval_binary, tmp_path):
    qrels, run = thirty_one_queries()
    run = b"".join(line + b"\n" for line in run.splitlines() if not line.startswith(b"q30"))
    counted = _trec_eval(trec_eval_binary, qrels, run, tmp_path, "-c")
    ev = evaluate(read_qrels(qrels), read_run(run), "MRR@1000,R@5", empty_queries="count")
    assert math.isclose(ev.means["MRR@1000"], counted[("all", "recip_rank")], abs_tol=5.1e-5)
    assert counted[("all", "recip_rank")] == pytest.approx(30 / 31, abs=5.1e-5)
    assert evaluate(read_qrels(qrels), read_run(run), "MRR@1000").means["MRR@1000"] == 1.0


# ---------------------------------------------------------------- the command line


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evaluation", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_the_cli_takes_both_choices(tmp_path):
    (tmp_path / "q").write_bytes(NEAR_TIE_QRELS)
    (tmp_path / "r").write_bytes(NEAR_TIE_RUN)
    args = ["score", "--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r"), "--measures", "MRR@10", "--json"]
    single = cli(*args)
    double = cli(*args, "--score-precision", "float64")
    assert '"MRR@10": 0.5' in single.stdout and '"score_precision": "float32"' in single.stdout
    assert '"MRR@10": 1.0' in double.stdout and '"score_precision": "float64"' in double.stdout
    bad = cli(*args, "--empty-queries", "zero")
    assert bad.returncode == 2 and "invalid choice: 'zero'" in bad.stderr


def averaging_case(seed: int) -> tuple[bytes, bytes]:
    """12 qrels queries, some with only grade-0 judgments; the run lacks some and has queries the qrels lack."""
    rng = random.Random(seed)
    qrels_lines, run_lines = [], []
    for q in range(12):
        judged = rng.sample(range(30), 6)
        empty = rng.random() < 0.3
        qrels_lines += [f"q{q} 0 d{d} {0 if empty else rng.choice([0, 1, 2])}\n" for d in judged]
        if rng.random() < 0.75:
            run_lines += [f"q{q} Q0 d{d} {r} {20 - r} t\n" for r, d in enumerate(rng.sample(range(30), 10), start=1)]
    run_lines += [f"extra Q0 d{d} {d + 1} {10 - d} t\n" for d in range(3)]
    return "".join(qrels_lines).encode(), "".join(run_lines).encode()


@pytest.mark.parametrize("seed", range(12))
def test_the_averaging_presets_equal_plain_trec_eval_and_trec_eval_c(trec_eval_binary, tmp_path, seed):
    qrels, run = averaging_case(seed)
    plain = _trec_eval(trec_eval_binary, qrels, run, tmp_path)
    with_c = _trec_eval(trec_eval_binary, qrels, run, tmp_path, "-c")
    for convention, expected in (("trec_eval", plain), ("count", with_c)):
        ev = evaluate(read_qrels(qrels), read_run(run), list(OURS.values()), empty_queries=convention)
        if convention == "trec_eval":  # the queries trec_eval prints, neither more nor fewer
            assert ev.qids == sorted({q for q, _ in expected if q != "all"})
        for theirs, ours in OURS.items():
            assert f"{ev.means[ours]:.4f}" == f"{expected[('all', theirs)]:.4f}", (convention, ours)
