"""The command line's fast path: runs scored by the compiled ``_fastscore``, without importing numpy.

At the leaderboard's own scale (BSARD: 222 topics × 1,000 rows) scoring takes a few milliseconds; what a
Python command costs there is starting up, and numpy's import alone took longer than trec_eval's whole run.
So ``python -m evaluation score`` first offers the files to ``_fastscore`` (C, built by ``make native``):
it takes what researchers usually send (its header lists what it gives back) and the usual families, computes
the same doubles as ``evaluation.kernels`` and numpy's means, and counts what the numpy path's notices say;
this module says them in the numpy path's words (``evaluation.errors``) and inflates gzip files for it. Anything
else, or no compiled module, returns None and the command takes the numpy path (``cli_score``), which says every
refusal and notice.

No numpy here, on purpose: importing this module must stay cheap (zlib and isal are small extension modules).
"""

from __future__ import annotations

import os
import zlib

# ISA-L's inflate: the same stream API as zlib's, 2.3x its speed (a BSARD-sized gzip run: 11 ms, not 26); pinned in
# requirements.txt and requirements-core.txt, imported plainly.
from isal.isal_zlib import decompressobj as _decompressobj, error as _isal_error

from .conventions import DEFAULT_EMPTY_QUERIES, EMPTY_QUERIES, EmptyQueries, ScorePrecision, split_measure_name
from .errors import (
    Notice,
    depth_cut_notice,
    empty_counted_notice,
    missing_queries_notice,
    no_relevant_notice,
    no_shared_queries_error,
    ties_notice,
    unknown_queries_notice,
)

# isal's stubs type its error class as an instance; it is a class (isal_zlib.error, a subclass of Exception).
INFLATE_ERRORS: tuple[type[Exception], ...] = (zlib.error, _isal_error)  # type: ignore[assignment]

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time (~3 ms of the command's start)
    from collections.abc import Callable
    from typing import IO, BinaryIO

    from .corpus import CorpusIds  # the type only: the command's fast path imports no numpy (corpus.py does)

try:
    from . import _fastscore as _native
except ImportError:  # not built (make native): the numpy path scores everything
    _native = None  # type: ignore[assignment]

#: The families the compiled scorer computes, with its codes for them.
FAMILY_CODES = {"R": 0, "P": 1, "MAP": 2, "MRR": 3, "nDCG": 4, "RP": 5, "Success": 6}
#: nDCG's discount is libm's log2 here and numpy's np.log2 in the kernel; they agree on every rank up to
#: 1,620 (numpy's AVX-512 log2 differs from libm's first at 1,621), so deeper nDCG cutoffs take the numpy path.
NDCG_MAX_K = 1000


class PlainScores:
    """What the fast path computed: evaluated queries (sorted), per-query values and means by measure name.

    A plain class, not a dataclass: ``dataclasses`` would add ~15 ms to the start this module exists to save.
    """

    def __init__(self, *, names: list[str], qids: list[str], per_query: dict[str, list[float]],
                 means: dict[str, float], warnings: list[Notice], n_lines: int) -> None:
        self.names = names
        self.qids = qids
        self.per_query = per_query
        self.means = means
        self.warnings = warnings
        self.n_lines = n_lines


def available() -> bool:
    """Whether the compiled scorer is built (``make native``)."""
    return _native is not None


def plain_measures(text: str) -> list[tuple[str, int, int]] | None:
    """``"R@100,RP"`` → ``[("R@100", code, 100), ("RP", code, 0)]``, duplicates dropped; None for anything the
    fast path does not compute (another family, a bad name: ``measures.parse_measures`` says what is wrong)."""
    out: list[tuple[str, int, int]] = []
    for name in text.split(","):
        if not name.strip():
            continue
        parts = split_measure_name(name)
        if parts is None or parts[0] not in FAMILY_CODES:
            return None
        family, k_text = parts
        if (family == "RP") != (k_text is None):
            return None
        k = int(k_text) if k_text is not None else 0
        if (k_text is not None and k < 1) or (family == "nDCG" and k > NDCG_MAX_K):
            return None
        label = f"{family}@{k}" if k_text is not None else family
        if all(label != seen for seen, _, _ in out):
            out.append((label, FAMILY_CODES[family], k))
    return out or None


def score_plain(*, run: str, qrels: str, measures: str, depth: int, threshold: int,
                score_precision: ScorePrecision, empty_queries: EmptyQueries = DEFAULT_EMPTY_QUERIES,
                ) -> PlainScores | None:
    """Score the run file against the qrels file when the compiled scorer takes both; None otherwise.

    The values and means equal ``evaluate(read_qrels(qrels, threshold=threshold), read_run(run), measures,
    depth=depth, score_precision=score_precision, empty_queries=empty_queries)`` bit for bit, and the warnings
    are the ones ``python -m evaluation score`` gives for those files, in its words and order: the qrels'
    ``no_relevant`` (under ``omit`` only), then the evaluation's. A run with no query of the qrels is refused
    as the numpy path refuses it (``errors.no_shared_queries_error``, a ``RunFormatError``).
    """
    if _native is None or depth < 1:
        return None
    wanted = plain_measures(measures)
    if wanted is None or not (os.path.isfile(run) and os.path.isfile(qrels)):
        return None  # a pipe (/dev/stdin, <(zcat run.gz)) is read once: by the numpy path, which reads it whole
    qrels_input = _qrels_contents(qrels)
    if qrels_input is None:
        return None
    codes = [(code, k) for _, code, k in wanted]
    try:
        found = None
        for grouped in (True, False):  # a run not grouped by query is read a second time, every row kept
            with open(run, "rb") as fh:
                gzipped = fh.read(2) == GZIP_MAGIC
                fh.seek(0)
                found = _native.score(Inflate(fh) if gzipped else run, qrels_input, codes, depth, threshold,
                                      score_precision == "float32", EMPTY_QUERIES.index(empty_queries), grouped)
            if found != "ungrouped":
                break
    except (OSError, UnicodeEncodeError, ValueError):  # unreadable, or a path the C library cannot take (a NUL)
        return None
    if not isinstance(found, tuple) or len(found) != 4:  # (without its details)
        return None
    qids, columns, means, counts = found[:4]
    if not _count(counts, "in_both"):  # as trec_eval: no query with both results and judgments is an error
        raise no_shared_queries_error(run, _count(counts, "unknown"), _count(counts, "n_queries"))
    names = [name for name, _, _ in wanted]
    return PlainScores(names=names, qids=qids, per_query=dict(zip(names, columns, strict=True)),
                       means=dict(zip(names, means, strict=True)),
                       warnings=_notices(counts, n_evaluated=len(qids), threshold=threshold, depth=depth,
                                         empty_queries=empty_queries),
                       n_lines=_count(counts, "n_lines"))


class StoredScores:
    """What the fast path computed for the worker (``score_stored``): the raw result of ``_fastscore.score``
    with its details, ``evaluation.fastevaluate`` makes an ``Evaluation`` of it."""

    def __init__(self, *, names: list[str], qids: list[str], columns: list[list[float]], means: list[float],
                 counts: dict[str, int | list[str]], details: tuple[bytes, bytes, bytes, bytes, bytes],
                 warnings: list[Notice]) -> None:
        self.names = names
        self.qids = qids
        self.columns = columns
        self.means = means
        self.counts = counts
        self.details = details
        self.warnings = warnings


def score_stored(*, open_run: Callable[[], IO[bytes]], qrels: bytes, measures: list[str], depth: int,
                 threshold: int, score_precision: ScorePrecision, empty_queries: EmptyQueries,
                 max_lines: int | None = None, max_bytes: int | None = None,
                 corpus: CorpusIds | None = None) -> StoredScores | None:
    """The worker's fast path: a stored run (``open_run`` opens it afresh, plain or gzip) on a qrels version's
    bytes; None whenever the numpy path must read it, so that it says what it says.

    Handed back besides what ``score_plain`` hands back: measure names not in the fast path's own spelling, a
    run over ``max_lines`` lines or ``max_bytes`` bytes (uncompressed; the numpy path refuses it in its words),
    a run sharing no query with the qrels (the worker's numpy path scores it as it always has), and on a dataset
    with a ``corpus`` a run naming a document outside it within the depth (the numpy path counts those rows as
    non-relevant with a notice, or refuses the run when most are outside). The warnings are
    ``scoring.evaluate``'s (the qrels' ``no_relevant`` notice is the command line's, not stored).
    """
    if _native is None or depth < 1:
        return None
    wanted = plain_measures(",".join(measures))
    if wanted is None or [name for name, _, _ in wanted] != measures:
        return None
    codes = [(code, k) for _, code, k in wanted]
    try:
        found = None
        for grouped in (True, False):  # a run not grouped by query is read a second time, every row kept
            with open_run() as fh:
                feed = Capped(fh, max_bytes)
                found = _native.score(feed, qrels, codes, depth, threshold, score_precision == "float32",
                                      EMPTY_QUERIES.index(empty_queries), grouped, True,
                                      None if corpus is None else corpus.keys)
            if found != "ungrouped":
                break
    except (OSError, ValueError):
        return None
    if not isinstance(found, tuple) or len(found) != 5:
        return None
    qids, columns, means, counts, details = found[0], found[1], found[2], found[3], found[4]
    if not _count(counts, "in_both") or (max_lines is not None and _count(counts, "n_lines") > max_lines):
        return None
    warnings = [n for n in _notices(counts, n_evaluated=len(qids), threshold=threshold, depth=depth,
                                    empty_queries=empty_queries) if n.code != "no_relevant"]
    return StoredScores(names=measures, qids=qids, columns=columns, means=means, counts=counts, details=details,
                        warnings=warnings)


class Capped:
    """The feed of a stored run's stream: its bytes, inflated when it is gzip (``Inflate``), None (hand back) past
    ``max_bytes`` uncompressed bytes or when the stream cannot seek back over its first two bytes."""

    def __init__(self, fh: IO[bytes], max_bytes: int | None) -> None:
        self.fh = fh
        self.max_bytes = max_bytes
        self.total = 0
        self.source: Callable[[int], bytes | None] | None = None

    def __call__(self, room: int) -> bytes | None:
        if self.source is None:
            head = self.fh.read(2)
            try:
                self.fh.seek(0)
            except (OSError, ValueError, AttributeError):
                return None
            self.source = Inflate(self.fh) if head == GZIP_MAGIC else self.fh.read  # type: ignore[arg-type]
        piece = self.source(room)
        if piece is None:
            return None
        self.total += len(piece)
        if self.max_bytes is not None and self.total > self.max_bytes:
            return None
        return piece


#: A gzip file's first bytes (``_kernel.sources.open_source`` looks at the same two).
GZIP_MAGIC = b"\x1f\x8b"


class Inflate:
    """The feed of a gzipped run: ``feed(room)`` gives the next at most ``room`` inflated bytes, ``b""`` at the end,
    None when the file is not one whole gzip member (truncated, corrupt, several members or trailing bytes: the
    numpy path reads those and says what it finds). Memory stays a few chunks, whatever the file's size."""

    #: Compressed bytes read at a time: 64 KiB, under glibc's threshold for serving an allocation by mmap (128 KiB at
    #: first). Reads of 256 KiB were each a fresh mapping, faulted in page by page and unmapped again: a gzipped
    #: 7M-line run cost 70,000 minor page faults and 0.16 s of system time, 1.25 s of CPU in all against 0.93 s
    #: (4,400 faults), medians of 5 interleaved runs. Capping each inflated piece at 64 KiB as well cost more
    #: (1.04 s: the input's unconsumed tail copied at each call) than it saved.
    CHUNK = 1 << 16

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self.inflate = _decompressobj(wbits=16 + zlib.MAX_WBITS)  # the gzip wrapper, its checksum checked

    def __call__(self, room: int) -> bytes | None:
        try:
            while not self.inflate.eof:  # one inflated piece per call: no joining, no copy the reader would repeat
                data = self.inflate.unconsumed_tail or self.fh.read(self.CHUNK)
                if not data:
                    return None  # the stream ends before its end: truncated
                piece = self.inflate.decompress(data, room)
                if piece:
                    return piece
        except INFLATE_ERRORS:
            return None
        if self.inflate.unused_data or self.fh.read(1):
            return None  # another member, or bytes after the member
        return b""


def _qrels_contents(path: str) -> str | bytes | None:
    """The qrels as the compiled scorer reads them: the path, or a gzip file's inflated bytes (qrels are small).

    None when the file cannot be opened or is not one whole gzip member: the numpy path reads it and says why.
    """
    try:
        with open(path, "rb") as fh:
            if fh.read(2) != GZIP_MAGIC:
                return path
            fh.seek(0)
            feed, pieces = Inflate(fh), []
            while piece := feed(1 << 20):
                pieces.append(piece)
    except (OSError, ValueError):
        return None
    return None if piece is None else b"".join(pieces)


def _notices(counts: dict[str, int | list[str]], *, n_evaluated: int, threshold: int, depth: int,
             empty_queries: EmptyQueries) -> list[Notice]:
    """The notices of what the compiled scorer counted, in the numpy path's order (``cli_score.score``)."""
    notices: list[Notice] = []
    if empty_queries == "omit" and _count(counts, "no_relevant"):
        notices.append(no_relevant_notice(_count(counts, "no_relevant"), _count(counts, "n_queries"), threshold))
    if _count(counts, "unknown"):
        shown = counts["unknown_shown"]
        notices.append(unknown_queries_notice(shown if isinstance(shown, list) else [], _count(counts, "unknown")))
    if empty_queries != "omit" and _count(counts, "empty_evaluated"):
        notices.append(empty_counted_notice(_count(counts, "empty_evaluated"), empty_queries))
    if _count(counts, "missing"):
        notices.append(missing_queries_notice(_count(counts, "missing"), n_evaluated))
    if _count(counts, "tie_groups"):
        notices.append(ties_notice(_count(counts, "tie_groups"), _count(counts, "tie_queries")))
    if _count(counts, "cut_rows"):
        notices.append(depth_cut_notice(_count(counts, "cut_rows"), _count(counts, "cut_queries"), depth))
    return notices


def _count(counts: dict[str, int | list[str]], key: str) -> int:
    """One of the compiled scorer's counts (all ints but ``unknown_shown``, a list of ids)."""
    value = counts[key]
    return value if isinstance(value, int) else 0


__all__ = ["FAMILY_CODES", "NDCG_MAX_K", "PlainScores", "StoredScores", "available", "plain_measures", "score_plain",
           "score_stored"]
