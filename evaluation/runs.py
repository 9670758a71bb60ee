"""Reading, checking and writing TREC run files.

A run has one row per retrieved document: ``qid Q0 docid rank score tag``.
Rows are kept column-wise in numpy arrays (query codes, docid words, scores,
line numbers) so that a 7-million-line run costs a few hundred MB and is
parsed without a Python object per line; see ``_kernel`` for the tokenizer.

The rank column is checked (it must be an integer) but never used: the order
is decided by score and docid, as in trec_eval.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from typing import IO, Any, BinaryIO, cast

import numpy as np

from . import _kernel as K
from .conventions import DEFAULT_SCORE_PRECISION, ScorePrecision
from .errors import MAX_COUNTED_PROBLEMS, Notice, Problem, ProblemCollector, RunFormatError, counted

RUN_COLUMNS = "query id, Q0, document id, rank, score, run tag"
_RANK_MESSAGE = ("the rank {token!r} is not a whole number; the rank column is read but not used "
                 "(documents are ordered by score), so write 1, 2, 3, …")


@dataclass(eq=False)
class Run:
    """A parsed run, column-wise.

    ``qids`` are the distinct query ids in order of first appearance;
    ``qcode[i]`` indexes ``qids`` for row ``i``. ``doc_words`` holds each docid
    as zero-padded uint64 words (see ``_kernel``).
    """

    name: str
    qids: list[str]
    qcode: np.ndarray
    doc_words: np.ndarray
    scores: np.ndarray
    line_no: np.ndarray | None = None  # None: row i is line i + 1 (no blank or comment lines)
    tags: list[str] = field(default_factory=list)
    n_lines: int = 0
    notices: list[Notice] = field(default_factory=list)
    _dkey: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.scores)

    @property
    def doc_keys(self) -> np.ndarray:
        """One uint64 per row identifying the docid (exact for docids of ≤ 8 bytes)."""
        if self._dkey is None:
            self._dkey = K.hash_words(self.doc_words)
        return self._dkey

    def line_of(self, row: int) -> int:
        """1-based line number of a row in its file."""
        return int(self.line_no[row]) if self.line_no is not None else int(row) + 1

    def docids(self, rows: np.ndarray | None = None) -> list[str]:
        """Docids of the given rows (all rows by default) as strings."""
        words = self.doc_words if rows is None else self.doc_words[rows]
        return K.words_to_strings(words)

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {docid: score}}``, the shape pytrec_eval takes."""
        out: dict[str, dict[str, float]] = {q: {} for q in self.qids}
        for code, docid, score in zip(self.qcode.tolist(), self.docids(), self.scores.tolist(), strict=True):
            out[self.qids[code]][docid] = score
        return out

    @classmethod
    def from_dict(cls, d: dict[str, dict[str, float]], *, name: str = "<dict>", tag: str = "run") -> Run:
        """Build a run from ``{qid: {docid: score}}``."""
        qids = list(d)
        qcode, docids, scores = [], [], []
        for i, q in enumerate(qids):
            for docid, score in d[q].items():
                qcode.append(i)
                docids.append(docid)
                scores.append(float(score))
        n = len(scores)
        return cls(name=name, qids=qids, qcode=np.array(qcode, dtype=np.int32),
                   doc_words=K.strings_to_words(docids) if n else np.zeros((0, 1), dtype=np.uint64),
                   scores=np.array(scores, dtype=np.float64), tags=[tag], n_lines=n)

    def ranked(self, *, score_precision: ScorePrecision = DEFAULT_SCORE_PRECISION,
               ) -> dict[str, list[tuple[str, float]]]:
        """Rows per query in evaluation order (score desc in ``score_precision``, then docid desc)."""
        order = np.lexsort(K.sort_keys_desc(self.doc_words)
                           + [-K.compared_scores(self.scores, score_precision), self.qcode])
        out: dict[str, list[tuple[str, float]]] = {}
        docids = self.docids(order)
        for code, docid, score in zip(self.qcode[order].tolist(), docids, self.scores[order].tolist(), strict=True):
            out.setdefault(self.qids[code], []).append((docid, score))
        return out


def read_run(source: K.Source, *, name: str | None = None, max_lines: int | None = None,
             max_bytes: int | None = None) -> Run:
    """Read a TREC run from a path (``.gz`` ok), bytes or a binary file object.

    Raises ``RunFormatError`` with up to 20 ``line: reason`` problems: wrong
    column count, a score that is not a finite number, a rank that is not an
    integer, an empty file, text that is not UTF-8, a (query, docid) pair
    twice, or content that is not a text table at all.
    """
    stream, display, own = K.open_source(source, name)
    try:
        return _read_run(stream, display, max_lines, max_bytes)
    finally:
        if own:
            stream.close()


def _read_run(stream: BinaryIO, display: str, max_lines: int | None, max_bytes: int | None) -> Run:
    collector = ProblemCollector(display, RunFormatError, limit=MAX_COUNTED_PROBLEMS)
    qid_codes: dict[str, int] = {}
    tags: dict[str, None] = {}
    size = K.size_hint(stream)
    # About 40 bytes per line in usual runs; the columns grow if that was optimistic.
    cols = K.Columns({"q": (np.int32, 0), "d": (np.uint64, 1), "s": (np.float64, 0)},
                     capacity=(size // 30 + 1024) if size else 1 << 16)
    # Line numbers are kept only once a line is not a row (blank, comment, refused): until then row i is line i + 1.
    lines: list[np.ndarray] | None = None
    n_lines = 0
    trailing: list[int] = []  # first line numbers with text after the tag, and their count
    n_trailing = 0
    for chunk in K.iter_chunks(stream, ncols=6, columns_help=RUN_COLUMNS, collector=collector,
                               max_lines=max_lines, max_bytes=max_bytes, trailing_text=True):
        if chunk.trailing is not None:
            n_trailing += len(chunk.trailing)
            trailing.extend(chunk.trailing[:3 - len(trailing)].tolist())
        if lines is None and (chunk.line_no[0] != cols.n + 1 or chunk.line_no[-1] != cols.n + len(chunk.line_no)):
            lines = [np.arange(1, cols.n + 1, dtype=np.int64)]
        if lines is not None:
            lines.append(chunk.line_no)
        n_lines = int(chunk.line_no[-1])
        cols.append(q=K.codes_for(chunk, 0, qid_codes, collector, "query id"),
                    d=K.column_words(chunk, 2, collector, "document id"),
                    s=K.parse_scores(chunk, 4, collector))
        K.check_integers(chunk, 3, collector, _RANK_MESSAGE)
        _collect_distinct(chunk, 5, tags, collector)
    if not cols.n and not collector:
        collector.add(None, "the file is empty (or holds only blank and # comment lines); "
                            f"a run has one line per document: {RUN_COLUMNS}")
    collector.raise_if_any()
    line_no = np.concatenate(lines) if lines is not None else None
    run = Run(name=display, qids=list(qid_codes), qcode=cols.get("q"), doc_words=cols.get("d"),
              scores=cols.get("s"), line_no=line_no, tags=list(tags), n_lines=n_lines)
    del cols
    _check_duplicates(run, collector)
    if n_trailing:
        shown = ", ".join(str(n) for n in trailing) + (", …" if n_trailing > len(trailing) else "")
        where = f"line{'s' if n_trailing > 1 else ''} {shown}"
        run.notices.append(Notice("trailing_text", f"{counted(n_trailing, 'line has', 'lines have')} text after the "
                                  f"run tag ({where}); it was ignored, as trec_eval ignores it", n_trailing))
    if len(run.tags) > 1:
        shown = ", ".join(repr(t) for t in run.tags[:5])
        run.notices.append(Notice("several_tags", f"the run has {len(run.tags)} different tags ({shown}); "
                                  "one file should hold one run", len(run.tags)))
    return run


def _collect_distinct(chunk: K.Chunk, col: int, seen: dict[str, None], collector: ProblemCollector) -> None:
    """Record the distinct values of a column (the run tags), at most 1000 of them."""
    if len(seen) >= 1000:
        return
    s = chunk.starts[:, col]
    L = chunk.lengths(col)
    if len(L) and int(L.max()) <= 8:
        # Tags are short and nearly always one value: one gathered word per row suffices.
        words = (chunk.w8[s] & K.low_mask(L)).reshape(-1, 1)
        if (words == words[0]).all():  # the usual chunk: one tag
            seen.setdefault(K.words_to_strings(words[:1])[0], None)
            return
    else:
        words = K.column_words(chunk, col, collector, "run tag")
    change = np.ones(len(words), dtype=bool)
    change[1:] = (words[1:] != words[:-1]).any(axis=1)
    for value in K.words_to_strings(words[change]):
        seen.setdefault(value, None)


_DUPLICATE_BLOCK_CELLS = 1 << 20


def _check_duplicates(run: Run, collector: ProblemCollector) -> None:
    """Refuse a (query, docid) pair that appears twice, naming both lines.

    Runs are nearly always grouped by query, so the docid keys are sorted per
    query in a (queries × rows) matrix, which is several times faster than one
    sort of the whole column; other runs sort (query, docid) keys globally.
    """
    n = len(run)
    if n < 2:
        return
    q = run.qcode
    newq = q[1:] != q[:-1]
    heads = np.concatenate(([0], np.flatnonzero(newq) + 1))
    lens = np.diff(np.append(heads, n))
    width = int(lens.max())
    if len(heads) == len(run.qids) and len(heads) * width <= 2 * n:
        # A few thousand queries at a time: the matrix and its temporaries stay a few MB, reused from
        # block to block (one matrix of the whole run was fresh memory, about 8 bytes a row, to fault in).
        keys = run.doc_keys
        per_block = max(1, _DUPLICATE_BLOCK_CELLS // width)
        found = []
        for a in range(0, len(heads), per_block):
            h, m = heads[a:a + per_block], lens[a:a + per_block]
            lo, hi = int(h[0]), int(h[-1] + m[-1])
            if width * len(h) == hi - lo:
                block = keys[lo:hi].reshape(len(h), width).copy()
            else:
                block = np.full((len(h), width), np.iinfo(np.uint64).max, dtype=np.uint64)
                block[np.repeat(np.arange(len(h)), m), np.arange(hi - lo) - np.repeat(h - lo, m)] = keys[lo:hi]
            block.sort(axis=1)
            eq = block[:, 1:] == block[:, :-1]
            eq &= np.arange(1, width) < m[:, None]  # both members are real rows, not padding
            if eq.any():
                found.append(block[:, 1:][eq])
        if not found:
            return
        suspicious = np.unique(np.concatenate(found))
        rows = np.flatnonzero(np.isin(keys, suspicious))
    else:
        keys = K.pair_key(q, run.doc_keys)
        ordered = np.sort(keys)
        suspicious = np.unique(ordered[1:][ordered[1:] == ordered[:-1]])
        del ordered
        if len(suspicious) == 0:
            return
        rows = np.flatnonzero(np.isin(keys, suspicious))
    # Exact check on the real words: the hash only proposes candidates.
    seen: dict[tuple[int, bytes], int] = {}
    for r in rows.tolist():
        ident = (int(q[r]), run.doc_words[r].tobytes())
        if ident in seen:
            first = seen[ident]
            collector.add(run.line_of(r),
                          f"document {run.docids(np.array([r]))[0]!r} appears twice for query "
                          f"{run.qids[q[r]]!r} (lines {run.line_of(first)} and {run.line_of(r)}); "
                          "keep one row per (query, document)",
                          "a document appears twice for a query; keep one row per (query, document)")
        else:
            seen[ident] = r
    collector.raise_if_any()


def sniff_run(first_bytes: bytes, *, n_lines: int = 50) -> list[Problem]:
    """Cheaply check the first lines of an upload (inside a web request).

    Returns the problems found (empty list when the start looks like a run).
    The last line is ignored when ``first_bytes`` does not end with a newline,
    because it is probably cut.
    """
    head = first_bytes
    if head.startswith(K.UTF8_BOM):
        head = head[3:]
    reason = K.sniff_content(head[:65536])
    if reason:
        return [Problem(1, reason)]
    lines = head.split(b"\n")
    if not head.endswith(b"\n") and len(lines) > 1:
        lines = lines[:-1]
    text = b"\n".join(lines[:n_lines]) + b"\n"
    collector = ProblemCollector("<upload>", RunFormatError)
    try:
        for chunk in K.iter_chunks(cast(BinaryIO, _Bytes(text)), ncols=6, columns_help=RUN_COLUMNS, collector=collector,
                                   trailing_text=True):
            K.check_scores(chunk, 4, collector)
            K.check_integers(chunk, 3, collector, _RANK_MESSAGE)
    except RunFormatError:
        pass
    problems = sorted(collector.problems, key=lambda p: (p.line is not None, p.line or 0))
    # Blank once a cut last line is dropped is not "empty": that line was not seen.
    if not problems and not head.strip(b" \t\r\n"):
        problems.append(Problem(None, "the file is empty"))
    return problems


@dataclass
class RunScan:
    """What one streaming pass over a run learnt, without keeping its rows.

    ``docs_per_topic``: rows per query id, in order of first appearance.
    ``n_lines``: lines read (blank and comment lines included); ``n_rows``: data rows.
    """

    docs_per_topic: dict[str, int]
    n_lines: int
    n_rows: int


def scan_run(stream: BinaryIO, *, max_lines: int | None = None, max_bytes: int | None = None,
             max_line_bytes: int | None = None, max_qid_bytes: int | None = None,
             max_docid_bytes: int | None = None) -> RunScan:
    """Check a whole run in one streaming pass, in bounded memory (one chunk and one count per query).

    The format checks of :func:`read_run` that need no memory of earlier rows
    (columns, UTF-8, scores, ranks, caps on lines and bytes), plus caps on the
    length of a data line, a query id and a document id. Not checked here: a
    (query, document) pair twice, which needs every row. Raises
    ``RunFormatError`` with up to 20 ``line: reason`` problems, and every problem counted by rule (up to
    ``MAX_COUNTED_PROBLEMS``: ``InputError.groups``); a file without a data row (empty, only blank lines or only
    ``#`` comments) is one of them.
    """
    collector = ProblemCollector("<upload>", RunFormatError, limit=MAX_COUNTED_PROBLEMS)
    codes: dict[str, int] = {}
    counts = np.zeros(0, dtype=np.int64)
    n_rows = n_lines = 0
    caps = [(0, max_qid_bytes, "query id"), (2, max_docid_bytes, "document id")]
    for chunk in K.iter_chunks(stream, ncols=6, columns_help=RUN_COLUMNS, collector=collector,
                               max_lines=max_lines, max_bytes=max_bytes, trailing_text=True):
        n_lines = int(chunk.line_no[-1])
        if max_line_bytes is not None:
            width = chunk.ends[:, -1] - chunk.starts[:, 0]
            for i in np.flatnonzero(width > max_line_bytes):
                collector.add(int(chunk.line_no[i]), f"the line is {int(width[i]):,} bytes long; run lines have at "
                                                     f"most {max_line_bytes:,} bytes ({RUN_COLUMNS})",
                              f"the line is longer than {max_line_bytes:,} bytes, the most a run line has "
                              f"({RUN_COLUMNS})")
        for col, cap, label in caps:
            if cap is None:
                continue
            length = chunk.lengths(col)
            for i in np.flatnonzero(length > cap):
                collector.add(int(chunk.line_no[i]), f"the {label} {chunk.token(int(i), col)[:40]!r}… is "
                                                     f"{int(length[i]):,} bytes long; a {label} has at most {cap} bytes",
                              f"the {label} is longer than {cap} bytes, the most a {label} has")
        q = K.codes_for(chunk, 0, codes, collector, "query id")
        K.check_scores(chunk, 4, collector)
        K.check_integers(chunk, 3, collector, _RANK_MESSAGE)
        if len(codes) > len(counts):
            counts = np.concatenate((counts, np.zeros(len(codes) - len(counts) + 1024, dtype=np.int64)))
        counts[:len(codes)] += np.bincount(q, minlength=len(codes))
        n_rows += len(q)
    if not n_rows and not collector:
        collector.add(1, "the file holds no run line (it is empty, or only blank lines and # comments); "
                            f"a run has one line per document: {RUN_COLUMNS}")
    collector.raise_if_any()
    return RunScan(docs_per_topic={qid: int(counts[i]) for qid, i in codes.items()}, n_lines=n_lines, n_rows=n_rows)


class _Bytes:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def read(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        self.pos += len(out)
        return out


def docid_scheme_ok(docids: Iterable[str], corpus_ids: Container[str]) -> bool:
    """True when at least half of ``docids`` belong to the corpus (a cheap scheme check)."""
    docids = list(docids)
    if not docids:
        return True
    inside = sum(1 for d in docids if d in corpus_ids)
    return inside * 2 >= len(docids)


def write_run(run: Run, fileobj: IO[Any], *, tag: str, score_precision: ScorePrecision = DEFAULT_SCORE_PRECISION) -> None:
    """Write a run in TREC format, ranked by score desc (in ``score_precision``) then docid desc.

    ``fileobj`` is a text or binary file object. Scores are written with
    ``repr`` so that reading the file back gives the same doubles.
    """
    rows = []
    for qid, docs in run.ranked(score_precision=score_precision).items():
        for rank, (docid, score) in enumerate(docs, start=1):
            rows.append(f"{qid} Q0 {docid} {rank} {score!r} {tag}\n")
    text = "".join(rows)
    try:
        fileobj.write(text)
    except TypeError:
        fileobj.write(text.encode("utf-8"))
