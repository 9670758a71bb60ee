"""Fuzzing the run and qrels readers: any input is either read or refused with ``InputError``, never a crash.

Hypothesis drives two kinds of input: arbitrary bytes (plain and gzipped) and
near-valid files built line by line — random runs of spaces and tabs, CRLF,
a BOM, blank and comment lines, a wrong number of columns, scores drawn from
floats and from strings such as ``nan``, ``-inf``, ``1e400``, ``0,5`` and
Unicode. A file built only of valid lines must be accepted and round-trip
(rows, queries, scores); one with an invalid line must be refused naming it.
Bounded: about 20 seconds for the module. ``test_atheris_*`` adds a
coverage-guided libFuzzer run when atheris is installed (marked slow).
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from evaluation.errors import InputError, RunFormatError
from evaluation.qrels import read_qrels
from evaluation.run_json import MAX_JSON_PROBLEMS, json_run_to_trec
from evaluation.runs import read_run, scan_run, sniff_run, write_run

BASE_DIR = Path(__file__).resolve().parents[2]
FUZZ = settings(max_examples=100, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example])


# --- arbitrary bytes ------------------------------------------------------------------------------


def _read_or_refuse(reader, data: bytes):
    try:
        return reader(data, name="fuzz")
    except InputError as exc:
        assert exc.problems, "an InputError must carry at least one problem"
        for p in exc.problems:
            assert p.reason and (p.line is None or p.line >= 1)
        assert str(exc).startswith("fuzz")
        return None


@FUZZ
@given(st.binary(max_size=2048))
def test_read_run_never_crashes_on_bytes(data):
    run = _read_or_refuse(read_run, data)
    if run is not None:
        assert len(run) == len(run.qcode) == len(run.scores) >= 1
        assert all(math.isfinite(s) for s in run.scores.tolist())


@FUZZ
@given(st.binary(max_size=2048))
def test_read_qrels_never_crashes_on_bytes(data):
    qrels = _read_or_refuse(read_qrels, data)
    if qrels is not None:
        assert len(qrels) == sum(len(v) for v in qrels.to_dict().values())


@FUZZ
@given(st.binary(max_size=2048))
def test_sniff_run_never_crashes_on_bytes(data):
    problems = sniff_run(data)
    assert all(p.reason for p in problems)


@FUZZ
@given(st.binary(max_size=512), st.booleans())
def test_gzipped_bytes_are_read_or_refused(data, cut):
    packed = gzip.compress(data, mtime=0)
    if cut:
        packed = packed[: max(2, len(packed) // 2)]
    _read_or_refuse(read_run, packed)
    _read_or_refuse(read_qrels, packed)


@FUZZ
@given(st.text(max_size=400))
def test_any_unicode_text_is_read_or_refused(text):
    for encoding in ("utf-8", "utf-8-sig"):
        _read_or_refuse(read_run, text.encode(encoding))
        _read_or_refuse(read_qrels, text.encode(encoding))


# --- near-valid runs ----------------------------------------------------------------------------------

SEP = st.sampled_from([" ", "\t", "  ", " \t ", "\t\t", "   "])
EOL = st.sampled_from(["\n", "\r\n"])
IDENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-:.é", min_size=1, max_size=12).filter(
    lambda s: not s.startswith("#"))
GOOD_SCORE = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
    st.integers(-10**6, 10**6).map(str),
    st.decimals(allow_nan=False, allow_infinity=False, places=4).map(str),
)
BAD_SCORE = st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e999", "0,5", "abc", "1.2.3",
                             "−1", "١٢", "0x10", "1_0", "--1", ""])
GOOD_RANK = st.integers(-5, 10**6).map(str)
BAD_RANK = st.sampled_from(["1.0", "2.5", "first", "1e3", "+1", "½"])


@st.composite
def run_rows(draw, *, min_rows=1, max_rows=12):
    """Distinct (qid, docid) rows as (qid, docid, rank, score text)."""
    keys = draw(st.lists(st.tuples(st.sampled_from(["1", "2", "q3", "Q-4"]), IDENT), min_size=min_rows,
                         max_size=max_rows, unique=True))
    return [(q, d, draw(GOOD_RANK), draw(GOOD_SCORE)) for q, d in keys]


LAYOUT = st.tuples(
    st.sampled_from(["", " ", "\t"]),  # before the first column
    st.lists(SEP, min_size=6, max_size=6),  # between columns
    st.sampled_from(["", " ", "\t", "  \t"]),  # after the last column
    st.sampled_from([None, None, None, "", "   ", "\t", "# a comment", "#"]),  # a blank or comment line before
)
FRAME = st.tuples(EOL, st.sampled_from(["", "\ufeff"]), st.booleans())  # line end, BOM, final newline


def _render(rows: list[list[str]], draw) -> tuple[bytes, list[int]]:
    """Join the columns with random separators; sprinkle blank/comment lines; return (bytes, line of each row)."""
    layouts = draw(st.lists(LAYOUT, min_size=len(rows), max_size=len(rows)))
    eol, bom, final = draw(FRAME)
    out, lines = [], []
    for cols, (lead, seps, trail, filler) in zip(rows, layouts):
        if filler is not None:
            out.append(filler)
        out.append(lead + "".join(c + sep for c, sep in zip(cols[:-1], seps)) + cols[-1] + trail)
        lines.append(len(out))
    text = bom + eol.join(out) + (eol if final else "")
    return text.encode("utf-8"), lines


@FUZZ
@given(st.data())
def test_valid_runs_are_accepted_and_round_trip(data):
    rows = data.draw(run_rows())
    raw, _ = _render([[q, "Q0", d, r, s, "tag"] for q, d, r, s in rows], data.draw)
    run = read_run(raw, name="fuzz")
    assert len(run) == len(rows)
    assert set(run.qids) == {q for q, *_ in rows}
    got = run.to_dict()
    for q, d, _, s in rows:
        assert got[q][d] == float(s)
    buffer = io.StringIO()
    write_run(run, buffer, tag="again")
    again = read_run(buffer.getvalue().encode(), name="again")
    assert again.to_dict() == got


@FUZZ
@given(st.data())
def test_one_bad_field_is_refused_naming_its_line(data):
    rows = data.draw(run_rows(min_rows=2))
    table = [[q, "Q0", d, r, s, "tag"] for q, d, r, s in rows]
    victim = data.draw(st.integers(0, len(table) - 1))
    # No "one column more": text after the tag is accepted with a notice, as trec_eval reads it (issue #27), and
    # a column inserted earlier shifts the rest into a row that may be valid (a numeric word where the score was).
    kind = data.draw(st.sampled_from(["score", "rank", "fewer"]))
    if kind == "score":
        table[victim][4] = data.draw(BAD_SCORE)
    elif kind == "rank":
        table[victim][3] = data.draw(BAD_RANK)
    else:
        del table[victim][data.draw(st.integers(0, 5))]
    table[victim] = [c for c in table[victim] if c != ""]  # an empty score is a missing column
    raw, lines = _render(table, data.draw)
    with pytest.raises(InputError) as caught:
        read_run(raw, name="fuzz")
    assert lines[victim] in [p.line for p in caught.value.problems], (raw, caught.value)


@FUZZ
@given(st.data())
def test_sniff_agrees_with_the_reader_on_the_first_lines(data):
    rows = data.draw(run_rows())
    raw, _ = _render([[q, "Q0", d, r, s, "t"] for q, d, r, s in rows], data.draw)
    assert sniff_run(raw) == []


# --- near-valid qrels ----------------------------------------------------------------------------------


@FUZZ
@given(st.data())
def test_valid_qrels_are_accepted_and_round_trip(data):
    keys = data.draw(st.lists(st.tuples(st.sampled_from(["1", "2", "q3"]), IDENT), min_size=1, max_size=12,
                              unique=True))
    grades = [data.draw(st.integers(-3, 1000)) for _ in keys]
    raw, _ = _render([[q, data.draw(st.sampled_from(["0", "Q0", "1"])), d, str(g)]
                      for (q, d), g in zip(keys, grades)], data.draw)
    qrels = read_qrels(raw, name="fuzz")
    expected: dict[str, dict[str, int]] = {}
    for (q, d), g in zip(keys, grades):
        expected.setdefault(q, {})[d] = g
    assert qrels.to_dict() == expected


@FUZZ
@given(st.data())
def test_a_bad_grade_is_refused_naming_its_line(data):
    keys = data.draw(st.lists(st.tuples(st.sampled_from(["1", "2"]), IDENT), min_size=2, max_size=8, unique=True))
    table = [[q, "0", d, "1"] for q, d in keys]
    victim = data.draw(st.integers(0, len(table) - 1))
    table[victim][3] = data.draw(st.sampled_from(["0.5", "nan", "inf", "yes", "1e2", "+1", "9" * 25]))
    raw, lines = _render(table, data.draw)
    with pytest.raises(InputError) as caught:
        read_qrels(raw, name="fuzz")
    assert lines[victim] in [p.line for p in caught.value.problems]


# --- atheris (coverage-guided), when installed ------------------------------------------------------------


@pytest.mark.slow
def test_atheris_finds_no_crash_in_the_readers(tmp_path):
    pytest.importorskip("atheris")
    env = {**os.environ, "PYTHONPATH": str(BASE_DIR)}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("atheris_target.py")), "-runs=20000", "-max_len=4096",
         f"-artifact_prefix={tmp_path}/", "-seed=6"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]


# --- the JSON run reader and the streaming TREC scan: refused with a short message, or read ------------------


#: Fragments a JSON run is built of, and the ones an attacker adds (deep nesting, huge numbers, NaN, keys twice).
_JSON_PIECES = st.sampled_from([
    b"{", b"}", b"[", b"]", b",", b":", b" ", b"\n", b'"q1"', b'"q2"', b'"d1"', b'"d2"', b'""', b'"a b"',
    b'"\\u00e9"', b'"\\ud800"', b'"\\x"', b"0", b"-1.5", b"1e400", b"1e-400", b"NaN", b"Infinity", b"-Infinity",
    b"true", b"null", b"9" * 70, b"9" * 5000, b"[" * 200, b"{" * 200, b'{"q1": {"d1": 1}', b'"d1": 1',
    b"\xff", b"\xef\xbb\xbf", b"\x00", b'"' + b"x" * 2000 + b'"',
])


def _json_read_or_refuse(data: bytes) -> bytes | None:
    try:
        return json_run_to_trec(data, path="fuzz.json")
    except RunFormatError as exc:
        text = str(exc)
        assert exc.problems and len(exc.problems) <= MAX_JSON_PROBLEMS
        assert len(text.splitlines()) == len(exc.problems) and len(text) <= 300 * len(exc.problems), text
        return None


def _check_trec_lines(trec: bytes) -> None:
    run = read_run(trec, name="converted")  # what the reader writes is a run the TREC reader takes
    assert all(math.isfinite(s) for s in run.scores.tolist())


@FUZZ
@given(st.binary(max_size=2048))
def test_the_json_reader_reads_or_refuses_any_bytes(data):
    for candidate in (data, b"{" + data, b'{"q1": {' + data):
        trec = _json_read_or_refuse(candidate)
        if trec is not None:
            _check_trec_lines(trec)


@FUZZ
@given(st.lists(_JSON_PIECES, max_size=60))
def test_the_json_reader_reads_or_refuses_adversarial_runs(pieces):
    trec = _json_read_or_refuse(b"".join(pieces))
    if trec is not None:
        _check_trec_lines(trec)


@FUZZ
@given(st.dictionaries(st.text(min_size=1, max_size=8), st.dictionaries(
    st.text(min_size=1, max_size=8), st.floats(allow_nan=False, allow_infinity=False) | st.integers(-10**20, 10**20),
    max_size=5), max_size=5))
def test_the_json_reader_takes_what_json_dumps_writes_as_the_whole_reading_would(run):
    data = json.dumps(run).encode()
    good = all(_plain_id(q) and all(_plain_id(d) for d in docs) for q, docs in run.items())
    if not good or not any(run.values()):
        _json_read_or_refuse(data)
        return
    expected = []
    for qid, docs in run.items():
        ranked = sorted(((float(s), d) for d, s in docs.items()), reverse=True)
        expected += [f"{qid} Q0 {d} {r} {s!r} json" for r, (s, d) in enumerate(ranked, 1)]
    assert json_run_to_trec(data).decode().splitlines() == expected


def _plain_id(value: str) -> bool:
    return not any(c.isspace() or c < " " for c in value) and not any(0xD800 <= ord(c) <= 0xDFFF for c in value)


_TREC_PIECES = st.sampled_from([
    b"q1", b"Q0", b"d1", b"1", b"0.5", b" ", b"\t", b"\n", b"\r\n", b",", b"#", b"nan", b"-inf", b"1e400",
    b"9" * 5000, b"x" * 3000, b"\xff", b"\x00", b"\xef\xbb\xbf", b"q1 Q0 d1 1 0.5 t\n",
])


def _scan_or_refuse(data: bytes) -> None:
    try:
        scan_run(io.BytesIO(data), max_line_bytes=1024, max_qid_bytes=100, max_docid_bytes=200)
    except RunFormatError as exc:
        assert exc.problems
        for line in str(exc).splitlines():
            assert len(line) <= 400, line


@FUZZ
@given(st.binary(max_size=2048))
def test_the_streaming_scan_reads_or_refuses_any_bytes(data):
    _scan_or_refuse(data)


@FUZZ
@given(st.lists(_TREC_PIECES, max_size=80))
def test_the_streaming_scan_and_the_reader_refuse_adversarial_runs_in_short_lines(pieces):
    data = b"".join(pieces)
    _scan_or_refuse(data)
    run = _read_or_refuse(read_run, data)
    if run is None:
        try:
            read_run(data, name="fuzz")
        except InputError as exc:
            assert all(len(line) <= 400 for line in str(exc).splitlines()), str(exc)


@pytest.mark.parametrize("line", [b"q1 Q0 d1 1 " + b"x" * 100_000 + b" t\n", b"q1 Q0 d1 " + b"9" * 100_000 + b" 1 t\n",
                                  b"q1 Q0 d1 1 " + b"1" * 5000 + b"e999 t\n"], ids=["score", "rank", "overflow"])
def test_a_long_token_is_quoted_cut_by_the_trec_readers(line):
    """A megabyte-long score or rank was quoted whole: the message was the size of the line."""
    for read in (lambda data: read_run(data, name="run"), lambda data: scan_run(io.BytesIO(data))):
        with pytest.raises(RunFormatError) as caught:
            read(line)
        assert len(str(caught.value)) < 400, str(caught.value)[:600]
