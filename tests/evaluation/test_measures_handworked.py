"""Hand-worked cases, one per measure, plus the edge cases of the contract.

The fixture (query q1), worked by hand:

    qrels: d1 grade 1, d2 grade 2, d3 grade 0 (judged non-relevant), d4 grade 1 -> R = 3
    run:   d5 4.0 (rank 1, unjudged), d1 3.0 (rank 2), d3 2.0 (rank 3), d2 1.0 (rank 4); d4 not retrieved
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluation import CorpusIds, Qrels, Run, RunFormatError, evaluate, parse_measure, parse_measures, recall_curve

QRELS = {"q1": {"d1": 1, "d2": 2, "d3": 0, "d4": 1}}
RUN = {"q1": {"d5": 4.0, "d1": 3.0, "d3": 2.0, "d2": 1.0}}
LOG2_3, LOG2_5 = math.log2(3), math.log2(5)

CASES = [
    ("R@2", 1 / 3),
    ("R@4", 2 / 3),
    ("P@2", 1 / 2),
    ("P@10", 2 / 10),  # divided by k even though only 4 were retrieved
    ("MAP@2", (1 / 2) / 3),
    ("MAP@4", (1 / 2 + 2 / 4) / 3),
    ("MRR@1", 0.0),
    ("MRR@2", 1 / 2),
    ("nDCG@1", 0.0),
    ("nDCG@4", (1 / LOG2_3 + 2 / LOG2_5) / (2 + 1 / LOG2_3 + 1 / 2)),
    ("RP", 1 / 3),  # top R = 3: d5, d1, d3 -> one relevant
    ("Success@1", 0.0),
    ("Success@2", 1.0),
]


def score(qrels, run, measures, **kw):
    return evaluate(Qrels.from_dict(qrels, threshold=kw.pop("threshold", 1)), Run.from_dict(run),
                    parse_measures(measures), **kw)


@pytest.mark.parametrize(("name", "expected"), CASES)
def test_it_computes_the_hand_worked_value(name, expected):
    ev = score(QRELS, RUN, [name])
    assert ev.per_query[name][0] == pytest.approx(expected, abs=1e-12)
    assert ev.means[name] == pytest.approx(expected, abs=1e-12)


def test_it_scores_an_empty_run_as_zero_with_a_warning():
    ev = evaluate(Qrels.from_dict(QRELS), Run.from_dict({}), parse_measures("R@10,MAP@10,nDCG@10,RP"))
    assert ev.qids == ["q1"]
    assert all(v == 0.0 for v in ev.means.values())
    assert [w.code for w in ev.warnings] == ["missing_queries"]
    assert ev.first_relevant_rank.tolist() == [0]


def test_it_leaves_out_queries_without_relevant_documents():
    qrels = {"q1": {"d1": 1}, "q2": {"d7": 0, "d8": -1}}
    ev = score(qrels, {"q1": {"d1": 1.0}, "q2": {"d7": 1.0}}, ["R@10", "MAP@10"])
    assert ev.qids == ["q1"]
    assert ev.means["R@10"] == 1.0


def test_it_returns_zero_means_when_no_query_has_a_relevant_document():
    qrels = Qrels.from_dict({"q1": {"d1": 0}})
    assert [n.code for n in qrels.notices] == ["no_relevant"]
    ev = evaluate(qrels, Run.from_dict({"q1": {"d1": 1.0}}), ["R@10", "nDCG@10"])
    assert ev.qids == [] and ev.means == {"R@10": 0.0, "nDCG@10": 0.0}


def test_it_breaks_all_tied_scores_by_docid_descending():
    run = {"q1": {"d1": 1.0, "d2": 1.0, "d3": 1.0, "d4": 1.0}}  # order: d4, d3, d2, d1
    ev = score(QRELS, run, ["R@1", "MRR@10", "P@2", "MAP@4"])
    assert ev.per_query["R@1"][0] == pytest.approx(1 / 3)
    assert ev.per_query["MRR@10"][0] == 1.0
    assert ev.per_query["P@2"][0] == 0.5
    assert ev.per_query["MAP@4"][0] == pytest.approx((1 + 2 / 3 + 3 / 4) / 3)
    assert ev.relevant_ranks[0].tolist() == [1, 3, 4]
    assert [w.code for w in ev.warnings] == ["ties"]


def test_it_compares_docids_as_strings_not_numbers():
    # As strings "9" > "10", so d "9" ranks first although 10 > 9 as numbers.
    ev = score({"q1": {"9": 1}}, {"q1": {"10": 1.0, "9": 1.0}}, ["MRR@10"])
    assert ev.per_query["MRR@10"][0] == 1.0


def test_it_avoids_zero_division_when_the_ideal_gain_is_zero():
    # Threshold 0 makes grade-0 documents relevant but they carry no gain.
    ev = score({"q1": {"d1": 0}}, {"q1": {"d1": 1.0}}, ["nDCG@10", "R@10", "P@10"], threshold=0)
    assert ev.per_query["nDCG@10"][0] == 0.0
    assert ev.per_query["R@10"][0] == 1.0
    assert ev.per_query["P@10"][0] == 0.1


def test_it_cuts_rows_beyond_the_depth_after_sorting():
    run = {"q1": {"d2": 1.0, "d1": 3.0, "d5": 4.0}}  # sorted: d5, d1, d2
    ev = score(QRELS, run, ["R@1000"], depth=2)
    assert ev.per_query["R@1000"][0] == pytest.approx(1 / 3)
    cut = [w for w in ev.warnings if w.code == "depth_cut"]
    assert cut and cut[0].count == 1


def test_it_ignores_unknown_queries_and_names_a_few():
    ev = score(QRELS, {**RUN, "zz": {"d1": 1.0}}, ["R@4"])
    assert ev.qids == ["q1"] and ev.means["R@4"] == pytest.approx(2 / 3)
    unknown = [w for w in ev.warnings if w.code == "unknown_queries"][0]
    assert unknown.count == 1 and "'zz'" in unknown.message


def test_it_never_puts_qrels_contents_in_warnings():
    qrels = {"secretq": {"secretdoc": 1}, "q1": {"d1": 1}}
    ev = score(qrels, {"q1": {"d1": 1.0}}, ["R@10"])
    text = " ".join(w.message for w in ev.warnings)
    assert "secret" not in text and ev.warnings[0].code == "missing_queries"


def test_it_averages_missing_queries_as_zero():
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    ev = score(qrels, {"q1": {"d1": 1.0}}, ["R@10"])
    assert ev.per_query["R@10"].tolist() == [1.0, 0.0]
    assert ev.means["R@10"] == 0.5


def test_it_counts_docids_outside_the_corpus_as_non_relevant():
    corpus = CorpusIds.from_iterable(["d2", "d3", "d4", "d5", "d6"])
    ev = evaluate(Qrels.from_dict(QRELS), Run.from_dict(RUN), ["R@4"], corpus=corpus)
    assert ev.per_query["R@4"][0] == pytest.approx(1 / 3)  # d1 is not in the corpus
    assert [w.code for w in ev.warnings] == ["unknown_docids"]


def test_it_refuses_a_run_whose_docids_mostly_miss_the_corpus():
    corpus = CorpusIds.from_iterable(["CivC::11", "CivC::12"])
    with pytest.raises(RunFormatError) as err:
        evaluate(Qrels.from_dict(QRELS), Run.from_dict(RUN), ["R@4"], corpus=corpus, docid_example="CivC::11")
    assert "id scheme" in str(err.value) and "CivC::11" in str(err.value)


def test_it_draws_a_recall_curve():
    ev = score(QRELS, RUN, ["R@4"])
    assert recall_curve(ev, 5).tolist() == pytest.approx([0, 1 / 3, 1 / 3, 2 / 3, 2 / 3])
    assert ev.first_relevant_rank.tolist() == [2]
    assert ev.judged_at_10.tolist() == [0.75]  # d1, d3, d2 judged among 4 shown


def test_it_gives_the_json_shape_of_the_command_line():
    ev = score(QRELS, RUN, ["R@2", "RP"])
    out = ev.to_json(per_query=True)
    assert out["measures"] == {"R@2": pytest.approx(1 / 3), "RP": pytest.approx(1 / 3)}
    assert out["queries"] == 1 and out["warnings"] == []
    assert out["per_query"] == {"q1": {"R@2": pytest.approx(1 / 3), "RP": pytest.approx(1 / 3)}}


def test_it_reports_progress():
    seen = []
    score(QRELS, RUN, ["R@2"], progress=seen.append)
    assert seen[-1] == 1.0 and seen == sorted(seen)


def test_it_declares_measures_as_data():
    m = parse_measure("MAP@100")
    assert (m.name, m.family, m.k, m.trec_eval) == ("MAP@100", "MAP", 100, "map_cut_100")
    assert parse_measure("MRR@10").trec_eval == "recip_rank (on the run cut at 10)"
    assert parse_measure("RP").k is None
    assert [x.name for x in parse_measures("R@100, MAP@100,R@100")] == ["R@100", "MAP@100"]


@pytest.mark.parametrize("bad", ["recall@10", "R@0", "R", "RP@10", "nDCG@x", ""])
def test_it_refuses_unknown_measures_clearly(bad):
    with pytest.raises(ValueError, match="measure"):
        parse_measures(bad) if bad == "" else parse_measure(bad)


def test_it_keeps_per_query_vectors_aligned_with_sorted_qids():
    qrels = {"b": {"x": 1}, "a": {"y": 1}, "c": {"z": 1}}
    ev = score(qrels, {"c": {"z": 1.0}, "a": {"q": 1.0}}, ["R@10"])
    assert ev.qids == ["a", "b", "c"]
    assert ev.per_query["R@10"].tolist() == [0.0, 0.0, 1.0]
    assert isinstance(ev.per_query["R@10"], np.ndarray)


def test_it_scores_the_same_whatever_the_line_order():
    from evaluation import read_qrels, read_run

    rng = np.random.default_rng(0)
    lines = []
    for q in range(5):
        scores = rng.integers(0, 4, size=30)  # many ties
        lines += [f"q{q} Q0 d{d} 0 {s}.5 t" for d, s in enumerate(scores)]
    qrels = read_qrels("".join(f"q{q} 0 d{d} {d % 3}\n" for q in range(5) for d in range(0, 30, 4)).encode())
    ranked = sorted(lines, key=lambda line: (line.split()[0], -float(line.split()[4]), [-ord(c) for c in line.split()[2]]))
    shuffled = list(lines)
    rng.shuffle(shuffled)
    results = []
    for variant in (lines, ranked, shuffled):  # grouped unsorted, ranked, ungrouped
        ev = evaluate(qrels, read_run(("\n".join(variant) + "\n").encode()), ["MAP@10", "nDCG@5", "R@3"], depth=20)
        results.append({k: v.tolist() for k, v in ev.per_query.items()})
    assert results[0] == results[1] == results[2]


def test_it_ties_scores_equal_in_single_precision_like_trec_eval():
    import warnings

    # 1.00000001 and 1.0 are the same C float; 1e39 and 1e40 both overflow to inf.
    for scores in ({"a": 1.0, "b": 1.00000001}, {"a": 1e40, "b": 1e39}):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ev = score({"q1": {"a": 1}}, {"q1": scores}, ["MRR@10"])
        assert ev.per_query["MRR@10"][0] == 0.5  # tie -> docid descending: b first
