"""Property tests: per-query values equal pytrec_eval's (trec_eval 9) within 1e-9.

On the pytrec_eval side we apply the leaderboard's rules ourselves: the run is
cut at the depth in trec_eval's order, MRR@k is ``recip_rank`` on the run cut at
k, queries without a relevant document are left out, and evaluated queries the
run lacks score 0 (trec_eval ``-c``).
"""

from __future__ import annotations

import math

import numpy as np
import pytrec_eval
from hypothesis import HealthCheck, given, settings, strategies as st

from evaluation import Qrels, Run, evaluate, parse_measures, read_qrels, read_run

MEASURES = parse_measures("R@1,R@3,R@10,P@1,P@3,P@10,MAP@2,MAP@10,MRR@1,MRR@3,MRR@10,"
                          "nDCG@1,nDCG@3,nDCG@10,RP,Success@1,Success@3")
TREC_NAME = {"R": "recall_{k}", "P": "P_{k}", "MAP": "map_cut_{k}", "nDCG": "ndcg_cut_{k}", "RP": "Rprec",
             "Success": "success_{k}"}

QIDS = [f"q{i}" for i in range(6)] + ["topic-with-a-long-identifier"]
DOCIDS = [f"d{i}" for i in range(12)] + ["CivC::11", "CivC::2", "a-docid-longer-than-16-bytes", "Z"]
# Equal scores, scores equal only in single precision (1.00000001), and scores
# beyond a C float's range (1e39, 1e40 -> inf in trec_eval) all decide ties.
SCORES = st.one_of(st.sampled_from([0.0, 1.0, 1.5, 2.0, -1.0, 1.00000001, 1e39, 1e40, -1e39]),
                   st.floats(min_value=-50, max_value=50, allow_nan=False, allow_infinity=False))

qrels_st = st.dictionaries(
    st.sampled_from(QIDS),
    st.dictionaries(st.sampled_from(DOCIDS), st.integers(min_value=-1, max_value=3), min_size=1, max_size=8),
    min_size=1, max_size=5)
run_st = st.dictionaries(
    st.sampled_from(QIDS + ["extra1", "extra2"]),
    st.dictionaries(st.sampled_from(DOCIDS), SCORES, min_size=1, max_size=12),
    min_size=0, max_size=6)


def trec_order(docs: dict[str, float]) -> list[tuple[str, float]]:
    """Score descending (as C floats, which trec_eval stores), then docid descending."""
    with np.errstate(over="ignore"):  # 1e39 -> inf, as C's cast to float gives
        return sorted(docs.items(), key=lambda kv: (float(np.float32(kv[1])), kv[0]), reverse=True)


def cut(run: dict, depth: int) -> dict:
    return {q: dict(trec_order(d)[:depth]) for q, d in run.items()}


def reference(qrels: dict, run: dict, depth: int, threshold: int) -> dict[str, dict[str, float]]:
    """Per-query values from pytrec_eval under the leaderboard's rules."""
    evaluated = sorted(q for q, d in qrels.items() if any(g >= threshold for g in d.values()))
    run = {q: d for q, d in cut(run, depth).items() if d}
    names = set()
    for m in MEASURES:
        if m.family == "RP":
            names.add("Rprec")
        elif m.family != "MRR":
            names.add(TREC_NAME[m.family].format(k="").rstrip("_") + f".{m.k}")
    base = pytrec_eval.RelevanceEvaluator(qrels, names, relevance_level=threshold).evaluate(run)
    out: dict[str, dict[str, float]] = {}
    for q in evaluated:
        row = {}
        for m in MEASURES:
            if m.family == "MRR":
                cut_run = {q: dict(trec_order(run[q])[:m.k])} if q in run else {}
                res = pytrec_eval.RelevanceEvaluator({q: qrels[q]}, {"recip_rank"},
                                                     relevance_level=threshold).evaluate(cut_run)
                row[m.name] = res.get(q, {}).get("recip_rank", 0.0)
            else:
                key = TREC_NAME[m.family].format(k=m.k)
                row[m.name] = base.get(q, {}).get(key, 0.0)
        out[q] = row
    return out


def as_text(run: dict, seps: list[str], crlf: bool, shuffle=None) -> bytes:
    """A run as a TREC file with varied separators, scores written exactly (repr), lines maybe shuffled."""
    lines = []
    i = 0
    for q, docs in run.items():
        for rank, (d, score) in enumerate(docs.items(), start=1):
            sep = seps[i % len(seps)]
            i += 1
            lines.append(sep.join([q, "Q0", d, str(rank), repr(score), "tag"]))
    if shuffle is not None:
        shuffle.shuffle(lines)
    end = "\r\n" if crlf else "\n"
    return "".join(line + end for line in lines).encode()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels=qrels_st, run=run_st, depth=st.sampled_from([1, 2, 3, 5, 1000]), threshold=st.sampled_from([1, 2]),
       via_text=st.booleans(), seps=st.lists(st.sampled_from([" ", "\t", "  ", " \t "]), min_size=1, max_size=3),
       crlf=st.booleans(), shuffle=st.one_of(st.none(), st.randoms(use_true_random=False)))
def test_it_agrees_with_pytrec_eval_per_query(qrels, run, depth, threshold, via_text, seps, crlf, shuffle):
    if via_text and any(run.values()):
        parsed_run = read_run(as_text(run, seps, crlf, shuffle))
        qrels_text = "".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items()).encode()
        parsed_qrels = read_qrels(qrels_text, threshold=threshold)
    else:
        parsed_run, parsed_qrels = Run.from_dict(run), Qrels.from_dict(qrels, threshold=threshold)
    ev = evaluate(parsed_qrels, parsed_run, MEASURES, depth=depth)
    expected = reference(qrels, run, depth, threshold)
    assert ev.qids == sorted(expected)
    for i, q in enumerate(ev.qids):
        for m in MEASURES:
            got = float(ev.per_query[m.name][i])
            assert math.isclose(got, expected[q][m.name], abs_tol=1e-9), (q, m.name, got, expected[q][m.name])
    for m in MEASURES:
        mean = float(np.mean([expected[q][m.name] for q in expected])) if expected else 0.0
        assert math.isclose(ev.means[m.name], mean, abs_tol=1e-9)


def _bsard_recipe(qrels: dict[str, set[str]], ranked: dict[str, list[str]], k: int) -> dict[str, tuple]:
    """BSARD's scoring recipe, written independently: R@k, AP@k / |relevant|, RR@k per query."""
    out = {}
    for q, relevant in qrels.items():
        top = ranked.get(q, [])[:k]
        hits = [i for i, d in enumerate(top, start=1) if d in relevant]
        recall = len(hits) / len(relevant)
        ap = sum((n + 1) / i for n, i in enumerate(hits)) / len(relevant)
        rr = 1.0 / hits[0] if hits else 0.0
        out[q] = (recall, ap, rr)
    return out


@settings(max_examples=60, deadline=None)
@given(qrels=st.dictionaries(st.sampled_from(QIDS), st.sets(st.sampled_from(DOCIDS), min_size=1, max_size=6),
                             min_size=1, max_size=5),
       run=st.dictionaries(st.sampled_from(QIDS), st.lists(st.sampled_from(DOCIDS), unique=True, min_size=1),
                           max_size=6),
       k=st.sampled_from([1, 2, 5, 100]))
def test_it_agrees_with_the_bsard_recipe(qrels, run, k):
    # The BSARD recipe ranks by list position, so give strictly decreasing scores.
    scored = {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in run.items()}
    ev = evaluate(Qrels.from_dict({q: {d: 1 for d in ds} for q, ds in qrels.items()}), Run.from_dict(scored),
                  [f"R@{k}", f"MAP@{k}", f"MRR@{k}"])
    expected = _bsard_recipe(qrels, run, k)
    for i, q in enumerate(ev.qids):
        got = (ev.per_query[f"R@{k}"][i], ev.per_query[f"MAP@{k}"][i], ev.per_query[f"MRR@{k}"][i])
        assert np.allclose(got, expected[q], atol=1e-12, rtol=0), (q, got, expected[q])
