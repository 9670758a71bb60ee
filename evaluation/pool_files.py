"""A pool on disk: export for external assessment tools, import of their judgments.

Export formats:

* **TREC** (``write_pool_trec``): a qrels file with one line per pooled
  document, ``qid 0 docid -1``. A negative grade is trec_eval's "in the pool,
  not judged yet", so the file is valid qrels as it stands; the assessor
  replaces each ``-1`` with a grade.
* **CSV** (``write_pool_csv``): ``query_id,doc_id,position,priority,runs,grade``
  with an empty ``grade`` column to fill in (a spreadsheet, Label Studio, …).

Import (``read_judgments``) takes either form back (CSV when the first line
is the header) and checks every line against the pool: a pair that is not in
the pool, a grade that is not a whole number in the allowed range and a pair
judged twice are refused with ``line: reason`` (up to 20 at once), before
anything is stored. A line still holding ``-1`` (or an empty CSV grade) is a
document not judged yet: it is skipped and counted, so a half-done file can be
imported.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from . import _kernel as K
from .csv_cells import csv_rows, csv_text
from .errors import ProblemCollector, QrelsFormatError
from .pooling import Pool

CSV_HEADER = ["query_id", "doc_id", "position", "priority", "runs", "grade"]
#: Judgment files are a pool's size, so they are read whole; this caps them.
MAX_JUDGMENT_BYTES = 50 << 20


class JudgmentFormatError(QrelsFormatError):
    """A judgments file that does not fit its pool."""


def write_pool_trec(pool: Pool, fileobj: IO[str] | IO[bytes]) -> None:
    """Write ``qid 0 docid -1`` per pooled document, in judging order."""
    _write(fileobj, "".join(f"{e.qid} 0 {e.docid} -1\n" for e in pool))


def write_pool_csv(pool: Pool, fileobj: IO[str] | IO[bytes]) -> None:
    """Write the pool as CSV with an empty ``grade`` column."""
    _write(fileobj, csv_rows([CSV_HEADER] + [
        [q, e.docid, i, e.priority, " ".join(sorted(e.ranks)), ""]
        for q, entries in pool.entries.items() for i, e in enumerate(entries, start=1)]))


def _write(fileobj: Any, text: str) -> None:
    # A text stream takes str; a binary one (an HTTP response, a gzip file) takes UTF-8 bytes.
    try:
        fileobj.write(text)
    except TypeError:
        fileobj.write(text.encode("utf-8"))


@dataclass(frozen=True)
class JudgmentFile:
    """Judgments read back: ``grades`` is ``{qid: {docid: grade}}``."""

    grades: dict[str, dict[str, int]]
    not_yet_judged: int

    def __len__(self) -> int:
        return sum(len(d) for d in self.grades.values())


def read_judgments(source: K.Source, pool: Pool, *, grades: range = range(0, 4), name: str | None = None) -> JudgmentFile:
    """Read judgments (TREC qrels lines or the pool's CSV) and check them against ``pool``.

    ``grades`` is the allowed scale. Raises ``JudgmentFormatError`` with
    ``file:line: reason`` problems.
    """
    stream, display, own = K.open_source(source, name)
    try:
        data = stream.read(MAX_JUDGMENT_BYTES + 1)
    finally:
        if own:
            stream.close()
    collector = ProblemCollector(display, JudgmentFormatError)
    if len(data) > MAX_JUDGMENT_BYTES:
        collector.add(None, f"the file is larger than {MAX_JUDGMENT_BYTES >> 20} MB; a pool's judgments are smaller, "
                            "so this is probably not the right file")
        collector.raise_now()
    if data.startswith(K.UTF8_BOM):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        collector.add(line, "the text is not UTF-8; save the file as UTF-8")
        collector.raise_now()
    is_csv = text.lstrip().lstrip('"').lower().startswith("query_id")  # quoted as written, or not
    rows = _csv_rows(text, collector) if is_csv else _trec_rows(text, collector)
    pairs = pool.pairs()
    # The CSV export wrote ids the way a spreadsheet shows them as text (``'=x`` for ``=x``): read them back.
    written = {(csv_text(q), csv_text(d)): (q, d) for q, d in pairs} if is_csv else {}
    allowed = f"{grades.start}–{grades.stop - 1}"
    out: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    waiting = 0
    for line, qid, docid, grade_text in rows:
        qid, docid = written.get((qid, docid), (qid, docid))
        if (qid, docid) not in pairs:
            collector.add(line, f"document {docid!r} of query {qid!r} is not in this pool; "
                                "judge only the documents the pool lists (check the ids)")
            continue
        grade_text = grade_text.strip()
        if grade_text in ("", "-1"):
            waiting += 1
            continue
        try:
            grade = int(grade_text)
        except ValueError:
            collector.add(line, f"the grade {grade_text!r} is not a whole number; use a grade {allowed}")
            continue
        if grade not in grades:
            collector.add(line, f"the grade {grade} is outside the allowed grades {allowed}")
            continue
        if (qid, docid) in first_line:
            collector.add(line, f"document {docid!r} of query {qid!r} is judged twice (lines "
                                f"{first_line[(qid, docid)]} and {line}); keep one judgment")
            continue
        first_line[(qid, docid)] = line
        out.setdefault(qid, {})[docid] = grade
    if not first_line and not collector:
        collector.add(None, f"the file holds no judgment; replace the -1 (or fill in the empty grade column) "
                            f"of the exported pool with grades {allowed}")
    collector.raise_if_any()
    return JudgmentFile(out, waiting)


def _trec_rows(text: str, collector: ProblemCollector) -> Iterator[tuple[int, str, str, str]]:
    """(line, qid, docid, grade) per data line of a qrels-style file; bad lines go to ``collector``."""
    for i, raw in enumerate(text.splitlines(), start=1):
        tokens = raw.split()
        if not tokens or tokens[0].startswith("#"):
            continue
        if len(tokens) != 4:
            collector.add(i, f"expected 4 columns (query id, iteration, document id, grade), found {len(tokens)}")
            continue
        yield i, tokens[0], tokens[2], tokens[3]


def _csv_rows(text: str, collector: ProblemCollector) -> Iterator[tuple[int, str, str, str]]:
    """(line, qid, docid, grade) per CSV record; bad records go to ``collector``."""
    reader = csv.reader(io.StringIO(text))
    header = [h.strip().lower() for h in next(reader)]
    need = ("query_id", "doc_id", "grade")
    lacking = [h for h in need if h not in header]
    if lacking:
        collector.add(1, f"the header lacks the column{'s' if len(lacking) > 1 else ''} {', '.join(lacking)}; "
                         f"keep the exported header ({','.join(CSV_HEADER)})")
        return
    at = {h: header.index(h) for h in need}
    for row in reader:
        line = reader.line_num
        if not any(c.strip() for c in row):
            continue
        if max(at.values()) >= len(row):
            collector.add(line, f"this record has {len(row)} fields; the header names {len(header)}")
            continue
        yield line, row[at["query_id"]].strip(), row[at["doc_id"]].strip(), row[at["grade"]]
