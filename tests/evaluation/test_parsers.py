"""Run and qrels parsing: accepted variations and refusals with line numbers."""

from __future__ import annotations

import gzip
import io

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from evaluation import (
    CorpusIds,
    InputError,
    Qrels,
    Run,
    _kernel,
    docid_scheme_ok,
    read_qrels,
    read_run,
    sniff_run,
    write_run,
)
from evaluation.errors import ProblemCollector

GOOD = b"q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5 tag\nq2 Q0 d1 1 0.5 tag\n"


def problems(source, reader=read_run, **kw):
    with pytest.raises(InputError) as err:
        reader(source, name="run.txt", **kw)
    return err.value


def test_it_reads_a_plain_run():
    run = read_run(GOOD)
    assert run.qids == ["q1", "q2"]
    assert run.docids() == ["d1", "d2", "d1"]
    assert run.scores.tolist() == [2.5, 1.5, 0.5]
    assert run.to_dict() == {"q1": {"d1": 2.5, "d2": 1.5}, "q2": {"d1": 0.5}}


def test_it_accepts_tabs_runs_of_spaces_crlf_bom_comments_and_blank_lines():
    text = ("\ufeff# a comment\n\nq1\tQ0\td1\t1\t2.5\ttag\r\n   \nq1   Q0 \t d2  2   1.5  tag  \r\n"
            "q2 Q0 d1 1 0.5 tag").encode()
    run = read_run(text)
    assert run.to_dict() == read_run(GOOD).to_dict()
    assert [run.line_of(i) for i in range(3)] == [3, 5, 6]


def test_it_reads_gzip_by_magic_bytes(tmp_path):
    path = tmp_path / "run.txt"  # no .gz suffix on purpose
    path.write_bytes(gzip.compress(GOOD))
    assert read_run(path).to_dict() == read_run(GOOD).to_dict()
    assert read_run(io.BytesIO(gzip.compress(GOOD))).to_dict() == read_run(GOOD).to_dict()


def test_it_reads_the_same_across_chunk_boundaries(monkeypatch):
    lines = [f"q{i % 7} Q0 doc-{i:05d}-with-a-long-name {i} {i * 0.37:.6f} t" for i in range(400)]
    text = ("\n".join(lines[:100]) + "\n\n# c\n" + "\n".join(lines[100:]) + "\n").encode()
    whole = read_run(text)
    monkeypatch.setattr(_kernel.chunks, "CHUNK_BYTES", 61)
    small = read_run(text)
    assert small.to_dict() == whole.to_dict()
    assert small.line_of(150) == whole.line_of(150) == 153


def test_it_refuses_a_wrong_column_count_and_names_the_columns():
    err = problems(b"q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5\n")
    assert str(err) == ("run.txt:2: expected 6 columns (query id, Q0, document id, rank, score, run tag) "
                        "separated by spaces or tabs, found 5: 'q1 Q0 d2 2 1.5'")
    assert err.problems[0].line == 2


def test_it_hints_at_comma_separated_files():
    assert "comma" in str(problems(b"q1,Q0,d1,1,2.5,tag\n"))


@pytest.mark.parametrize(("score", "reason"), [
    ("abc", "is not a number"),
    ("nan", "is NaN"),
    ("inf", "is infinite"),
    ("-Infinity", "is infinite"),
    ("1e400", "overflows"),
    ("1_0", "is not a number"),
])
def test_it_refuses_scores_that_are_not_finite_numbers(score, reason):
    err = problems(f"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 {score} t\n".encode())
    assert err.problems[0].line == 2 and reason in err.problems[0].reason


@pytest.mark.parametrize("rank", ["1.0", "one", "+1", "-"])
def test_it_refuses_a_rank_that_is_not_an_integer(rank):
    err = problems(f"q1 Q0 d1 {rank} 2.5 t\n".encode())
    assert err.problems[0].line == 1 and "not a whole number" in err.problems[0].reason
    assert "not used" in err.problems[0].reason


def test_it_accepts_long_and_negative_ranks():
    assert len(read_run(b"q1 Q0 d1 123456789012 2.5 t\nq1 Q0 d2 -3 1 t\n")) == 2


@pytest.mark.parametrize("text", [b"", b"\n\n  \n", b"# only a comment\n"])
def test_it_refuses_an_empty_file(text):
    assert "empty" in str(problems(text))


def test_it_refuses_text_that_is_not_utf8_with_the_line():
    err = problems(b"q1 Q0 d1 1 2.5 t\nq1 Q0 d\xe9 2 1.5 t\n")
    assert err.problems[0].line == 2 and "UTF-8" in err.problems[0].reason


def test_it_accepts_utf8_docids():
    run = read_run("q1 Q0 Αστικός::11 1 2.5 t\n".encode())
    assert run.docids() == ["Αστικός::11"]


def test_it_refuses_a_duplicate_pair_naming_both_lines():
    err = problems(b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\nq1 Q0 d1 3 0.5 t\n")
    assert err.problems[0].line == 3
    assert "lines 1 and 3" in err.problems[0].reason and "'d1'" in err.problems[0].reason


def test_it_refuses_duplicates_in_a_run_not_grouped_by_query():
    err = problems(b"q1 Q0 d1 1 2.5 t\nq2 Q0 d1 1 1.5 t\nq1 Q0 d1 3 0.5 t\n")
    assert "lines 1 and 3" in str(err)


@pytest.mark.parametrize("cells", [1, 4, 7, 1 << 20])
def test_it_finds_duplicates_block_by_block(monkeypatch, cells):
    """The grouped-run check works a few queries at a time: a duplicate in any block, full or padded, is found."""
    from evaluation import runs

    monkeypatch.setattr(runs, "_DUPLICATE_BLOCK_CELLS", cells)
    lines = [f"q{q} Q0 d{d} {d} 1.0 t" for q, n in ((1, 3), (2, 3), (3, 2), (4, 3), (5, 1)) for d in range(n)]
    assert len(read_run(("\n".join(lines) + "\n").encode())) == 12
    for at in (1, 5, 7, 10):  # a repeat of the line before it, in each query that has one
        dup = lines[:at + 1] + [lines[at - 1]] + lines[at + 1:]
        err = problems(("\n".join(dup) + "\n").encode())
        assert f"lines {at} and {at + 2}" in str(err), (cells, at, str(err))


def test_it_allows_the_same_docid_in_different_queries():
    assert len(read_run(b"q1 Q0 d1 1 2.5 t\nq2 Q0 d1 1 1.5 t\n")) == 2


@pytest.mark.parametrize(("content", "words"), [
    (b"<!DOCTYPE html><html><body>Login</body></html>", "HTML page"),
    (b"PK\x03\x04\x14\x00\x00\x00", "spreadsheet"),
    (b"q1 Q0 d1 1 2.5 t\x00\x00\n", "binary"),
    (b'{"q1": {"d1": 1}}', "JSON"),
])
def test_it_recognises_files_that_are_not_runs(content, words):
    err = problems(content)
    assert words in str(err) and err.problems[0].line == 1


def test_it_collects_several_problems_before_giving_up():
    text = "".join(f"q1 Q0 d{i} 1 x{i} t\n" for i in range(50)).encode()
    err = problems(text)
    assert len(err.problems) == 20
    assert [p.line for p in err.problems[:3]] == [1, 2, 3]
    assert len(str(err).splitlines()) == 20


def test_it_enforces_a_line_cap():
    text = "".join(f"q1 Q0 d{i} {i} 1.0 t\n" for i in range(1, 11)).encode()
    assert "more than 5 lines" in str(problems(text, max_lines=5))


def test_it_warns_about_several_tags():
    run = read_run(b"q1 Q0 d1 1 2.5 a\nq1 Q0 d2 2 1.5 b\n")
    assert [n.code for n in run.notices] == ["several_tags"]


def test_it_sniffs_the_first_lines_cheaply():
    assert sniff_run(GOOD) == []
    assert sniff_run(GOOD + b"q3 Q0 d9 1 0.")  == []  # a cut last line is ignored
    found = sniff_run(b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 nan t\nq1 d3\n")
    assert [(p.line, "NaN" in p.reason or "columns" in p.reason) for p in found] == [(2, True), (3, True)]
    assert "HTML" in sniff_run(b"<html><head>")[0].reason


SCORE_TEXT = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
    st.builds(lambda x, p: f"{x:.{p}f}", st.floats(-1e6, 1e6), st.integers(0, 12)),
    st.builds(lambda x, p: f"{x:.{p}e}", st.floats(-1e30, 1e30), st.integers(0, 17)),
    st.from_regex(r"-?[0-9]{1,16}(\.[0-9]{0,10})?", fullmatch=True),
    st.from_regex(r"-?\.[0-9]{1,15}", fullmatch=True),
)


@pytest.mark.slow  # > 2 s (docs/testing.md)
@settings(max_examples=200, deadline=None)
@given(st.lists(SCORE_TEXT, min_size=1, max_size=20))
def test_it_parses_scores_exactly_like_strtod(scores):
    text = "".join(f"q Q0 d{i} {i} {s} t\n" for i, s in enumerate(scores)).encode()
    parsed = read_run(text).scores
    expected = np.array([float(s) for s in scores])
    assert np.array_equal(parsed, expected), [(s, a, b) for s, a, b in zip(scores, parsed, expected) if a != b]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 14), st.lists(st.floats(-1e9, 1e9), min_size=1, max_size=30), st.lists(SCORE_TEXT, max_size=2))
def test_it_parses_fixed_decimal_scores_exactly_like_strtod(decimals, values, others):
    """Every score with the same number of decimals (the usual file: the kernel's scalar path), some too long for
    the fast path, some followed by other forms (the general path)."""
    scores = [f"{x:.{decimals}f}" for x in values] + others
    text = "".join(f"q Q0 d{i} {i} {s} t\n" for i, s in enumerate(scores)).encode()
    parsed = read_run(text).scores
    expected = np.array([float(s) for s in scores])
    assert np.array_equal(parsed, expected), [(s, a, b) for s, a, b in zip(scores, parsed, expected) if a != b]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 7), st.lists(st.floats(-1e8, 1e8), min_size=1, max_size=30), st.booleans(),
       st.sampled_from(["", "5.", ".5", "-.5", "-0.0", "007.25", "1.2.3", "--1.5", "+1.5", "1e5", "-", "1,5"]))
def test_the_fixed_decimals_path_gives_strtods_numbers_or_the_general_paths(decimals, values, dashes, odd):
    """The usual column (one dot, the same number of decimals everywhere, at most 7) parsed without a division:
    with minus signs, dashes in the docids (the chunk holds a '-'), and one odd token that sends the chunk back
    to the general path (or is refused there)."""
    scores = [f"{x:.{decimals}f}" for x in values] + ([odd] if odd else [])
    docs = [f"{'doc-' if dashes else 'd'}{i}" for i in range(len(scores))]
    text = "".join(f"q Q0 {d} {i} {s} t\n" for i, (d, s) in enumerate(zip(docs, scores, strict=True))).encode()
    try:
        expected = np.array([float(s) for s in scores])
    except ValueError:
        with pytest.raises(InputError):
            read_run(text)
        return
    parsed = read_run(text).scores
    assert np.array_equal(parsed, expected) and np.array_equal(np.signbit(parsed), np.signbit(expected)), [
        (s, a, b) for s, a, b in zip(scores, parsed, expected, strict=True) if a != b]


BAD_SCORES = st.sampled_from(["nan", "NaN", "-nan", "inf", "-Infinity", "1e999", "-1e400", "1,5", "0,25", "abc", "-",
                              ".", "--1.5", "+1.5", "1.2.3", "1_0", "\u0661\u0662", "\uff11", "0x10", "1e5", "5.", "-.5",
                              "12345678901234567", "1.23456789012345678", "-0.0", "\u00e9"])


def _refusals(function, chunk, col):
    """What a score reader reported for a chunk: every problem, and the counts by rule."""
    collector = ProblemCollector("run", InputError, limit=10_000)
    try:
        function(chunk, col, collector)
    except InputError as exc:  # (a reader stops at MAX_PROBLEMS kinds of problem)
        return exc.problems, [(g.key, g.lines, g.count) for g in exc.groups]
    return collector.problems, sorted((key, g[1], g[2]) for key, g in collector._groups.items())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(SCORE_TEXT, BAD_SCORES), min_size=1, max_size=25), st.booleans(),
       st.integers(0, 7), st.integers(0, 25))
def test_the_scores_check_refuses_what_the_scores_parser_refuses(scores, dashes, decimals, fixed):
    """``check_scores`` (``scan_run``, ``sniff_run``: no numbers kept) and ``parse_scores`` (``read_run``) report
    the same problems on the same lines, on the general path and on the fixed-decimals one (the first ``fixed``
    scores written with ``decimals`` decimals), with and without a minus in the chunk."""
    scores = [f"{i * 1.25:.{decimals}f}" for i in range(fixed)] + scores
    docs = [f"{'doc-' if dashes else 'd'}{i}" for i in range(len(scores))]
    text = "".join(f"q Q0 {d} {i} {s} t\n" for i, (d, s) in enumerate(zip(docs, scores, strict=True))).encode()
    collector = ProblemCollector("run", InputError)
    for chunk in _kernel.iter_chunks(io.BytesIO(text), ncols=6, columns_help="", collector=collector):
        assert _refusals(_kernel.check_scores, chunk, 4) == _refusals(_kernel.parse_scores, chunk, 4)


def _a_finite_number(token: str) -> bool:
    """What ``strtod`` reads as a finite number (``float`` also reads ``1_0`` and other digits than ASCII's)."""
    try:
        return token.isascii() and "_" not in token and bool(np.isfinite(float(token)))
    except ValueError:
        return False


SHORT_SCORE_TEXT = st.one_of(
    st.from_regex(r"-?[0-9]{0,7}\.?[0-9]{0,7}", fullmatch=True),
    st.from_regex(r"[-0-9.,e+]{1,8}", fullmatch=True),
    st.sampled_from(["nan", "inf", "-inf", "1e5", "-", ".", "1_0", "\u0661", "-0", "0.", "-.5"]),
).filter(lambda token: 0 < len(token.encode()) <= 8)


@settings(max_examples=400, deadline=None)
@given(st.lists(SHORT_SCORE_TEXT, min_size=1, max_size=25), st.booleans())
def test_a_column_of_short_scores_is_read_like_strtod_and_checked_alike(scores, dashes):
    """Every token of at most 8 bytes (the high words then hold nothing and are not read): the same numbers as
    ``float``, the same refusals from the check and the parser."""
    docs = [f"{'doc-' if dashes else 'd'}{i}" for i in range(len(scores))]
    text = "".join(f"q Q0 {d} {i} {s} t\n" for i, (d, s) in enumerate(zip(docs, scores, strict=True))).encode()
    collector = ProblemCollector("run", InputError)
    for chunk in _kernel.iter_chunks(io.BytesIO(text), ncols=6, columns_help="", collector=collector):
        assert _refusals(_kernel.check_scores, chunk, 4) == _refusals(_kernel.parse_scores, chunk, 4)
    if not all(_a_finite_number(s) for s in scores):
        with pytest.raises(InputError):
            read_run(text)
        return
    expected = np.array([float(s) for s in scores])
    parsed = read_run(text).scores
    assert np.array_equal(parsed, expected) and np.array_equal(np.signbit(parsed), np.signbit(expected)), [
        (s, a, b) for s, a, b in zip(scores, parsed, expected, strict=True) if a != b]


def test_the_scores_check_is_silent_on_a_good_column_and_names_a_bad_row():
    text = b"q1 Q0 d1 1 12.5 t\nq1 Q0 d2 2 -3.25 t\nq1 Q0 d3 3 nan t\nq1 Q0 d4 4 1,5 t\n"
    collector = ProblemCollector("run", InputError)
    chunk = next(_kernel.iter_chunks(io.BytesIO(text), ncols=6, columns_help="", collector=collector))
    _kernel.check_scores(chunk, 3, collector)  # the ranks: numbers
    assert not collector.problems
    _kernel.check_scores(chunk, 4, collector)
    assert [(p.line, p.reason) for p in collector.problems] == [
        (3, "the score 'nan' is NaN; every row needs a finite number"),
        (4, "the score '1,5' is not a number; write decimals with a dot (0.5, not 0,5)")]


def test_the_fixed_decimals_path_takes_the_usual_column():
    text = b"q1 Q0 doc-1 1 12.500000 t\nq1 Q0 doc-2 2 -3.250000 t\nq1 Q0 doc-3 3 .250000 t\n"
    collector = ProblemCollector("run", InputError)
    chunk = next(_kernel.iter_chunks(io.BytesIO(text), ncols=6, columns_help="", collector=collector))
    assert _kernel.numbers._parse_fixed_decimals(chunk, 4).tolist() == [12.5, -3.25, 0.25]
    assert _kernel.numbers._parse_fixed_decimals(chunk, 3) is None  # integers: no dot, the general path


def test_it_writes_a_run_that_reads_back_identically():
    run = read_run(b"q1 Q0 d1 1 0.1 t\nq1 Q0 d2 2 0.30000000000000004 t\nq2 Q0 x 1 -7 t\n")
    out = io.StringIO()
    write_run(run, out, tag="fused")
    again = read_run(out.getvalue().encode())
    assert again.to_dict() == run.to_dict() and again.tags == ["fused"]
    assert out.getvalue().splitlines()[0] == "q1 Q0 d2 1 0.30000000000000004 fused"


# ---------------------------------------------------------------- qrels

QRELS = b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq2 0 d4 -1\nq3 0 d5 0\n"


def test_it_reads_qrels_with_grades_and_counts_relevant():
    qrels = read_qrels(QRELS)
    assert qrels.qids == ["q1", "q2", "q3"]
    assert [qrels.n_relevant(q) for q in ("q1", "q2", "q3", "nope")] == [1, 1, 0, 0]
    assert qrels.to_dict() == {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2, "d4": -1}, "q3": {"d5": 0}}
    assert [n.code for n in qrels.notices] == ["no_relevant"]
    assert read_qrels(QRELS, threshold=2).n_relevant("q1") == 0


def test_it_round_trips_qrels_through_bytes_and_dicts():
    qrels = read_qrels(QRELS, threshold=1)
    again = Qrels.from_bytes(qrels.to_bytes())
    assert again.to_dict() == qrels.to_dict() and again.qids == qrels.qids and again.threshold == 1
    assert Qrels.from_dict(qrels.to_dict()).to_dict() == qrels.to_dict()


def test_it_refuses_qrels_duplicates_and_bad_grades():
    err = problems(b"q1 0 d1 1\nq1 0 d1 2\n", reader=read_qrels)
    assert "lines 1 and 2" in str(err) and err.problems[0].line == 2
    err = problems(b"q1 0 d1 1\nq1 0 d2 high\nq1 0 d3 1.5\n", reader=read_qrels)
    assert [p.line for p in err.problems] == [2, 3] and "whole number" in err.problems[0].reason
    err = problems(b"q1 0 d1\n", reader=read_qrels)
    assert "expected 4 columns (query id, iteration, document id, grade)" in str(err)


def test_it_checks_corpus_membership_and_round_trips():
    corpus = CorpusIds.from_iterable(["1234", "CivC::11", "a-very-long-document-identifier"])
    assert "CivC::11" in corpus and "a-very-long-document-identifier" in corpus and "CivC::12" not in corpus
    again = CorpusIds.from_bytes(corpus.to_bytes())
    assert len(again) == 3 and "1234" in again and again.example == "1234"
    assert docid_scheme_ok(["1234", "CivC::11", "x"], corpus)
    assert not docid_scheme_ok(["x", "y", "1234"], corpus)


def test_it_builds_runs_from_dicts():
    run = Run.from_dict({"q": {"a": 1.0, "b": 2.0}})
    assert run.ranked() == {"q": [("b", 2.0), ("a", 1.0)]}


class _Pipe:
    """A stream that can neither seek nor peek, like a socket or a pipe."""

    def __init__(self, data: bytes):
        self._data = io.BytesIO(data)

    def read(self, n: int = -1) -> bytes:
        return self._data.read(n)

    def seekable(self) -> bool:
        return False


def test_it_reads_streams_that_cannot_seek():
    assert read_run(_Pipe(GOOD)).to_dict() == read_run(GOOD).to_dict()
    assert read_run(_Pipe(gzip.compress(GOOD))).to_dict() == read_run(GOOD).to_dict()


def test_it_asks_for_binary_mode(tmp_path):
    path = tmp_path / "r.run"
    path.write_bytes(GOOD)
    with open(path) as text, pytest.raises(TypeError, match="binary mode"):
        read_run(text)


def test_it_refuses_huge_identifiers_without_huge_memory():
    long_id = "d" * 5000
    err = problems(f"q1 Q0 d1 1 2 t\nq1 Q0 {long_id} 2 1 t\n".encode())
    assert err.problems[0].line == 2 and "5,000 bytes" in err.problems[0].reason
    err = problems(f"q1 0 {long_id} 1\n".encode(), reader=read_qrels)
    assert "document id is 5,000 bytes" in str(err)


def test_it_reads_interleaved_queries(monkeypatch):
    # Lines alternate between queries: the first-appearance order of query ids is kept.
    text = "".join(f"q{i % 3000} Q0 d{i} 1 {i}.0 t\n" for i in range(9000)).encode()
    run = read_run(text)
    assert run.qids == [f"q{i}" for i in range(3000)]
    assert run.to_dict()["q7"] == {"d7": 7.0, "d3007": 3007.0, "d6007": 6007.0}


def test_it_changes_the_threshold_of_parsed_qrels():
    qrels = read_qrels(QRELS)
    strict = qrels.with_threshold(2)
    assert [strict.n_relevant(q) for q in ("q1", "q2")] == [0, 1] and strict.to_dict() == qrels.to_dict()


def test_it_keeps_lookups_after_a_cache_round_trip():
    qrels = read_qrels(QRELS)
    again = Qrels.from_bytes(qrels.to_bytes())
    words = again.doc_words[:1]
    judged, grade = again.lookup(again.qidx[:1].astype(np.int32), words, again.doc_keys[:1])
    assert judged.tolist() == [True] and grade.tolist() == [qrels.grades[0]]


def test_it_recognises_a_qrels_file_sent_as_a_run_and_back():
    assert "looks like a qrels file" in str(problems(b"q1 0 d1 1\n"))
    assert "MS MARCO format" in str(problems(b"q1\td1\t1\n"))
    assert "looks like a run file" in str(problems(b"q1 Q0 d1 1 2.5 t\n", reader=read_qrels))


def test_it_reads_corpus_ids_from_a_file():
    corpus = CorpusIds.read(b"# ids\n1234\nCivC::11\n\na-very-long-document-identifier\n")
    assert len(corpus) == 3 and corpus.example == "1234"
    assert "CivC::11" in corpus and "a-very-long-document-identifier" in corpus and "x" not in corpus
    err = problems(b"1234\nCivC 11\n", reader=lambda src, name: CorpusIds.read(src, name=name))
    assert err.problems[0].line == 2
