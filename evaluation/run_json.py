"""Runs in JSON, as retrieval toolkits write them, turned into the TREC run they stand for, as a stream.

MTEB's ``save_predictions``, ranx (``Run.save(..., kind="json")``) and
ir_measures / pytrec_eval all write one shape: ``{query id: {document id:
score}}``. :func:`json_run_convert` reads exactly that shape from a byte stream
and writes the TREC lines, ranked by score, ties by document id, both
descending (trec_eval's order), so the rest of the checks and the scoring are
the ones every run gets.

The reader is a small scanner for this one shape, not a general JSON parser, so
a stranger's bytes cannot make it recurse, convert a huge number or hold the
file: it keeps one query's documents at a time (the lines of a query are
written as soon as its object closes) and a bounded look-ahead of text. Every
rule is checked while reading: a string (an id) longer than
``MAX_STRING_CHARS``, a number token longer than ``MAX_NUMBER_CHARS`` (refused
before Python converts it), NaN and infinities, a query id twice, a document
id twice in a query, a value of another shape (named: "a list of objects where
{docid: score} belongs"), nesting deeper than ``MAX_DEPTH`` inside such a value,
and text after the object. A refusal is a :class:`RunFormatError` of at most
``MAX_JSON_PROBLEMS`` one-line problems, each naming the query and document (ids
cut to ``ID_SHOWN`` characters) or the line of a syntax error.
"""

from __future__ import annotations

import codecs
import io
import math
import os
import re
import zlib
from json.decoder import (  # type: ignore[attr-defined]  # scanstring is public, typeshed omits it
    JSONDecodeError,
    scanstring,
)

from .errors import Problem, ProblemCollector, RunFormatError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO, NoReturn

#: What the shape is called in messages.
SHAPE = '{"query id": {"document id": score}}'
#: A number token longer than this is refused before it is converted (a double has 17 significant digits).
MAX_NUMBER_CHARS = 64
#: An id (a JSON string) longer than this is refused (the site's caps are 100 and 200 bytes).
MAX_STRING_CHARS = 1024
#: A value of the wrong shape is skipped to report the next problem; nested deeper than this, reading stops.
MAX_DEPTH = 32
#: Problems reported at most (each is one line).
MAX_JSON_PROBLEMS = 5
#: Ids are quoted in messages up to this many characters.
ID_SHOWN = 60

_UTF8_BOM = b"\xef\xbb\xbf"
_SPACE = b" \t\r\n"
_READ = 1 << 16
#: Text kept ahead of the reading position (at least the longest token read whole).
_LOOKAHEAD = 4 * MAX_STRING_CHARS + 2 * MAX_NUMBER_CHARS
#: The scanner's regular expressions, compiled when a JSON run is first read (not when the command line starts).
_WS_TEXT = r"[ \t\n\r]*"
#: The usual document entry, read in one match: a plain id (no escape, no blank), a JSON number, then , or }.
_PAIR_TEXT = (r'[ \t\n\r]*"([^"\\\s\x00-\x1f]{1,' + str(MAX_STRING_CHARS) + r'})"[ \t\n\r]*:[ \t\n\r]*'
              r"(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)[ \t\n\r]*([,}])")
_NUMBER_TEXT = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
#: A bare token (a number, true, NaN, a typo): what is read before judging it.
_BARE_TEXT = r"[-+0-9A-Za-z._]+"
_NONFINITE = {"NaN", "Infinity", "-Infinity", "+Infinity", "nan", "inf", "-inf", "infinity", "-infinity"}
_FIX = "write {qid: {docid: score}}"
_INFINITE = (math.inf, -math.inf)


def looks_like_json_run(head: bytes) -> bool:
    """Whether a retrieval upload's first bytes open a JSON object (a TREC line never starts with ``{``)."""
    return head.removeprefix(_UTF8_BOM).lstrip(_SPACE)[:1] == b"{"


def shown(value: str) -> str:
    """An id as messages quote it: ``repr``, cut to ``ID_SHOWN`` characters."""
    return repr(value) if len(value) <= ID_SHOWN else repr(value[:ID_SHOWN]) + "…"


class JsonRunStats:
    """What a conversion wrote: queries, TREC lines and their bytes."""

    __slots__ = ("queries", "lines", "bytes")

    def __init__(self) -> None:
        self.queries = 0
        self.lines = 0
        self.bytes = 0


class _Stop(Exception):
    """Reading cannot go on (a syntax error, too deep, too long): the collected problems are raised."""


class _Scanner:
    """The text of a byte stream with a bounded look-ahead: ``buf[pos:]`` is what is not read yet."""

    def __init__(self, stream: BinaryIO, problems: ProblemCollector, max_bytes: int | None) -> None:
        self.stream = stream
        self.problems = problems
        self.max_bytes = max_bytes
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.nbytes = 0
        self.line_base = 1  # the line of buf[0]

    def fill(self) -> None:
        """Keep at least ``_LOOKAHEAD`` characters ahead of ``pos`` (fewer only at the end of the stream)."""
        while not self.eof and len(self.buf) - self.pos < _LOOKAHEAD:
            data = self.stream.read(_READ)
            before = self.nbytes
            self.nbytes += len(data)
            if self.max_bytes is not None and self.nbytes > self.max_bytes:
                self.stop(None, f"the JSON run is larger than {self.max_bytes:,} bytes, the limit")
            pending = len(self.decoder.getstate()[0])
            try:
                text = self.decoder.decode(data, final=not data)
            except UnicodeDecodeError as exc:
                self.stop(None, f"the JSON is not UTF-8 text (byte {before - pending + exc.start + 1:,}); "
                                "save it as UTF-8")
            if not data:
                self.eof = True
            if self.pos:
                self.line_base += self.buf.count("\n", 0, self.pos)
                self.buf = self.buf[self.pos:]
                self.pos = 0
            self.buf += text

    def line(self) -> int:
        return self.line_base + self.buf.count("\n", 0, self.pos)

    def stop(self, line: int | None, reason: str) -> NoReturn:
        self.problems.add(line, reason)
        raise _Stop

    def syntax(self, expected: str) -> NoReturn:
        found = self.buf[self.pos:self.pos + 20]
        what = f"found {found!r}" if found else "the file ends"
        self.stop(self.line(), f"not valid JSON: expected {expected}, {what}. A JSON run is {SHAPE}.")

    def peek(self) -> str:
        """The next character that is not blank ("" at the end), blanks skipped."""
        while True:
            self.fill()
            self.pos = re.compile(_WS_TEXT).match(self.buf, self.pos).end()  # type: ignore[union-attr]  # [...]* always matches
            if self.pos < len(self.buf) or self.eof:
                return self.buf[self.pos:self.pos + 1]

    def expect(self, char: str, expected: str) -> None:
        if self.peek() != char:
            self.syntax(expected)
        self.pos += 1

    def string(self) -> str:
        """A JSON string at ``pos`` (the opening quote), its escapes decoded."""
        self.fill()
        try:
            value: str
            end: int
            value, end = scanstring(self.buf, self.pos + 1, True)
        except JSONDecodeError as exc:
            if exc.msg.startswith("Unterminated string") and not self.eof:
                self.stop(self.line(), f"a string longer than {MAX_STRING_CHARS:,} characters; ids are short")
            self.stop(self.line(), f"not valid JSON: {exc.msg.split(':')[0]}. A JSON run is {SHAPE}.")
        if len(value) > MAX_STRING_CHARS:
            self.stop(self.line(), f"a string of {len(value):,} characters; ids have at most {MAX_STRING_CHARS:,}")
        self.pos = end
        return value

    def bare(self) -> str:
        """A bare token at ``pos`` (a number, true, NaN, …), at most ``MAX_NUMBER_CHARS`` + 1 characters kept."""
        self.fill()
        m = re.compile(_BARE_TEXT).match(self.buf, self.pos)
        if m is None:
            return ""
        token = m.group()
        self.pos = m.end()
        while self.pos == len(self.buf) and not self.eof:  # a token longer than the look-ahead: skip the rest
            self.fill()
            m = re.compile(_BARE_TEXT).match(self.buf, self.pos)
            if m is None:
                break
            self.pos = m.end()
            token = token[:MAX_NUMBER_CHARS + 1] + "…"
        return token

    def describe(self) -> str:
        """What the value at ``pos`` is, in words (for a value of the wrong shape); ``pos`` is not moved."""
        c = self.peek()
        if c in "[{":
            outer = "a list" if c == "[" else "an object"
            start = self.pos
            self.pos += 1
            inner = self.peek()
            self.pos = start
            if c == "[":
                kinds = {"{": "a list of objects", "[": "a list of lists", '"': "a list of strings", "]": "an empty list"}
                return kinds.get(inner, "a list of numbers" if inner[:1] in "-0123456789" and inner else outer)
            return "an empty object" if inner == "}" else outer
        if c == '"':
            return "a string"
        if c in "tf":
            return "true or false"
        if c == "n":
            return "null"
        return "a number"

    def skip(self) -> None:
        """Skip one value of the wrong shape, nested at most ``MAX_DEPTH`` deep (a stack, no recursion)."""
        c = self.peek()
        if c == '"':
            self.string()
            return
        if c not in "[{" or not c:
            if not self.bare():
                self.syntax("a value")
            return
        closing: list[str] = []
        while True:
            c = self.peek()
            if c in "[{":
                if len(closing) >= MAX_DEPTH:
                    self.stop(self.line(), f"a value nested more than {MAX_DEPTH} levels deep; {SHAPE} is two")
                closing.append("]" if c == "[" else "}")
                self.pos += 1
            elif c in "]}" and c:
                if not closing or c != closing[-1]:
                    self.syntax(repr(closing[-1]) if closing else "a value")
                closing.pop()
                self.pos += 1
                if not closing:
                    return
            elif c == '"':
                self.string()
            elif c in ",:":
                self.pos += 1
            elif not c or not self.bare():
                self.syntax("a value")


def json_run_convert(stream: BinaryIO, out: BinaryIO, *, path: str = "run.json", tag: str = "json",
                     max_bytes: int | None = None) -> JsonRunStats:
    """Read a JSON run ``{qid: {docid: score}}`` from ``stream`` and write the TREC run it stands for to ``out``.

    Memory: one query's documents and a few pages of text, whatever the size of the file. Raises
    ``RunFormatError`` (at most ``MAX_JSON_PROBLEMS`` short problems) and nothing else for any input;
    ``out`` may then hold part of the lines. ``max_bytes``: refuse more bytes than this.
    """
    problems = ProblemCollector(path, RunFormatError, limit=MAX_JSON_PROBLEMS)
    scan = _Scanner(stream, problems, max_bytes)
    stats = JsonRunStats()
    try:
        _read_run(scan, out, tag, stats)
    except _Stop:
        pass
    except RecursionError:  # pragma: no cover - nothing here recurses; said rather than a 500 if it ever did
        problems.add(None, "the JSON run is nested too deeply")
    problems.raise_if_any()
    if not stats.lines:
        problems.add(None, f"the JSON run holds no document for any query; expected {SHAPE}.")
        problems.raise_now()
    return stats


def _read_run(scan: _Scanner, out: BinaryIO, tag: str, stats: JsonRunStats) -> None:
    if scan.peek() != "{":
        what = scan.describe() if scan.peek() else "nothing"
        scan.stop(None, f"a JSON run is an object {SHAPE} (as MTEB's save_predictions, ranx and ir_measures "
                        f"write it); this file holds {what}.")
    scan.pos += 1
    seen: set[str] = set()
    if scan.peek() == "}":
        scan.pos += 1
    else:
        while True:
            if scan.peek() != '"':
                scan.syntax("a query id in double quotes")
            line = scan.line()
            qid = scan.string()
            scan.expect(":", "':' after the query id")
            _read_query(scan, out, tag, stats, qid, line, seen)
            c = scan.peek()
            scan.pos += 1
            if c == "}":
                break
            if c != ",":
                scan.pos -= 1
                scan.syntax("',' or '}' after a query's object")
    if scan.peek():
        scan.syntax("the end of the file after the run's object")


def _read_query(scan: _Scanner, out: BinaryIO, tag: str, stats: JsonRunStats, qid: str, line: int,
                seen: set[str]) -> None:
    problems = scan.problems
    q = shown(qid)
    ok = True
    if (why := _bad_id(qid)) is not None:
        problems.add(line, f"query {q}: the query id {why}.")
        ok = False
    elif qid in seen:
        problems.add(line, f"query {q} appears twice; a JSON object keeps only one of them: give each query "
                           "one object holding all its documents.")
        ok = False
    seen.add(qid)
    if scan.peek() != "{":
        problems.add(line, f"query {q}: {scan.describe()} where {{docid: score}} belongs; {_FIX}.")
        scan.skip()
        return
    scan.pos += 1
    docs: dict[str, float] = {}
    if scan.peek() == "}":
        scan.pos += 1
    else:
        while True:
            done = _plain_entries(scan, docs, q)
            if done is not None:
                ok = ok and done
                break
            if scan.peek() != '"':
                scan.syntax("a document id in double quotes")
            docid = scan.string()
            scan.expect(":", "':' after the document id")
            score_or_none = _score(scan, q, docid)
            if score_or_none is None:
                ok = False
            elif (why := _bad_id(docid)) is not None:
                problems.add(scan.line(), f"query {q}, document {shown(docid)}: the document id {why}.")
                ok = False
            elif docid in docs:
                ok = _twice(scan, q, docid)
            else:
                docs[docid] = score_or_none
            c = scan.peek()
            scan.pos += 1
            if c == "}":
                break
            if c != ",":
                scan.pos -= 1
                scan.syntax(f"',' or '}}' in query {q}'s object")
    if ok and not problems:
        ranked = sorted(((score, docid) for docid, score in docs.items()), reverse=True)
        text = "".join(f"{qid} Q0 {docid} {rank} {score!r} {tag}\n"
                       for rank, (score, docid) in enumerate(ranked, 1)).encode()
        out.write(text)
        stats.queries += 1
        stats.lines += len(ranked)
        stats.bytes += len(text)


def _plain_entries(scan: _Scanner, docs: dict[str, float], q: str) -> bool | None:
    """Read the usual entries (a plain id, a JSON number, then ``,`` or ``}``), one regular-expression match each.

    Returns at the first entry that is not one (None: the caller reads it), or at the query's ``}``: whether every
    entry read here was taken (False: a problem was recorded).
    """
    ok = True
    match = re.compile(_PAIR_TEXT).match
    scan.fill()
    buf, pos = scan.buf, scan.pos
    refill = len(buf) - _LOOKAHEAD
    while True:
        if pos > refill and not scan.eof:
            scan.pos = pos
            scan.fill()
            buf, pos = scan.buf, scan.pos
            refill = len(buf) - _LOOKAHEAD
        m = match(buf, pos)
        if m is None:
            scan.pos = pos
            return None  # a problem recorded above keeps the query's lines from being written
        docid, number, sep = m.groups()
        if len(number) > MAX_NUMBER_CHARS:
            scan.pos = pos
            return None  # a problem recorded above keeps the query's lines from being written
        pos = m.end()
        score = float(number)
        if docid in docs or score in _INFINITE:
            scan.pos = pos
            if docid in docs:
                ok = _twice(scan, q, docid)
            else:
                scan.problems.add(scan.line(), f"query {q}, document {shown(docid)}: the score {number[:20]!r} "
                                               "overflows a double; use a finite number.")
                ok = False
        else:
            docs[docid] = score
        if sep == "}":
            scan.pos = pos
            return ok


def _twice(scan: _Scanner, q: str, docid: str) -> bool:
    scan.problems.add(scan.line(), f"query {q}: document {shown(docid)} appears twice; keep one score per "
                                   "(query, document).")
    return False


def _score(scan: _Scanner, q: str, docid: str) -> float | None:
    """The score at ``pos``; None when it is refused (the problem recorded, the value skipped)."""
    where = f"query {q}, document {shown(docid)}"
    c = scan.peek()
    if c in "[{" and c:
        scan.problems.add(scan.line(), f"{where}: {scan.describe()} where a score belongs; {_FIX}.")
        scan.skip()
        return None
    if c == '"':
        text = scan.string()
        scan.problems.add(scan.line(), f"{where}: the score {shown(text)} is a string, not a number.")
        return None
    line = scan.line()
    token = scan.bare()
    if not token:
        scan.syntax("a score")
    if len(token) > MAX_NUMBER_CHARS:
        scan.problems.add(line, f"{where}: the score is a number of more than {MAX_NUMBER_CHARS} characters "
                                f"({token[:12]}…); write at most 17 significant digits.")
        return None
    if token in ("true", "false", "null"):
        scan.problems.add(line, f"{where}: the score {token} is not a number.")
        return None
    if token in _NONFINITE:
        scan.problems.add(line, f"{where}: the score {token} is not a finite number (JSON has no NaN or "
                                "Infinity); give every document a finite score.")
        return None
    if re.fullmatch(_NUMBER_TEXT, token) is None:
        scan.problems.add(line, f"{where}: the score {token[:20]!r} is not a JSON number.")
        return None
    value = float(token)
    if math.isinf(value):
        scan.problems.add(line, f"{where}: the score {token[:20]!r} overflows a double; use a finite number.")
        return None
    return value


def _bad_id(value: str) -> str | None:
    if not value:
        return "is empty"
    if any(c.isspace() for c in value):
        return "contains a space, which a TREC run cannot hold"
    if any(c < " " for c in value):
        return "contains a control character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "holds a lone surrogate escape (\\ud800-\\udfff), which is no character"
    return None


def json_run_to_trec(data: bytes, *, path: str = "run.json", tag: str = "json") -> bytes:
    """The TREC run that a JSON run ``{qid: {docid: score}}`` stands for; ``RunFormatError`` naming keys otherwise.

    :func:`json_run_convert` on bytes held in memory (small runs, tests).
    """
    out = io.BytesIO()
    json_run_convert(io.BytesIO(data), out, path=path, tag=tag)
    return out.getvalue()


_GZIP_MAGIC = b"\x1f\x8b"


class _Gunzip:
    """A gzip file's inflated bytes as a stream (members one after another); ``RunFormatError`` when corrupt."""

    def __init__(self, fh: BinaryIO, path: str) -> None:
        self.fh = fh
        self.path = path
        self.inflate = zlib.decompressobj(31)

    def read(self, n: int = -1) -> bytes:
        room = n if n > 0 else 1 << 20
        try:
            while True:
                if self.inflate.eof:
                    rest = self.inflate.unused_data or self.fh.read(_READ)
                    if not rest:
                        return b""
                    self.inflate = zlib.decompressobj(31)
                    data = rest
                else:
                    data = self.inflate.unconsumed_tail or self.fh.read(_READ)
                    if not data:
                        raise EOFError("it ends before its end marker")
                piece = self.inflate.decompress(data, room)
                if piece:
                    return piece
        except (EOFError, zlib.error) as exc:
            raise RunFormatError(self.path, [Problem(None, f"the gzip file is truncated or corrupt ({exc}); "
                                                           "compress the run again")]) from None


def _head(path: str) -> bytes:
    """The first bytes of a file's content (inflated when gzip); b"" when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(4096)
    except OSError:
        return b""
    if not raw.startswith(_GZIP_MAGIC):
        return raw
    try:
        return zlib.decompressobj(31).decompress(raw, 256)
    except zlib.error:
        return b""


def is_json_run_file(path: str) -> bool:
    """Whether ``path`` is a regular file whose content (gzip or not) opens a JSON object: a JSON run.

    A pipe is not looked at (reading its first bytes would consume them): the TREC reader reads it.
    """
    return os.path.isfile(path) and looks_like_json_run(_head(path))


def json_run_file_to_trec(path: str, out_path: str) -> JsonRunStats:
    """Convert the JSON run file ``path`` (plain or gzip) into the TREC run file ``out_path``, as the site does."""
    name = os.path.basename(path)
    stem = name.removesuffix(".gz").removesuffix(".json")
    tag = "".join("_" if c.isspace() else c for c in stem)[:60] or "json"
    with open(path, "rb") as fh, open(out_path, "wb") as out:
        stream: BinaryIO = fh
        if fh.read(2) == _GZIP_MAGIC:
            fh.seek(0)
            stream = _Gunzip(fh, path)  # type: ignore[assignment]  # read() is all the reader asks of it
        else:
            fh.seek(0)
        return json_run_convert(stream, out, path=path, tag=tag)
