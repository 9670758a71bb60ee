"""Double-entry scoring: the core's per-query values checked by a second, independent implementation."""

from __future__ import annotations

import dataclasses
import gzip
import subprocess
import sys

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings, strategies as st

from evaluation import CorpusIds, Qrels, Run, evaluate, parse_measures, read_qrels, read_run
from evaluation.measures import FAMILIES
from evaluation.reference import as_float32, ranked, read_plain_qrels, read_plain_run
from evaluation.verify import Disagreement, Part, verify

from .conftest import ROOT

MEASURES = parse_measures("R@1,R@5,P@1,P@5,MAP@3,MAP@10,MRR@1,MRR@3,MRR@10,nDCG@1,nDCG@5,RP,Success@1,Success@5,"
                          "bpref,MAP'@3,MAP'@10,nDCG'@1,nDCG'@5")
QIDS = [f"q{i}" for i in range(5)] + ["a-long-topic-identifier"]
DOCIDS = [f"d{i}" for i in range(10)] + ["CivC::11", "CivC::2", "a-docid-longer-than-16-bytes"]
SCORES = st.one_of(st.sampled_from([1.0, 2.0, 29.958970, 29.958969, 1.00000001, 1e39, -1e39]),
                   st.floats(min_value=-50, max_value=50, allow_nan=False))
qrels_st = st.dictionaries(st.sampled_from(QIDS), st.dictionaries(st.sampled_from(DOCIDS),
                           st.integers(min_value=-1, max_value=3), min_size=1, max_size=6), min_size=1, max_size=5)
run_st = st.dictionaries(st.sampled_from(QIDS + ["extra"]), st.dictionaries(st.sampled_from(DOCIDS), SCORES,
                         min_size=1, max_size=10), max_size=6)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels=qrels_st, run=run_st, depth=st.sampled_from([1, 3, 1000]), threshold=st.sampled_from([1, 2]),
       precision=st.sampled_from(["float32", "float64"]), empty=st.sampled_from(["omit", "count"]))
def test_both_implementations_agree_on_random_runs(qrels, run, depth, threshold, precision, empty):
    q, r = Qrels.from_dict(qrels, threshold=threshold), Run.from_dict(run)
    ev = evaluate(q, r, MEASURES, depth=depth, score_precision=precision, empty_queries=empty)
    check = verify(q, r, ev, depth=depth, score_precision=precision, empty_queries=empty)
    assert check.ok, str(check.disagreement)
    assert check.method == ("pytrec_eval" if precision == "float32" else "plain")
    if precision == "float32":  # the plain implementation agrees with pytrec_eval too
        assert verify(q, r, ev, depth=depth, empty_queries=empty, method="plain").ok


def sample() -> tuple[bytes, bytes]:
    qrels = b"q1 0 a 1\nq1 0 b 2\nq1 0 c 0\nq2 0 a 1\nq3 0 z 0\n"
    run = (b"q1 Q0 c 1 3.0 t\nq1 Q0 b 2 29.958969 t\nq1 Q0 a 3 29.958970 t\n"
           b"q2 Q0 b 1 1.0 t\nq2 Q0 a 2 0.5 t\n")
    return qrels, run


def test_it_returns_the_first_injected_disagreement_with_both_values():
    qrels_text, run_text = sample()
    qrels, run = read_qrels(qrels_text), read_run(run_text)
    ev = evaluate(qrels, run, MEASURES)
    assert verify(qrels, run, ev).ok
    tampered = {name: values.copy() for name, values in ev.per_query.items()}
    tampered["MAP@10"][1] += 1e-8  # q2
    tampered["nDCG@5"][1] = 0.0  # q2, a later measure
    bad = dataclasses.replace(ev, per_query=tampered)
    for method in ("pytrec_eval", "plain"):
        check = verify(qrels, run, bad, method=method)
        assert not check.ok
        assert check.disagreement == Disagreement("q2", "MAP@10", ev.per_query["MAP@10"][1] + 1e-8,
                                                  pytest.approx(ev.per_query["MAP@10"][1], abs=1e-15))
        assert "query 'q2', MAP@10" in str(check.disagreement)


def test_a_difference_below_the_tolerance_is_agreement():
    qrels, run = (read_qrels(sample()[0]), read_run(sample()[1]))
    ev = evaluate(qrels, run, MEASURES)
    tampered = {name: values + 1e-12 for name, values in ev.per_query.items()}
    assert verify(qrels, run, dataclasses.replace(ev, per_query=tampered)).ok


def test_it_flags_a_query_evaluated_on_one_side_only():
    qrels, run = read_qrels(sample()[0]), read_run(sample()[1])
    ev = evaluate(qrels, run, MEASURES)  # q3 has no relevant document: omitted
    check = verify(qrels, run, ev, empty_queries="count")  # the second side counts it
    assert check.disagreement == Disagreement("q3", "evaluated queries", 0.0, 1.0)


def test_a_core_that_ranked_in_the_wrong_precision_is_caught():
    qrels, run = read_qrels(sample()[0]), read_run(sample()[1])
    as_trec_eval_10 = evaluate(qrels, run, MEASURES, score_precision="float64")
    check = verify(qrels, run, as_trec_eval_10, score_precision="float32")
    assert check.disagreement is not None and check.disagreement.qid == "q1"
    assert verify(qrels, run, as_trec_eval_10, score_precision="float64").ok


def test_it_reads_the_files_again_itself(tmp_path):
    qrels_text, run_text = sample()
    (tmp_path / "qrels").write_bytes(qrels_text)
    (tmp_path / "run.gz").write_bytes(gzip.compress(b"\xef\xbb\xbf# a comment\n\n" + run_text))
    ev = evaluate(read_qrels(qrels_text), read_run(tmp_path / "run.gz"), MEASURES)
    for method in ("pytrec_eval", "plain"):
        assert verify(tmp_path / "qrels", tmp_path / "run.gz", ev, method=method).ok
    assert read_plain_run(tmp_path / "run.gz")["q1"]["b"] == 29.958969
    assert read_plain_qrels(tmp_path / "qrels")["q1"] == {"a": 1, "b": 2, "c": 0}


def test_documents_outside_the_corpus_are_unjudged_on_both_sides():
    qrels = read_qrels(b"q1 0 a 1\nq1 0 b 1\n")
    run = read_run(b"q1 Q0 a 1 3.0 t\nq1 Q0 b 2 2.0 t\nq1 Q0 c 3 1.0 t\nq1 Q0 d 4 1.0 t\n")
    corpus = CorpusIds.from_iterable(["b", "c", "d"])
    ev = evaluate(qrels, run, MEASURES, corpus=corpus)
    assert ev.per_query["MRR@10"].tolist() == [0.5]  # a is outside: non-relevant, still counted in |relevant|
    assert ev.per_query["R@5"].tolist() == [0.5]
    for method in ("pytrec_eval", "plain"):
        assert verify(qrels, run, ev, corpus=corpus, method=method).ok
        assert not verify(qrels, run, ev, method=method).ok  # without the rule the values differ


def test_pytrec_eval_cannot_verify_double_precision():
    qrels, run = read_qrels(sample()[0]), read_run(sample()[1])
    ev = evaluate(qrels, run, MEASURES, score_precision="float64")
    with pytest.raises(ValueError, match="single precision"):
        verify(qrels, run, ev, score_precision="float64", method="pytrec_eval")


def test_the_plain_order_is_trec_eval_order():
    assert as_float32(29.958970) == as_float32(29.958969)
    assert as_float32(1e39) == float("inf") and as_float32(-1e39) == float("-inf")
    docs = {"a": 29.958970, "b": 29.958969, "10": 5.0, "9": 5.0}
    assert ranked(docs, "float32") == ["b", "a", "9", "10"]
    assert ranked(docs, "float64") == ["a", "b", "9", "10"]


def test_the_cli_verifies_when_asked(tmp_path):
    qrels_text, run_text = sample()
    (tmp_path / "q").write_bytes(qrels_text)
    (tmp_path / "r").write_bytes(run_text)
    for precision in ("float32", "float64"):
        res = subprocess.run([sys.executable, "-m", "evaluation", "score", "--qrels", str(tmp_path / "q"), "--run",
                              str(tmp_path / "r"), "--verify", "--score-precision", precision], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        method = "pytrec_eval" if precision == "float32" else "plain"
        assert f"per-query values agree with {method} within 1e-9" in res.stderr


def test_evaluation_values_are_unchanged_by_verification():
    qrels, run = read_qrels(sample()[0]), read_run(sample()[1])
    ev = evaluate(qrels, run, MEASURES)
    before = {k: v.copy() for k, v in ev.per_query.items()}
    verify(qrels, run, ev)
    assert all(np.array_equal(before[k], ev.per_query[k]) for k in before)


def test_it_checks_a_run_a_few_queries_at_a_time_even_ungrouped(tmp_path, monkeypatch):
    """Batches of whole queries (a 7M-line run is never one dict); a query whose lines come back later is read again."""
    import evaluation.verify as verify_module

    qrels_text = b"".join(f"q{i} 0 d{j} {j % 3}\n".encode() for i in range(6) for j in range(4))
    lines = [f"q{i} Q0 d{j} {j} {10 - j}.5 t\n" for i in range(6) for j in range(5)]
    lines = lines[3:20] + lines[22:] + lines[20:22] + lines[:3]  # q4 and q0 come back, q0 after its batch
    (tmp_path / "run").write_text("".join(lines))
    qrels, run = read_qrels(qrels_text), read_run(tmp_path / "run")
    ev = evaluate(qrels, run, MEASURES)
    monkeypatch.setattr(verify_module, "BATCH_ROWS", 4)
    seen = []
    batches = verify_module._run_batches(str(tmp_path / "run"))
    for batch in batches:
        seen.append(sorted(batch))
    assert max(len(b) for b in seen) <= 2 and sorted(q for b in seen for q in b if q not in ("q0", "q4")) == \
        ["q1", "q2", "q3", "q5"]
    assert seen[-1] == ["q0"]  # q0 came back after its batch: read again whole (q4 came back within its batch)
    assert ev.qids[0] == "q0"
    tampered = {name: values.copy() for name, values in ev.per_query.items()}
    tampered["R@5"][0] += 0.25  # q0
    for source in (str(tmp_path / "run"), run, run.to_dict()):
        for method in ("pytrec_eval", "plain"):
            assert verify(qrels, source, ev, method=method).ok
            bad = verify(qrels, source, dataclasses.replace(ev, per_query=tampered), method=method)
            assert bad.disagreement is not None and (bad.disagreement.qid, bad.disagreement.measure) == ("q0", "R@5")


@pytest.mark.parametrize("compress", [False, True], ids=["text", "gzip"])
def test_it_reads_a_stored_file_through_a_function_that_opens_it(compress, tmp_path):
    qrels_text, run_text = sample()
    path = tmp_path / "run"
    path.write_bytes(gzip.compress(run_text) if compress else run_text)
    opened = []

    def opener():
        opened.append(open(path, "rb"))  # noqa: SIM115 (closed by the reader: checked below)
        return opened[-1]

    qrels = read_qrels(qrels_text)
    ev = evaluate(qrels, read_run(run_text), MEASURES)
    assert verify(qrels, opener, ev).ok
    reversed_scores = dataclasses.replace(ev, per_query={n: v[::-1].copy() for n, v in ev.per_query.items()})
    assert not verify(qrels, opener, reversed_scores).ok
    assert opened and all(f.closed for f in opened)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_has_a_kernel_a_plain_loop_and_a_trec_eval_twin_and_each_checks_it(family):
    declared = FAMILIES[family]
    assert callable(declared.kernel) and callable(declared.reference)
    assert declared.twin.replace("_{k}", "") in pytrec_eval.supported_measures
    measure = parse_measures(f"{family}@3" if declared.takes_k else family)
    qrels_text, run_text = sample()
    qrels, run = read_qrels(qrels_text), read_run(run_text)
    ev = evaluate(qrels, run, measure)
    assert ev.per_query[measure[0].name].any()  # some value to get wrong
    tampered = dataclasses.replace(ev, per_query={measure[0].name: ev.per_query[measure[0].name] + 0.125})
    for method in ("pytrec_eval", "plain"):
        assert verify(qrels, run_text, ev, method=method).ok
        assert verify(qrels, run_text, tampered, method=method).disagreement.measure == measure[0].name


# ---------------------------------------------------------------- the means, recomputed by the second implementation


def _means_and_values(empty: str) -> tuple[Qrels, Run, object]:
    qrels_text = b"q1 0 a 1\nq1 0 b 2\nq2 0 a 1\nq3 0 z 0\nq4 0 x 1\nq5 0 y 1\n"
    run_text = b"q1 Q0 b 1 3.0 t\nq1 Q0 c 2 2.0 t\nq1 Q0 a 3 1.0 t\nq2 Q0 b 1 1.0 t\nq2 Q0 a 2 0.5 t\nq3 Q0 z 1 1 t\n" \
               b"q5 Q0 y 1 1 t\n"  # q4 not in the run
    qrels, run = read_qrels(qrels_text), read_run(run_text)
    return qrels, run, evaluate(qrels, run, MEASURES, empty_queries=empty)


@pytest.mark.parametrize("empty", ["omit", "count", "trec_eval"])
@pytest.mark.parametrize("method", ["pytrec_eval", "plain"])
def test_every_mean_is_recomputed_from_the_second_implementations_own_values(empty, method):
    qrels, run, ev = _means_and_values(empty)
    check = verify(qrels, run, ev, empty_queries=empty, method=method)
    assert check.ok and check.means and check.measures == tuple(m.name for m in MEASURES)
    n = len(ev.qids)  # omit 4 (q3 left out, q4 at 0), count 5, trec_eval 4 (q4 not averaged, q3 is)
    assert n == {"omit": 4, "count": 5, "trec_eval": 4}[empty]
    wrong = {**ev.means, "R@5": float(ev.per_query["R@5"].sum()) / (n + 1)}  # sum/(n+1)
    found = verify(qrels, run, ev, empty_queries=empty, method=method, means=wrong).disagreement
    assert (found.qid, found.measure, found.core) == ("(mean)", "R@5", wrong["R@5"])
    assert found.reference == pytest.approx(ev.means["R@5"], abs=1e-15)
    dropped = {**ev.means, "MRR@10": float(ev.per_query["MRR@10"][:-1].mean())}  # one query left out of the mean
    found = verify(qrels, run, ev, empty_queries=empty, method=method, means=dropped).disagreement
    assert (found.qid, found.measure) == ("(mean)", "MRR@10")
    assert "(mean), MRR@10: the core gives" in str(found)
    # A mean the evaluation holds but the caller stores differently is what is checked: the stored one.
    assert verify(qrels, run, dataclasses.replace(ev, means=wrong), empty_queries=empty, method=method).disagreement


def test_a_mean_missing_from_what_is_stored_is_a_disagreement():
    qrels, run, ev = _means_and_values("omit")
    means = {k: v for k, v in ev.means.items() if k != "bpref"}
    assert verify(qrels, run, ev, means=means).disagreement.measure == "bpref (no mean stored)"


def test_a_parts_mean_is_recomputed_over_the_parts_topics():
    qrels, run, ev = _means_and_values("count")
    public = {"q1", "q4"}
    values = ev.per_query_dict()

    def part(name, inside, mask=None):
        qs = [q for q in ev.qids if inside(q)]
        use = qs if mask is None else [q for q in ev.qids if mask(q)]
        return Part(name, inside, {m.name: float(np.mean([values[q][m.name] for q in use])) for m in MEASURES},
                    len(qs))

    right = [part("public", public.__contains__), part("private", lambda q: q not in public),
             part("full", lambda q: True)]
    check = verify(qrels, run, ev, empty_queries="count", parts=right)
    assert check.ok and check.parts == ("public", "private", "full")
    assert check.record(source="trec")["parts"] == ["public", "private", "full"]
    # The private part's means computed on the public topics (its count right).
    wrong = [right[0], part("private", lambda q: q not in public, mask=public.__contains__), right[2]]
    found = verify(qrels, run, ev, empty_queries="count", parts=wrong).disagreement
    assert found.qid == "(mean of the private part)" and found.measure in {m.name for m in MEASURES}
    miscounted = [dataclasses.replace(right[0], n_queries=3)]
    found = verify(qrels, run, ev, empty_queries="count", parts=miscounted).disagreement
    assert found == Disagreement("(mean of the public part)", "evaluated queries", 3.0, 2.0)
