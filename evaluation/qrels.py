"""Reading and caching relevance judgments (qrels).

Format: ``qid iter docid grade`` per line, any run of spaces or tabs between
columns; blank lines and ``#`` comments are skipped, as trec_eval does. A grade
is an integer; grades below the threshold (default 1), including 0 and
negative ones, are judged non-relevant. A (qid, docid) pair twice is an error.

A ``Qrels`` is compact (numpy arrays sorted by query then docid) and has a fast
``to_bytes``/``from_bytes`` so a worker can cache one per qrels version.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import numpy as np

from . import _kernel as K
from .errors import Notice, ProblemCollector, QrelsFormatError, no_relevant_notice

QRELS_COLUMNS = "query id, iteration, document id, grade"
_GRADE_MESSAGE = "the grade {token!r} is not a whole number; grades are integers (e.g. 0, 1, 2)"
_FORMAT_VERSION = 1
#: Larger grades would not survive the cast to int64 (and no qrels needs them).
_MAX_GRADE = 1_000_000


@dataclass(eq=False)
class Qrels:
    """Judgments sorted by (query, docid), with lookup structures for scoring.

    ``qids`` is sorted; ``qidx[j]`` indexes it for judgment ``j``.
    """

    name: str
    qids: list[str]
    qidx: np.ndarray
    doc_words: np.ndarray
    grades: np.ndarray
    threshold: int = 1
    notices: list[Notice] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._index = {q: i for i, q in enumerate(self.qids)}
        rel = self.grades >= self.threshold
        self.n_relevant_per_query = np.bincount(self.qidx[rel], minlength=len(self.qids)).astype(np.int64)
        self.doc_keys = K.hash_words(self.doc_words) if len(self.grades) else np.zeros(0, dtype=np.uint64)
        keys = K.pair_key(self.qidx, self.doc_keys)
        self._order = np.argsort(keys, kind="stable")
        self._sorted_keys = keys[self._order]
        # A 2^22-bit prefilter: a run row whose key hits an empty slot cannot be judged,
        # which spares a binary search for almost every row of a big run.
        self._bitmap = np.zeros(1 << 22, dtype=bool)
        self._bitmap[(keys >> np.uint64(42)).astype(np.intp)] = True

    # -- queries

    def n_relevant(self, qid: str) -> int:
        """Number of judgments of ``qid`` with grade ≥ threshold (0 for unknown queries)."""
        i = self._index.get(qid)
        return 0 if i is None else int(self.n_relevant_per_query[i])

    def query_index(self, qid: str) -> int | None:
        """Position of ``qid`` in ``qids``, or None."""
        return self._index.get(qid)

    def __len__(self) -> int:
        return len(self.grades)

    # -- lookups used by scoring

    def lookup(self, qidx: np.ndarray, doc_words: np.ndarray, doc_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For run rows (query index into ``qids``, docid words/keys): (judged mask, grade).

        Rows with ``qidx < 0`` are never judged. Exact: hash hits are confirmed
        on the docid words.
        """
        n = len(qidx)
        judged = np.zeros(n, dtype=bool)
        grade = np.zeros(n, dtype=np.int64)
        rows, grades = self.judged_rows(qidx, doc_words, doc_keys)
        judged[rows] = True
        grade[rows] = grades
        return judged, grade

    def judged_rows(self, qidx: np.ndarray, doc_words: np.ndarray, doc_keys: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        """``lookup`` without the per-row arrays: the judged rows, ascending, and their grades."""
        n = len(qidx)
        if n == 0 or len(self.grades) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        # Blocks keep the temporaries of a 7M-row run to a few MB.
        found_rows, found_keys = [], []
        block = 1 << 20
        for a in range(0, n, block):
            q = qidx[a:a + block]
            keys = K.pair_key(q, doc_keys[a:a + block])
            slot = keys >> np.uint64(42)
            cand = self._bitmap[slot.view(np.int64)]
            cand &= q >= 0
            r = np.flatnonzero(cand)
            found_rows.append(r + a)
            found_keys.append(keys[r])
        rows = np.concatenate(found_rows)
        keys = np.concatenate(found_keys)
        pos = np.searchsorted(self._sorted_keys, keys)
        pos = np.minimum(pos, len(self._sorted_keys) - 1)
        hit = self._sorted_keys[pos] == keys
        rows, j = rows[hit], self._order[pos[hit]]
        nw = max(doc_words.shape[1], self.doc_words.shape[1])
        same = (self.qidx[j] == qidx[rows]) & (
            K.pad_words(doc_words[rows], nw) == K.pad_words(self.doc_words[j], nw)).all(axis=1)
        rows, j = rows[same], j[same]
        return rows, self.grades[j]

    def positive_grades(self) -> tuple[np.ndarray, np.ndarray]:
        """Positive grades per query, sorted descending, as (query index, grade) (for ideal DCG)."""
        pos = self.grades > 0
        q = self.qidx[pos]
        g = self.grades[pos]
        order = np.lexsort((-g, q))
        return q[order], g[order]

    # -- conversions

    def to_dict(self) -> dict[str, dict[str, int]]:
        """``{qid: {docid: grade}}``."""
        out: dict[str, dict[str, int]] = {q: {} for q in self.qids}
        for i, d, g in zip(self.qidx.tolist(), K.words_to_strings(self.doc_words), self.grades.tolist(), strict=True):
            out[self.qids[i]][d] = g
        return out

    @classmethod
    def from_dict(cls, d: dict[str, dict[str, int]], *, name: str = "<dict>", threshold: int = 1) -> Qrels:
        """Build qrels from ``{qid: {docid: grade}}``."""
        qids = sorted(d)
        qidx, docids, grades = [], [], []
        for i, q in enumerate(qids):
            for docid in sorted(d[q]):
                qidx.append(i)
                docids.append(docid)
                grades.append(int(d[q][docid]))
        words = K.strings_to_words(docids) if docids else np.zeros((0, 1), dtype=np.uint64)
        return cls._build(name, qids, np.array(qidx, dtype=np.int32), words,
                          np.array(grades, dtype=np.int64), threshold)

    @classmethod
    def _build(cls, name: str, qids: list[str], qidx: np.ndarray, words: np.ndarray, grades: np.ndarray,
               threshold: int) -> Qrels:
        qrels = cls(name=name, qids=qids, qidx=qidx, doc_words=words, grades=grades, threshold=threshold)
        empty = int((qrels.n_relevant_per_query == 0).sum())
        if empty:
            qrels.notices.append(no_relevant_notice(empty, len(qids), threshold))
        return qrels

    def with_threshold(self, threshold: int) -> Qrels:
        """The same judgments with another relevance threshold."""
        return Qrels._build(self.name, self.qids, self.qidx, self.doc_words, self.grades, threshold)

    def to_bytes(self) -> bytes:
        """Serialize (npz) for a per-version cache."""
        buf = io.BytesIO()
        np.savez(buf, version=np.array(_FORMAT_VERSION), name=np.array(self.name),
                 qids=np.array(self.qids, dtype=str),
                 qidx=self.qidx, doc_words=self.doc_words, grades=self.grades,
                 threshold=np.array(self.threshold))
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Qrels:
        """Inverse of ``to_bytes``."""
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            if int(z["version"]) != _FORMAT_VERSION:
                raise ValueError("cached qrels were written by another version; parse them again")
            return cls._build(str(z["name"]), [str(q) for q in z["qids"].tolist()], z["qidx"],
                              z["doc_words"], z["grades"], int(z["threshold"]))


def read_qrels(source: K.Source, *, name: str | None = None, threshold: int = 1) -> Qrels:
    """Read qrels from a path (``.gz`` ok), bytes or a binary file object.

    Raises ``QrelsFormatError`` with ``line: reason`` problems.
    """
    stream, display, own = K.open_source(source, name)
    try:
        collector = ProblemCollector(display, QrelsFormatError)
        q_parts, d_parts, g_parts, l_parts = [], [], [], []
        codes: dict[str, int] = {}
        for chunk in K.iter_chunks(stream, ncols=4, columns_help=QRELS_COLUMNS, collector=collector):
            q_parts.append(K.codes_for(chunk, 0, codes, collector, "query id"))
            d_parts.append(K.column_words(chunk, 2, collector, "document id"))
            K.check_integers(chunk, 3, collector, _GRADE_MESSAGE)
            scratch = ProblemCollector(display, QrelsFormatError)
            grades = K.parse_scores(chunk, 3, scratch)
            for i in np.flatnonzero(np.abs(grades) > _MAX_GRADE).tolist():
                collector.add(int(chunk.line_no[i]), f"the grade {K.shown_token(chunk.token(i, 3))} is too large; "
                                                    "grades are small integers (e.g. 0, 1, 2)")
            g_parts.append(np.where(np.abs(grades) > _MAX_GRADE, 0, grades).astype(np.int64))
            l_parts.append(chunk.line_no)
        if not q_parts and not collector:
            collector.add(None, f"the qrels file is empty; each line holds: {QRELS_COLUMNS}")
        collector.raise_if_any()
    finally:
        if own:
            stream.close()
    nw = max(p.shape[1] for p in d_parts)
    words = np.concatenate([K.pad_words(p, nw) for p in d_parts])
    grades = np.concatenate(g_parts)
    lines = np.concatenate(l_parts)
    qids = sorted(codes)
    index = {q: i for i, q in enumerate(qids)}
    to_sorted = np.array([index[q] for q in codes], dtype=np.int32)
    qidx = to_sorted[np.concatenate(q_parts)]
    order = np.lexsort(K.sort_keys_asc(words) + [qidx]) if len(qidx) else np.zeros(0, dtype=np.int64)
    qidx, words, grades, lines = qidx[order], words[order], grades[order], lines[order]
    # Duplicates are adjacent after sorting by (query, docid).
    same = (qidx[1:] == qidx[:-1]) & (words[1:] == words[:-1]).all(axis=1)
    for i in np.flatnonzero(same)[:20].tolist():
        a, b = sorted((int(lines[i]), int(lines[i + 1])))
        collector.add(b, f"document {K.words_to_strings(words[i:i + 1])[0]!r} is judged twice for query "
                         f"{qids[qidx[i]]!r} (lines {a} and {b}); keep one judgment per (query, document)")
    collector.raise_if_any()
    return Qrels._build(display, qids, qidx, words, grades, threshold)
