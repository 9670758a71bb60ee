"""trec_eval's own test files, scored here: the numbers its ``make quicktest`` expects, and pytrec_eval's bit for bit.

trec_eval 9.0.8 ships inputs (``test/qrels.test``, ``results.test``,
``results.trunc`` with text after the run tag, ``qrels.rel_level`` with
grades up to 4 and -1) and the outputs its ``make quicktest`` compares with
(``out.test.aq``: ``-q``; ``out.test.aqc``: ``-q -c`` on ``results.trunc``;
``out.test.aqcM``: with ``-M100``; ``out.test.aql``: ``-l2``). Every family
of ``measures.FAMILIES`` that trec_eval prints there is compared per query
and on the mean, as trec_eval prints it (``%6.4f``), under the averaging
convention that matches the options (``trec_eval`` without ``-c``, ``count``
with it). Then every family, MAP' and nDCG' included (``-J``), is compared with
pytrec_eval (trec_eval 9.0.8 in C) at full precision with no tolerance, from
the files themselves.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evaluation import parse_measures, read_qrels, read_run
from evaluation.measures import FAMILIES
from evaluation.scoring import evaluate
from evaluation.verify import verify

CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)

#: (expected output, qrels, run, depth (-M), threshold (-l), averaging convention (-c or not))
QUICKTESTS = [
    ("out.test.aq", "qrels.test", "results.test", 1000, 1, "trec_eval"),
    ("out.test.aqc", "qrels.test", "results.trunc", 1000, 1, "count"),
    ("out.test.aqcM", "qrels.test", "results.trunc", 100, 1, "count"),
    ("out.test.aql", "qrels.rel_level", "results.test", 1000, 2, "trec_eval"),
]


def printed(path: Path) -> dict[tuple[str, str], str]:
    """``(trec_eval measure, query or "all") → value as printed`` from a trec_eval output file."""
    values = {}
    for line in path.read_text().splitlines():
        name, qid, value = line.split()
        values[(name, qid)] = value
    return values


def measures_printed_by_trec_eval(depth: int) -> list[tuple[str, str]]:
    """(our measure, trec_eval's name) for every family trec_eval's ``all_trec`` prints."""
    pairs = []
    for family in FAMILIES.values():
        if family.judged_only:
            continue  # -J is not among the quicktests: compared with pytrec_eval below
        if family.twin_on_cut_run:  # recip_rank: MRR at the depth
            pairs.append((f"{family.family}@{depth}", family.twin))
        elif family.takes_k:
            ks = (1, 5, 10) if family.twin == "success_{k}" else CUTOFFS
            pairs += [(f"{family.family}@{k}", family.twin.format(k=k)) for k in ks]
        else:
            pairs.append((family.family, family.twin))
    return pairs


@pytest.mark.parametrize(("expected", "qrels", "run", "depth", "threshold", "convention"), QUICKTESTS,
                         ids=[case[0] for case in QUICKTESTS])
def test_it_prints_what_trec_eval_quicktest_expects(trec_eval_test_files, expected, qrels, run, depth, threshold,
                                                    convention):
    want = printed(trec_eval_test_files / expected)
    pairs = measures_printed_by_trec_eval(depth)
    parsed_run = read_run(trec_eval_test_files / run)
    ev = evaluate(read_qrels(trec_eval_test_files / qrels, threshold=threshold), parsed_run,
                  parse_measures([ours for ours, _ in pairs]), depth=depth, empty_queries=convention)

    assert len(ev.qids) == int(want[("num_q", "all")])
    compared = 0
    for ours, theirs in pairs:
        for i, q in enumerate(ev.qids):
            if q not in parsed_run.qids:  # trec_eval -c prints no line for a query the run lacks: 0 in its mean
                assert (theirs, q) not in want and ev.per_query[ours][i] == 0.0
                continue
            assert f"{ev.per_query[ours][i]:6.4f}" == want[(theirs, q)], (ours, q)
            compared += 1
        assert f"{ev.means[ours]:6.4f}" == want[(theirs, "all")], ours
    assert compared >= 2 * len(pairs)


def test_text_after_the_run_tag_is_ignored_with_a_notice_as_trec_eval_does(trec_eval_test_files):
    run = read_run(trec_eval_test_files / "results.trunc")
    notice = next(n for n in run.notices if n.code == "trailing_text")
    assert notice.count == 5 and "text after the run tag (lines 1, 2, 3, …)" in notice.message


ALL_FAMILIES = parse_measures([f"{f}@{k}" if FAMILIES[f].takes_k else f for f in FAMILIES for k in (1, 10, 100, 1000)])


@pytest.mark.parametrize(("qrels", "run", "threshold"), [("qrels.test", "results.test", 1),
                                                         ("qrels.test", "results.trunc", 1),
                                                         ("qrels.rel_level", "results.test", 2),
                                                         ("qrels.rel_level", "results.trunc", 1)])
@pytest.mark.parametrize("convention", ["omit", "count", "trec_eval"])
def test_every_family_equals_pytrec_eval_bit_for_bit_on_the_files(trec_eval_test_files, qrels, run, threshold,
                                                                  convention):
    q = read_qrels(trec_eval_test_files / qrels, threshold=threshold)
    ev = evaluate(q, read_run(trec_eval_test_files / run), ALL_FAMILIES, empty_queries=convention)
    assert all(np.isfinite(v).all() for v in ev.per_query.values())

    check = verify(q, trec_eval_test_files / run, ev, empty_queries=convention, method="pytrec_eval", tolerance=0.0)

    assert check.ok, str(check.disagreement)
    assert check.n_values == len(ev.qids) * len(ALL_FAMILIES)
