"""The worker's first entry on the compiled fast path (``results.first_entry``, ``evaluation.fastevaluate``).

The runs the command line's fast path takes are scored by it in the worker too, and what the worker stores is the
numpy path's, bit for bit: the per-query values and means, and the per-query vectors ``per_query_pack`` keeps for
the analyses (n_relevant, first_relevant_rank, judged_at_10, rel_ranks, rel_offsets, recall_curve). The random
cases are tests/evaluation/test_fastscore.py's, fed through the function the worker calls.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from catalogue.models import Corpus, Dataset
from evaluation import evaluate, fastscore, read_qrels, read_run
from evaluation.corpus import CorpusIds
from evaluation.errors import InputError, RunFormatError
from evaluation.measures import parse_measures
from submissions import services
from submissions.models import Result, Submission
from submissions.services import results
from submissions.services.results import LazyRun, first_entry, per_query_pack

from ..evaluation.test_fastscore import DOCS, MEASURES, cases, gz
from .conftest import GOOD_RUN, METADATA, upload

pytestmark = pytest.mark.skipif(not fastscore.available(), reason="evaluation/_fastscore is not built (make native)")


def unpack(blob: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(blob)) as arrays:
        return {name: arrays[name] for name in arrays.files}


def assert_same_bits(fast: dict[str, np.ndarray], slow: dict[str, np.ndarray]) -> None:
    assert fast.keys() == slow.keys()
    for name in slow:
        assert fast[name].dtype == slow[name].dtype, name
        assert fast[name].shape == slow[name].shape, name
        assert fast[name].tobytes() == slow[name].tobytes(), name  # the same bits, not approximately


def through_the_worker(qrels: bytes, run: bytes, *, threshold: int, depth: int, precision: str, empty: str):
    measures = parse_measures(MEASURES)
    lazy = LazyRun(lambda: read_run(run))
    evaluation = first_entry(run=lazy, source=lambda: io.BytesIO(run), qrels_text=lambda: qrels,
                             qrels=lambda: read_qrels(qrels, threshold=threshold), measures=measures, depth=depth,
                             threshold=threshold, score_precision=precision,  # type: ignore[arg-type]
                             empty_queries=empty)  # type: ignore[arg-type]
    return evaluation, lazy


def numpy_path(qrels: bytes, run: bytes, *, threshold: int, depth: int, precision: str, empty: str):
    return evaluate(read_qrels(qrels, threshold=threshold), read_run(run), MEASURES, depth=depth,
                    score_precision=precision, empty_queries=empty)  # type: ignore[arg-type]


@pytest.mark.slow  # > 2 s (docs/testing.md)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_the_random_cases_through_the_workers_entry_store_the_numpy_paths_bits(tmp_path_factory, case):
    qrels_text, run_text, threshold, depth, precision, empty, gzipped = case
    qrels = qrels_text.encode()  # a version's judgments are stored gzipped and handed over inflated
    run = gz(run_text.encode()) if gzipped == "run" else run_text.encode()
    kw = {"threshold": threshold, "depth": depth, "precision": precision, "empty": empty}
    fast, lazy = through_the_worker(qrels, run, **kw)
    slow = numpy_path(qrels, run, **kw)
    # The fast path took it (the run was never parsed in Python) unless it shares no query with the qrels.
    shared = not set(read_run(run).qids).isdisjoint(read_qrels(qrels, threshold=threshold).qids)
    assert lazy.loaded is not shared
    names = [m.name for m in slow.measures]
    assert fast.qids == slow.qids
    assert fast.means == slow.means
    assert [w.to_dict() for w in fast.warnings] == [w.to_dict() for w in slow.warnings]
    assert (fast.n_lines, fast.n_queries_in_run, fast.depth) == (slow.n_lines, slow.n_queries_in_run, slow.depth)
    assert_same_bits(unpack(per_query_pack(fast, names)), unpack(per_query_pack(slow, names)))


def test_a_bsard_sized_run_with_ties_stores_the_numpy_paths_vectors():
    lines, qrels = [], []
    for q in range(222):
        qrels += [f"{1000 + q} 0 {(q * 7 + j) % 22633} {1 + j % 2}" for j in range(1 + q % 5)]
        lines += [f"{1000 + q} Q0 {(q * 7 + r * 13) % 22633} {r + 1} {(1000 - r) // 3 / 7:.6f} bm25" for r in range(1000)]
    qrels_text, run = ("\n".join(qrels) + "\n").encode(), ("\n".join(lines) + "\n").encode()
    for data in (run, gz(run)):
        kw = {"threshold": 1, "depth": 1000, "precision": "float32", "empty": "omit"}
        fast, lazy = through_the_worker(qrels_text, data, **kw)
        slow = numpy_path(qrels_text, data, **kw)
        assert not lazy.loaded and fast.means == slow.means and fast.warnings[0].code == "ties"
        names = [m.name for m in slow.measures]
        assert_same_bits(unpack(per_query_pack(fast, names)), unpack(per_query_pack(slow, names)))


@pytest.mark.parametrize("name, run", [
    ("over the line cap", GOOD_RUN + "q3 Q0 d11 3 3.0 sys\n"),
    ("over the byte cap", GOOD_RUN),
    ("over the byte cap, gzip", gz(GOOD_RUN.encode())),
    ("a comment", "# a run\n" + GOOD_RUN),
])
def test_what_the_fast_path_hands_back_the_numpy_path_reads(settings, name, run):
    settings.LEXBOARD_MAX_RUN_LINES = 8  # GOOD_RUN's lines
    if name.startswith("over the byte cap"):
        settings.LEXBOARD_MAX_DECOMPRESSED_BYTES = len(GOOD_RUN) - 1
    data = run if isinstance(run, bytes) else run.encode()
    qrels = b"q1 0 d1 2\nq1 0 d2 1\nq2 0 d3 1\nq3 0 d4 1\n"
    measures = parse_measures("R@10")
    lazy = LazyRun(lambda: read_run(data))
    try:
        first_entry(run=lazy, source=lambda: io.BytesIO(data), qrels_text=lambda: qrels,
                    qrels=lambda: read_qrels(qrels), measures=measures, depth=1000, threshold=1,
                    score_precision="float32", empty_queries="omit")
    except InputError:  # the worker's reader refuses it (read_stored_run passes the caps; not this lambda)
        pass
    assert lazy.loaded, name


def test_at_the_caps_the_fast_path_still_takes_it(settings):
    settings.LEXBOARD_MAX_RUN_LINES = 8
    settings.LEXBOARD_MAX_DECOMPRESSED_BYTES = len(GOOD_RUN)
    qrels = b"q1 0 d1 2\nq1 0 d2 1\nq2 0 d3 1\nq3 0 d4 1\n"
    lazy = LazyRun(lambda: read_run(GOOD_RUN.encode()))
    first_entry(run=lazy, source=lambda: io.BytesIO(GOOD_RUN.encode()), qrels_text=lambda: qrels,
                qrels=lambda: read_qrels(qrels), measures=parse_measures("R@10"), depth=1000, threshold=1,
                score_precision="float32", empty_queries="omit")
    assert not lazy.loaded


def corpus_of(docids) -> CorpusIds:
    return CorpusIds.read(("\n".join(docids) + "\n").encode())


def through_the_worker_with(corpus: CorpusIds, qrels: bytes, run: bytes, *, threshold: int, depth: int,
                            precision: str, empty: str):
    measures = parse_measures(MEASURES)
    lazy = LazyRun(lambda: read_run(run))
    try:
        evaluation = first_entry(run=lazy, source=lambda: io.BytesIO(run), qrels_text=lambda: qrels,
                                 qrels=lambda: read_qrels(qrels, threshold=threshold), measures=measures,
                                 depth=depth, threshold=threshold, score_precision=precision,  # type: ignore[arg-type]
                                 empty_queries=empty, corpus=corpus)  # type: ignore[arg-type]
    except RunFormatError as refusal:
        return refusal, lazy
    return evaluation, lazy


def numpy_path_with(corpus: CorpusIds, qrels: bytes, run: bytes, *, threshold: int, depth: int, precision: str,
                    empty: str):
    try:
        return evaluate(read_qrels(qrels, threshold=threshold), read_run(run), MEASURES, depth=depth,
                        score_precision=precision, empty_queries=empty, corpus=corpus)  # type: ignore[arg-type]
    except RunFormatError as refusal:
        return refusal


@pytest.mark.slow  # > 2 s (docs/testing.md)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases(), left_out=st.sets(st.sampled_from(DOCS), max_size=4), extra=st.booleans())
def test_the_random_cases_with_a_corpus_store_the_numpy_paths_bits(case, left_out, extra):
    """A dataset with a corpus (BSARD, GreekBarRetrieval) on the fast path: the same bits as the numpy path with
    the corpus, short and long, ASCII and UTF-8 docids; a run naming a document outside it within the depth is
    handed back, and the numpy path says what those rows count as (or refuses the run)."""
    qrels_text, run_text, threshold, depth, precision, empty, gzipped = case
    qrels = qrels_text.encode()
    run = gz(run_text.encode()) if gzipped == "run" else run_text.encode()
    corpus = corpus_of([d for d in DOCS if d not in left_out] + (["not-in-any-run-0123456789"] if extra else []))
    kw = {"threshold": threshold, "depth": depth, "precision": precision, "empty": empty}
    fast, lazy = through_the_worker_with(corpus, qrels, run, **kw)
    slow = numpy_path_with(corpus, qrels, run, **kw)
    if isinstance(slow, RunFormatError):
        assert isinstance(fast, RunFormatError) and fast.problems == slow.problems
        return
    assert not isinstance(fast, RunFormatError)
    outside = any(w.code == "unknown_docids" for w in slow.warnings)
    shared = not set(read_run(run).qids).isdisjoint(read_qrels(qrels, threshold=threshold).qids)
    assert lazy.loaded is (outside or not shared)
    names = [m.name for m in slow.measures]
    assert fast.qids == slow.qids and fast.means == slow.means
    assert [w.to_dict() for w in fast.warnings] == [w.to_dict() for w in slow.warnings]
    assert_same_bits(unpack(per_query_pack(fast, names)), unpack(per_query_pack(slow, names)))


QRELS_FOR_GOOD_RUN = b"q1 0 d1 2\nq1 0 d2 1\nq2 0 d3 1\nq3 0 d4 1\n"
GOOD_DOCS = ["d1", "d2", "d3", "d4", "d8", "d9", "d10"]


@pytest.mark.parametrize("name, docids, depth, taken", [
    ("every document in the corpus", GOOD_DOCS + ["d20"], 1000, True),
    ("one outside within the depth", [d for d in GOOD_DOCS if d != "d9"], 1000, False),
    ("the one outside is past the depth", [d for d in GOOD_DOCS if d != "d3"], 2, True),
    ("most outside: refused", ["d1"], 1000, False),
])
def test_a_dataset_with_a_corpus_takes_the_fast_path_when_every_document_is_in_it(name, docids, depth, taken):
    kw = {"threshold": 1, "depth": depth, "precision": "float32", "empty": "omit"}
    fast, lazy = through_the_worker_with(corpus_of(docids), QRELS_FOR_GOOD_RUN, GOOD_RUN.encode(), **kw)
    slow = numpy_path_with(corpus_of(docids), QRELS_FOR_GOOD_RUN, GOOD_RUN.encode(), **kw)
    assert lazy.loaded is not taken, name
    if isinstance(slow, RunFormatError):
        assert isinstance(fast, RunFormatError) and "corpus" in str(fast)
    else:
        assert not isinstance(fast, RunFormatError)
        assert fast.means == slow.means and [w.code for w in fast.warnings] == [w.code for w in slow.warnings]


def test_an_ungrouped_run_is_judged_on_its_whole_queries_against_the_corpus():
    """q1's first piece is d0 alone, which is outside the corpus and would be q1's top document; the whole q1 ranks d3
    first (ties: docid descending) and d0 past the depth of 1, so nothing within the depth is outside: the fast path
    takes it (it once handed it back, judging the piece read before the run proved ungrouped; Hypothesis found it)."""
    qrels = b"q1 0 d0 1\nq1 0 d1 0\nq2 0 d0 0\nq2 0 d3 1\n"
    run = b"q2 Q0 d0 1 1 tag\nq2 Q0 d1 2 1 tag\nq1 Q0 d0 1 1 tag\nq2 Q0 d2 3 1 tag\nq1 Q0 d1 2 1 tag\nq1 Q0 d3 3 1 tag\n"
    kw = {"threshold": 1, "depth": 1, "precision": "float32", "empty": "omit"}
    corpus = corpus_of(d for d in DOCS if d != "d0")
    fast, lazy = through_the_worker_with(corpus, qrels, run, **kw)
    slow = numpy_path_with(corpus, qrels, run, **kw)
    assert not lazy.loaded and not isinstance(fast, RunFormatError) and not isinstance(slow, RunFormatError)
    assert fast.means == slow.means and [w.code for w in fast.warnings] == [w.code for w in slow.warnings]


def test_a_bsard_sized_corpus_keeps_a_bsard_run_on_the_fast_path():
    lines, qrels = [], []
    for q in range(222):
        qrels += [f"{1000 + q} 0 {(q * 7 + j) % 22633} 1" for j in range(1 + q % 5)]
        lines += [f"{1000 + q} Q0 {(q * 7 + r * 13) % 22633} {r + 1} {(1000 - r) / 7:.6f} bm25" for r in range(100)]
    qrels_text, run = ("\n".join(qrels) + "\n").encode(), ("\n".join(lines) + "\n").encode()
    corpus = corpus_of(str(i) for i in range(22633))
    kw = {"threshold": 1, "depth": 100, "precision": "float32", "empty": "omit"}
    fast, lazy = through_the_worker_with(corpus, qrels_text, run, **kw)
    slow = numpy_path_with(corpus, qrels_text, run, **kw)
    assert not lazy.loaded and not isinstance(fast, RunFormatError) and not isinstance(slow, RunFormatError)
    assert fast.means == slow.means
    names = [m.name for m in slow.measures]
    assert_same_bits(unpack(per_query_pack(fast, names)), unpack(per_query_pack(slow, names)))


@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 22_633, (1 << 21) + 3])
def test_membership_is_the_corpus_keys_whatever_their_number(size):
    """The compiled check searches the bucket of a docid's key (its top bits: about one key a bucket, several past
    2^20 buckets), not all the keys: a run whose every document is in the corpus stays on the fast path, one with a
    document left out is handed back, at every number of keys (none, fewer than the fewest buckets, a bucket's
    edges, BSARD's, two million and more), beside keys in the first and the last bucket (top bits all 0, all 1)."""
    run_docs = [f"d{i}" for i in range(40)] + ["é-doc", "a-long-document-id-of-more-than-eight-bytes"]
    run = ("\n".join(f"q1 Q0 {d} {r + 1} {100 - r} t" for r, d in enumerate(run_docs)) + "\n").encode()
    mine = CorpusIds.from_iterable(run_docs).keys
    rng = np.random.default_rng(size)
    others = rng.integers(0, 1 << 63, size=size, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, size=size,
                                                                                                  dtype=np.uint64)
    edges = np.array([0, 1, (1 << 64) - 2, (1 << 64) - 1], dtype=np.uint64)
    for left_out in (None, run_docs[0], run_docs[-1]):
        keys = mine if left_out is None else np.setdiff1d(mine, CorpusIds.from_iterable([left_out]).keys)
        corpus = CorpusIds(np.concatenate([keys, others, edges]) if size else np.zeros(0, dtype=np.uint64))
        all_in = bool(size) and bool(np.isin(mine, corpus.keys).all())
        assert all_in is (size > 0 and left_out is None)
        _, lazy = through_the_worker_with(corpus, b"q1 0 d1 1\n", run, threshold=1, depth=1000, precision="float32",
                                          empty="omit")
        assert lazy.loaded is not all_in, (size, left_out)


# ---------------------------------------------------------------- the worker itself


@pytest.mark.parametrize("gzipped", [False, True])
@pytest.mark.parametrize("empty", ["omit", "count"])
@pytest.mark.parametrize("with_corpus", [True, False])
def test_the_worker_stores_the_same_result_on_either_path_and_the_fast_one_never_calls_numpys(
        alice, test_split, monkeypatch, gzipped, empty, with_corpus):
    assert Corpus.objects.filter(dataset_id=test_split.dataset_id).exists()  # the split's dataset has a corpus
    if not with_corpus:
        Corpus.objects.filter(dataset_id=test_split.dataset_id).delete()
    Dataset.objects.filter(pk=test_split.dataset_id).update(empty_queries=empty)
    text = GOOD_RUN + "q1 Q0 d5 4 1.0 sys\nq9 Q0 d1 1 1.0 sys\n"  # a tie, and a query the split lacks
    data = gz(text.encode()) if gzipped else text.encode()
    stored = []
    for path in ("fast", "numpy"):
        with monkeypatch.context() as m:
            if path == "fast":
                def numpy_evaluate(*args, **kwargs):
                    raise AssertionError("the numpy path scored a run the fast path takes")
                m.setattr(results, "evaluate", numpy_evaluate)
            else:
                m.setattr(fastscore, "_native", None)
            if not stored:
                submission = services.submission_create(user=alice, split=test_split, metadata=METADATA,
                                                        upload=upload(data, "run.txt.gz" if gzipped else "run.txt"))
            else:  # the same bytes twice are refused: the same row scored again, on the numpy path
                submission = stored[0][0]
                Result.objects.filter(submission=submission).delete()
                Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.QUEUED)
            services.submission_score(submission.pk)
            result = Result.objects.get(submission=submission)
            stored.append((submission, result))
    (_, fast), (_, slow) = stored
    assert fast.verified_by == slow.verified_by and fast.verified_by["method"] == "pytrec_eval"
    assert fast.scores == slow.scores and fast.primary_score == slow.primary_score
    assert (fast.n_queries, fast.warnings) == (slow.n_queries, slow.warnings)
    assert [w["code"] for w in fast.warnings][:1] == ["unknown_queries"]
    assert_same_bits(unpack(bytes(fast.per_query)), unpack(bytes(slow.per_query)))

