"""A plain, unvectorized implementation of the metric contract, kept as a second opinion.

Nothing here is fast or clever on purpose: files are read line by line with
``str.split`` (text after the run tag ignored, as trec_eval does), each
query's rows are sorted as a Python list, and every measure is the textbook
loop over that list (``plain_measures``). It shares no code with the
vectorized core (``_kernel``, ``kernels``, ``scoring``) beyond the family
declarations, so when both give the same per-query values, two independent
readings of the rules agree. ``evaluation.verify`` uses it as the second
implementation for double-precision datasets (pytrec_eval reads scores in
single precision), and its reader and depth cut for pytrec_eval too.

Inputs are assumed valid: the core refuses malformed files before this runs.
"""

from __future__ import annotations

import gzip
import io
import math
import os
import struct
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from typing import IO

from .conventions import EmptyQueries, ScorePrecision
from .measures import FAMILIES, Measure
from .plain_measures import Query

PlainQrels = dict[str, dict[str, int]]
PlainRun = dict[str, dict[str, float]]
#: A file to read: a path, its bytes, or a function that opens it afresh as a binary stream each time it is called
#: (a stored file, read twice for an ungrouped run); the stream is closed after reading.
TextSource = str | os.PathLike[str] | bytes | Callable[[], IO[bytes]]


def _open_binary(path: TextSource) -> IO[bytes] | gzip.GzipFile:
    """A binary stream over a file or bytes, gunzipped by magic bytes (closing it closes what is under it)."""
    if isinstance(path, bytes):
        data = io.BytesIO(path)
        return gzip.GzipFile(fileobj=data, mode="rb") if path[:2] == b"\x1f\x8b" else data
    if callable(path):
        with path() as f:  # opened twice rather than peeked: a stored file's stream need not seek
            magic = f.read(2)
        raw = path()
        if magic == b"\x1f\x8b":  # GzipFile does not close a file object it was given
            return _ClosingGzip(raw)
        return raw
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


class _ClosingGzip(gzip.GzipFile):
    """A gzip stream that also closes the file object under it."""

    def __init__(self, raw: IO[bytes]):
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def _text_blocks(stream: IO[bytes] | gzip.GzipFile, block: int = 1 << 20) -> Iterator[str]:
    """The stream's text (UTF-8, a BOM dropped) in pieces of whole lines, a megabyte read at a time (a stored
    file's own per-line machinery, Django's ``File``, cost more than the lines themselves); each piece without its
    last line end (lines end at ``\\n`` only)."""
    rest = b""
    while len(rest) < 3 and (data := stream.read(block)):
        rest += data
    rest = rest.removeprefix(b"\xef\xbb\xbf")
    while True:
        cut = rest.rfind(b"\n") + 1
        if cut:
            yield rest[:cut - 1].decode("utf-8")
            rest = rest[cut:]
        data = stream.read(block)
        if not data:
            break
        rest += data
    if rest:
        yield rest.decode("utf-8")


def _lines(path: TextSource) -> Iterator[list[str]]:
    """Tokenized data lines of a text file or bytes (gzip by magic bytes; BOM, blank and # lines skipped).

    Read a block at a time, so a 7M-line run never sits in memory as text.
    """
    with _open_binary(path) as stream:
        for text in _text_blocks(stream):
            for line in text.split("\n"):
                parts = line.split()
                if parts and not parts[0].startswith("#"):
                    yield parts


def read_plain_qrels(path: TextSource) -> PlainQrels:
    """``{qid: {docid: grade}}`` from a qrels file (``qid iter docid grade``)."""
    out: PlainQrels = {}
    for q, _iter, d, g in _lines(path):
        out.setdefault(q, {})[d] = int(g)
    return out


def read_plain_run(path: TextSource) -> PlainRun:
    """``{qid: {docid: score}}`` from a run file (``qid Q0 docid rank score tag``, text after the tag ignored)."""
    out: PlainRun = {}
    for parts in _lines(path):
        out.setdefault(parts[0], {})[parts[2]] = float(parts[4])
    return out


def iter_plain_run(path: TextSource) -> Iterator[tuple[str, dict[str, float]]]:
    """A run file's consecutive lines of one query at a time: ``(qid, {docid: score})``.

    A grouped file (the usual) gives each query once; in an ungrouped one a
    query comes back later with more rows, which the caller must merge.
    """
    with _open_binary(path) as stream:
        yield from plain_run_groups(_text_blocks(stream))


def plain_run_groups(texts: Iterable[str]) -> Iterator[tuple[str, dict[str, float]]]:
    """``iter_plain_run`` over text already read: pieces of whole lines (a query's lines may run on into the next
    piece), without line ends at their ends.

    ``_lines``' rule, with its loop written out here: this reading is most of the double entry's time (222,000
    lines at BSARD scale), and a piece without a ``#`` needs no look for a comment on each line.
    """
    qid: str | None = None
    docs: dict[str, float] = {}
    for text in texts:
        comments = "#" in text
        for line in text.split("\n"):
            parts = line.split()
            if not parts or comments and parts[0].startswith("#"):
                continue
            q = parts[0]
            if q != qid:
                if qid is not None:
                    yield qid, docs
                qid, docs = q, {}
            docs[parts[2]] = float(parts[4])
    if qid is not None:
        yield qid, docs


def read_text_bytes(path: TextSource, limit: int) -> bytes | None:
    """The file's bytes, gunzipped by magic bytes and without a UTF-8 BOM; None when they are more than ``limit``."""
    pieces, size = [], 0
    with _open_binary(path) as stream:
        while size <= limit and (data := stream.read(min(1 << 24, limit + 1 - size))):  # a stream may give less
            pieces.append(data)
            size += len(data)
    if size > limit:
        return None
    return b"".join(pieces).removeprefix(b"\xef\xbb\xbf")


def as_float32(x: float) -> float:
    """``x`` rounded to a C float, as trec_eval 9.x stores a score (±inf beyond its range, as a C cast gives)."""
    try:
        return float(struct.unpack("f", struct.pack("f", x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


def ranked(docs: Mapping[str, float], precision: ScorePrecision) -> list[str]:
    """Docids by score descending (compared in ``precision``), ties by docid descending as strings.

    Python compares str by code point, which for UTF-8 text is the byte order
    trec_eval's ``strcmp`` uses.
    """
    if precision == "float32":
        return [d for d, _ in sorted(docs.items(), key=lambda kv: (as_float32(kv[1]), kv[0]), reverse=True)]
    return [d for d, _ in sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def measure_value(measure: Measure, ranking: Sequence[str], grades: Mapping[str, int],
                  qrels_grades: Mapping[str, int], threshold: int) -> float:
    """One measure for one query, by its family's plain implementation.

    ``ranking`` is the query's docids in order, already cut at the depth;
    ``grades`` the grade each retrieved docid gets (judged ones only);
    ``qrels_grades`` every judgment of the query (for |relevant| and ideal DCG).
    """
    return FAMILIES[measure.family].reference(Query(ranking, grades, qrels_grades, threshold), measure.k)


def evaluated_queries(qrels: Mapping[str, Mapping[str, int]], threshold: int,
                      empty_queries: EmptyQueries, run: Container[str] | None = None) -> list[str]:
    """The queries every average is over, sorted (``run``: the run's queries, needed for ``"trec_eval"``)."""
    if empty_queries == "count":
        return sorted(qrels)
    if empty_queries == "trec_eval":
        if run is None:
            raise ValueError("the trec_eval convention averages over the run's queries: give them")
        return sorted(q for q in qrels if q in run)
    return sorted(q for q, d in qrels.items() if any(g >= threshold for g in d.values()))


def per_query(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
              measures: Sequence[Measure], *, depth: int, threshold: int, score_precision: ScorePrecision,
              empty_queries: EmptyQueries,
              in_corpus: Callable[[str], bool] | None = None) -> dict[str, dict[str, float]]:
    """``{qid: {measure: value}}`` for the evaluated queries, by the rules of docs/metrics.md.

    A query the run lacks scores 0; a retrieved docid for which ``in_corpus``
    is False counts as unjudged (non-relevant, no gain).
    """
    out: dict[str, dict[str, float]] = {}
    for q in evaluated_queries(qrels, threshold, empty_queries, run):
        judged = qrels[q]
        ranking = ranked(run.get(q, {}), score_precision)[:depth]
        grades = {d: judged[d] for d in ranking if d in judged}
        if in_corpus is not None:
            grades = {d: g for d, g in grades.items() if in_corpus(d)}
        out[q] = {m.name: measure_value(m, ranking, grades, judged, threshold) for m in measures}
    return out
