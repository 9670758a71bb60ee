"""Pools: depth-k, RBP-weighted and move-to-front orders worked by hand; statistics; the
leave-one-run-out bias test; export and import of pools and judgments.

Runs (query q1; scores make the order A: a b c d, B: b e a, C: f b):

    A: a(1) b(2) c(3) d(4)      B: b(1) e(2) a(3)      C: f(1) b(2)

Query q2 is answered by A only: x(1) y(2). Document a of q1 is judged already.
"""

from __future__ import annotations

import io

import pytest

from evaluation import Qrels, Run
from evaluation.pool_files import JudgmentFormatError, read_judgments, write_pool_csv, write_pool_trec
from evaluation.pooling import depth_pool, leave_one_run_out, mtf_order, mtf_pool, rbp_pool


def ranked(*docids: str) -> dict[str, float]:
    return {d: float(len(docids) - i) for i, d in enumerate(docids)}


RUNS = {
    "A": Run.from_dict({"q1": ranked("a", "b", "c", "d"), "q2": ranked("x", "y")}),
    "B": Run.from_dict({"q1": ranked("b", "e", "a")}),
    "C": Run.from_dict({"q1": ranked("f", "b")}),
}
JUDGED = Qrels.from_dict({"q1": {"a": 1}})


def docs(pool, qid):
    return [e.docid for e in pool.entries[qid]]


# ---------------------------------------------------------------- depth-k


def test_depth_k_is_the_union_of_the_top_k_minus_judged_documents():
    pool = depth_pool(RUNS, 2, judged=JUDGED)
    # Top 2: A a b, B b e, C f b; a is judged. Order: best rank, then more runs first, then docid.
    assert docs(pool, "q1") == ["b", "f", "e"]
    assert docs(pool, "q2") == ["x", "y"]
    assert pool.pairs() == {("q1", "b"), ("q1", "e"), ("q1", "f"), ("q2", "x"), ("q2", "y")}
    assert pool.entries["q1"][0].ranks == {"A": 2, "B": 1, "C": 2}


def test_depth_k_reads_runs_in_the_leaderboard_order_ties_by_docid_descending():
    tied = {"T": Run.from_dict({"q": {"d1": 1.0, "d2": 1.0, "d9": 1.0, "d10": 1.0}})}
    # Equal scores: docid descending as strings, so d9, d2, d10, d1.
    assert docs(depth_pool(tied, 2), "q") == ["d9", "d2"]


def test_depth_k_without_judgments_and_limited_to_the_split_queries():
    pool = depth_pool(RUNS, 1, qids=["q1", "q3"])
    assert docs(pool, "q1") == ["a", "b", "f"]
    assert pool.entries["q3"] == [] and "q2" not in pool.entries


def test_pool_statistics():
    pool = depth_pool(RUNS, 2, judged=JUDGED)
    stats = pool.statistics(per_judgment=30.0, overlap_share=0.2)
    assert stats["size_per_query"] == {"q1": 3, "q2": 2}
    # A's top 2: q1 a (judged) b, q2 x y -> 3 unjudged; B: b e; C: f b.
    assert stats["unjudged_per_run"] == {"A": 3, "B": 2, "C": 2}
    assert stats["in_pool_per_run"] == {"A": 3, "B": 2, "C": 2}
    assert stats["unique_per_run"] == {"A": 2, "B": 1, "C": 1}
    assert stats["expected_cost"] == pytest.approx(5 * 1.2 * 30.0)
    with pytest.raises(ValueError):
        pool.expected_cost(1.0, overlap_share=1.5)


# ---------------------------------------------------------------- RBP


def test_rbp_orders_by_summed_weight_worked_by_hand():
    # p = 0.5: weights by rank 0.5, 0.25, 0.125, 0.0625.
    #   b: A r2 .25 + B r1 .5 + C r2 .25 = 1.0     a: judged, left out
    #   f: C r1 .5   e: B r2 .25   c: A r3 .125    d: A r4 .0625
    pool = rbp_pool(RUNS, 10, p=0.5, judged=JUDGED)
    assert [(e.docid, e.priority) for e in pool.entries["q1"]] == [
        ("b", 1.0), ("f", 0.5), ("e", 0.25), ("c", 0.125), ("d", 0.0625)]
    assert docs(rbp_pool(RUNS, 2, p=0.5, judged=JUDGED), "q1") == ["b", "f"]
    # Without the judgment, a (A r1 .5 + B r3 .125 = .625) comes second.
    assert docs(rbp_pool(RUNS, 3, p=0.5), "q1") == ["b", "a", "f"]


def test_rbp_refuses_a_persistence_outside_0_1():
    with pytest.raises(ValueError, match="persistence"):
        rbp_pool(RUNS, 5, p=1.0)


# ---------------------------------------------------------------- MTF


def test_mtf_keeps_a_run_while_it_finds_relevant_documents_worked_by_hand():
    ranked_q = {"A": ["a1", "a2", "a3"], "B": ["b1", "b2", "s"], "C": ["s", "c2"]}
    grades = {"a1": 1, "a2": 0, "a3": 1, "b1": 0, "b2": 1, "s": 1, "c2": 0}
    steps = mtf_order(ranked_q, grades.get, budget=10)
    # A (first among equal priorities): a1 relevant -> stays; a2 non-relevant -> A = -1.
    # B (0, first of B and C): b1 non-relevant -> B = -1. C (0): s relevant, c2 non-relevant -> C = -1.
    # All at -1: A again: a3 relevant, then A is used up; B: b2 relevant, s already seen -> skipped.
    assert [(s.docid, s.run) for s in steps] == [
        ("a1", "A"), ("a2", "A"), ("b1", "B"), ("s", "C"), ("c2", "C"), ("a3", "A"), ("b2", "B")]


def test_mtf_stops_at_the_budget_and_at_the_first_document_waiting_for_a_judgment():
    ranked_q = {"A": ["a1", "a2"], "B": ["b1"]}
    assert [s.docid for s in mtf_order(ranked_q, {"a1": 1, "a2": 1, "b1": 1}.get, budget=2)] == ["a1", "a2"]
    steps = mtf_order(ranked_q, {"a1": 0}.get, budget=5)
    assert [(s.docid, s.grade) for s in steps] == [("a1", 0), ("b1", None)]  # judge b1 next


def test_mtf_pool_replays_judgments_and_skips_documents_judged_before():
    truth = {"q1": {"b": 1, "c": 0, "d": 0, "e": 0, "f": 0}, "q2": {"x": 0, "y": 1}}
    pool = mtf_pool(RUNS, 10, lambda q, d: truth[q].get(d), judged=JUDGED)
    # q1: A gives b (a judged before, skipped) relevant, c non-relevant -> A -1; B: e non-relevant -> B -1;
    # C: f non-relevant -> C -1; A: d non-relevant; then B and C have nothing new.
    assert docs(pool, "q1") == ["b", "c", "e", "f", "d"]
    assert docs(pool, "q2") == ["x", "y"]


# ---------------------------------------------------------------- bias


def test_leave_one_run_out_removes_only_the_runs_unique_relevant_documents():
    runs = {
        "A": Run.from_dict({"q1": ranked("r1", "n1"), "q2": ranked("r3")}),
        "B": Run.from_dict({"q1": ranked("r2", "r1"), "q2": ranked("n2")}),
    }
    qrels = Qrels.from_dict({"q1": {"r1": 1, "r2": 1, "n1": 0}, "q2": {"r3": 1, "n2": 0}})
    rows = {r.run: r for r in leave_one_run_out(runs, qrels, measure="R@10", pool_depth=2)}
    # A with all judgments: q1 1/2, q2 1 -> 0.75. Its unique relevant: r3 (q2). Without it, q2 has no
    # relevant document left, so it scores 0 there: (1/2 + 0) / 2.
    assert (rows["A"].unique_relevant, rows["A"].with_all, rows["A"].without_own) == (1, 0.75, 0.25)
    # B: q1 1, q2 0 -> 0.5; unique relevant r2 (q1) -> q1 1/1 (r1 is left) ... (1 + 0) / 2.
    assert (rows["B"].unique_relevant, rows["B"].with_all) == (1, 0.5)
    assert rows["B"].without_own == pytest.approx(0.5)
    assert (rows["A"].rank_with, rows["A"].rank_without) == (1, 2)
    assert rows["A"].change == pytest.approx(-0.5)


# ---------------------------------------------------------------- files


def test_export_as_trec_and_csv_and_import_back():
    pool = depth_pool(RUNS, 2, judged=JUDGED)
    trec = io.BytesIO()
    write_pool_trec(pool, trec)
    assert trec.getvalue().decode().splitlines() == [
        "q1 0 b -1", "q1 0 f -1", "q1 0 e -1", "q2 0 x -1", "q2 0 y -1"]
    filled = trec.getvalue().replace(b"b -1", b"b 2").replace(b"x -1", b"x 0")
    got = read_judgments(filled, pool)
    assert got.grades == {"q1": {"b": 2}, "q2": {"x": 0}} and got.not_yet_judged == 3

    text = io.StringIO()
    write_pool_csv(pool, text)
    lines = text.getvalue().splitlines()
    assert lines[0] == '"query_id","doc_id","position","priority","runs","grade"'  # every cell quoted
    assert lines[1] == '"q1","b","1","2.0","A B C",""'  # priority k − best rank + 1
    every = "\n".join(line[:-2] + '"1"' if i else line for i, line in enumerate(lines)) + "\n"
    assert len(read_judgments(every.encode(), pool)) == 5
    unquoted = "query_id,doc_id,grade\nq1,b,2\n"  # a file a spreadsheet saved without quotes
    assert read_judgments(unquoted.encode(), pool).grades == {"q1": {"b": 2}}


def test_a_pooled_id_that_starts_like_a_formula_is_text_in_the_csv_and_reads_back():
    runs = {"A": Run.from_dict({"q1": ranked("=HYPERLINK(1)", "b")})}
    pool = depth_pool(runs, 2)
    text = io.StringIO()
    write_pool_csv(pool, text)
    assert "\"'=HYPERLINK(1)\"" in text.getvalue()
    filled = text.getvalue().replace(',""\n', ',"1"\n')
    assert read_judgments(filled.encode(), pool).grades == {"q1": {"=HYPERLINK(1)": 1, "b": 1}}


def test_import_refuses_lines_that_do_not_fit_the_pool_naming_each_line():
    pool = depth_pool(RUNS, 2, judged=JUDGED)
    text = (b"q1 0 b 1\n"
            b"q1 0 a 1\n"       # judged before: not in the pool
            b"q9 0 b 1\n"       # unknown query
            b"q1 0 f 7\n"       # outside the scale
            b"q1 0 e one\n"     # not a number
            b"q2 0 x 1 extra\n"  # five columns
            b"q1 0 b 0\n")      # twice
    with pytest.raises(JudgmentFormatError) as err:
        read_judgments(text, pool, name="judged.txt")
    assert str(err.value).splitlines() == [
        "judged.txt:2: document 'a' of query 'q1' is not in this pool; judge only the documents the pool lists "
        "(check the ids)",
        "judged.txt:3: document 'b' of query 'q9' is not in this pool; judge only the documents the pool lists "
        "(check the ids)",
        "judged.txt:4: the grade 7 is outside the allowed grades 0–3",
        "judged.txt:5: the grade 'one' is not a whole number; use a grade 0–3",
        "judged.txt:6: expected 4 columns (query id, iteration, document id, grade), found 5",
        "judged.txt:7: document 'b' of query 'q1' is judged twice (lines 1 and 7); keep one judgment",
    ]


def test_import_refuses_a_csv_without_its_columns_and_a_file_without_judgments():
    pool = depth_pool(RUNS, 2)
    with pytest.raises(JudgmentFormatError, match=r"<bytes>:1: the header lacks the column grade"):
        read_judgments(b"query_id,doc_id\nq1,b\n", pool)
    with pytest.raises(JudgmentFormatError, match="holds no judgment"):
        read_judgments(b"q1 0 b -1\n", pool)
    with pytest.raises(JudgmentFormatError, match=":2: the text is not UTF-8"):
        read_judgments(b"q1 0 b 1\nq1 0 \xff 1\n", pool)
