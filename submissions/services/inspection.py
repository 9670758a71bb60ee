"""Inspection: reading and checking an upload before anything is stored.

Everything here reads what a participant sends and refuses it before it costs a
slot, naming the line and the fix (:class:`~submissions.errors.UploadRefused`):
the size and gzip caps and the run's format, read once as a stream within the
request's budget (``upload_inspect``); a JSON run converted to TREC by a child
with its own bounds (``json_run_as_trec``, the JSON door); the digests of the
content and of its ranking (``InspectedUpload``, ``ranking_text``); the docid
scheme and a prediction file's first lines; the queries and the coverage rule
against the split (``check_queries``, and ``stored_run_refusal`` for the worker
when the request read only part of the file); the metadata
(``clean_metadata``) and a split's provenance rule (``check_provenance``); the
refusal messages (``grouped_message``). Nothing here writes a row or stores a
file: whether an inspected upload is taken (quotas, places, identical entries)
and how it is stored and queued is :mod:`.admission`'s.
"""

from __future__ import annotations

import hashlib
import logging
import re
import tempfile
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile

from catalogue.models import Dataset, Split, Topic
from evaluation.errors import InputError, Problem, RunFormatError, counted
from evaluation.ladder import coverage_check
from evaluation.run_json import SHAPE as JSON_RUN_SHAPE, looks_like_json_run
from evaluation.run_json_child import ChildLimits, ContentCut, ConversionStopped, json_run_convert_in_child
from evaluation.runs import Run, RunScan, scan_run

from ..errors import UploadRefused
from ..models import Submission
from ..provenance import CouldHaveSeen, TrainingData, provenance_gaps, refusal_message
from .predictions import EXAMPLES, predictions_head_problems
from .results import corpus_ids_for

logger = logging.getLogger(__name__)


GZIP_MAGIC = b"\x1f\x8b"
#: How much of the (decompressed) file the cheap checks look at.
SNIFF_BYTES = 256 * 1024
SNIFF_LINES = 50
#: When more than this share of the first lines' docids is unknown, the id scheme is wrong.
UNKNOWN_DOCID_SHARE = 0.5

#: The metadata a participant gives and may edit later.
METADATA_FIELDS = (
    "system_name",
    "description",
    "team",
    "paper_url",
    "code_url",
    "family",
    "training_data",
    "training_data_note",
    "models_used",
    "could_have_seen",
    "params",
    "latency_ms",
    "llm_calls_per_query",
    "llm_tokens_per_query",
    "hardware",
    "visibility",
)


def _human_bytes(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"  # pragma: no cover


def problems_to_details(problems: list[Problem]) -> list[dict]:
    return [{"line": p.line, "reason": p.reason} for p in problems]


def groups_to_details(exc: InputError) -> list[dict]:
    """One entry per kind of problem: ``line`` and ``reason`` of its first line (as each problem had them before
    they were grouped), the first ``lines`` with it and their ``count``."""
    return [{"line": g.line, "reason": g.reason, "lines": list(g.lines), "count": g.count} for g in exc.groups]


#: A refusal's message names this many kinds of problem; the details list them all.
MESSAGE_GROUPS = 3


def grouped_message(exc: InputError, *, what: str = "The run", fix: str) -> str:
    """A few lines whatever the file: "The run has a problem on all 5,000 lines: comma- or semicolon-separated — use
    spaces or tabs … (lines 1, 2, 3, …)", or the first kinds of problem and how many more; then ``fix``."""
    groups = exc.groups
    n_lines = exc.n_lines if len(groups) == 1 else None  # several: "of N lines" once, in the head
    described = [g.describe(n_lines=n_lines, complete=exc.complete) for g in groups[:MESSAGE_GROUPS]]
    if len(groups) == 1:
        head = f"{what} has a problem on {described[0]}" if groups[0].count > 1 or groups[0].line is not None \
            else f"{what} has a problem: {described[0]}"
    else:
        n = exc.n_problem_lines
        if not exc.complete:
            on = f"at least {counted(n, 'line')}"
        elif exc.n_lines:
            on = f"{n:,} of {counted(exc.n_lines, 'line')}"
        else:
            on = counted(n, "line")
        more = len(groups) - len(described)
        rest = f"; and {counted(more, 'other kind')} (listed below)" if more else ""
        head = f"{what} has {len(groups)} kinds of problem on {on}: " + "; ".join(described) + rest
    stopped = " Checking stopped there." if not exc.complete else ""
    return f"{head.rstrip('.')}.{stopped} {fix}"

# --- the cheap checks ------------------------------------------------------------
#
# The budget of one request: the file is read once, as a stream. A gzip file is
# inflated by at most one read at a time and refused once it expands more than
# LEXBOARD_MAX_GZIP_RATIO times past its first RATIO_GRACE_BYTES (a bomb costs a
# few MB of inflation, not its size). At most LEXBOARD_UPLOAD_SCAN_BYTES of
# content are checked in the request, in one pass (format, caps, coverage,
# identical content); a larger file gets the same checks over its whole length
# from the worker (``submissions.services.scoring``), before it is scored. A gzip
# file larger than that is still inflated to its end in the request, the output
# counted and discarded, so one past LEXBOARD_MAX_DECOMPRESSED_BYTES is refused
# before it costs a slot (docs/security.md: the bound and its cost).


@dataclass(frozen=True)
class InspectedUpload:
    """What the cheap checks learnt about an upload."""

    size: int
    sha256: str
    compressed: bool
    decompressed_size: int
    #: sha256 of the decompressed content; blank when only part of it was read.
    content_sha256: str = ""
    #: sha256 of a run's lines without their tag (the last column), spaces single; blank as ``content_sha256``, and
    #: when not asked for (``upload_inspect(ranking=False)``: a split that is no shared task's).
    ranking_sha256: str = ""
    #: the whole content was checked in the request (False: the worker checks the rest).
    complete: bool = True
    #: rows per query id (retrieval runs), over the part that was read.
    docs_per_topic: dict[str, int] = field(default_factory=dict)


#: The gzip ratio is judged only past this much content (tiny files compress oddly).
RATIO_GRACE_BYTES = 1024 * 1024
_RAW_READ = 64 * 1024
#: Runs of blanks, which the ranking digest writes as one space.
_BLANKS = re.compile(rb"[ \t]+")


def ranking_line(line: bytes) -> bytes:
    """A run line (no newline) without its last column (the tag) and the blanks around it: what the ranking digest
    keeps of it. The rule is ``re.sub(rb"[ \\t]+[^ \\t\\r\\n]+[ \\t]*\\r?$", b"", line)`` (one ``\\r`` at the end
    goes with the tag; a line with no blank before its last token, or a ``\\r`` inside it, is kept whole), written
    without the regex, whose backtracking cost 0.6 s of the request on a 6.8 MB run (tests/submissions/
    test_ranking_digest.py compares the two)."""
    body = line[:-1] if line.endswith(b"\r") else line
    body = body.rstrip(b" \t")
    blank = max(body.rfind(b" "), body.rfind(b"\t"))
    if blank < 0 or body.rfind(b"\r") > blank:
        return line
    return body[:blank + 1].rstrip(b" \t")


def ranking_text(lines: bytes) -> bytes:
    """Whole run lines as the ranking digest reads them: each without its tag, every run of blanks one space."""
    canonical = _canonical_ranking_text(lines)
    if canonical is not None:
        return canonical
    out = b"\n".join(map(ranking_line, lines.split(b"\n")))
    return _BLANKS.sub(b" ", out) if b"\t" in out or b"  " in out else out


def _canonical_ranking_text(lines: bytes) -> bytes | None:
    """``ranking_text`` of lines written the usual way (single spaces between columns, none at a line's ends, no tab
    or carriage return), where a line's tag is what follows its last space: cut at once for the whole block (a
    line-by-line loop cost 0.2 s of the request on a 6.8 MB run); None for any other text."""
    if b"\t" in lines or b"\r" in lines or lines.startswith(b" ") or lines.endswith(b" "):
        return None
    line_ends = _single_spaced_line_ends(lines)
    if line_ends is None:
        return None
    same = _one_tag_ranking_text(lines, line_ends=line_ends)
    return same if same is not None else _cut_ranking_text(lines)


#: ``_single_spaced_line_ends`` compares this many bytes at a time (its temporaries are three times as large): in the
#: web server's thread 1.5-2.3 ms for the bench's 6.6 MB run, where 1 MiB blocks, with five temporaries each, took
#: 5.3 ms (py-spy over 11 uploads; a single-threaded loop shows no difference, 1.6 ms either way).
_PAIR_BLOCK = 1 << 18


def _single_spaced_line_ends(lines: bytes, *, block: int = _PAIR_BLOCK) -> int | None:
    """The number of line ends in ``lines``; None when they hold two spaces in a row, or a space after or before a
    line end (``b"  "``, ``b"\\n "``, ``b" \\n"``). Byte comparisons in numpy, a block at a time: 1.5 ms for a
    5.9 MB run, where the three ``in`` tests took 19 ms (median of 7: a two-byte search starting with a space stops
    at every space); and the line ends counted from the same comparison, 0.5 ms where ``bytes.count`` took 4 ms."""
    data = np.frombuffer(lines, dtype=np.uint8)
    line_ends = 0
    for start in range(0, len(data), block):
        part = data[start:start + block + 1]  # one byte more: the pair across the blocks' border
        space = part == 0x20
        newline = part == 0x0A
        pair = space[:-1] | newline[:-1]
        pair &= space[1:]  # a space after a space or a line end
        if pair.any():
            return None
        np.logical_and(space[:-1], newline[1:], out=pair)  # a space before a line end
        if pair.any():
            return None
        line_ends += int(np.count_nonzero(newline[:block]))
    return line_ends


def _one_tag_ranking_text(lines: bytes, *, line_ends: int | None = None) -> bytes | None:
    """``_canonical_ranking_text`` of lines that all end with the first line's tag (nearly every run): that tag and
    the space before it taken off each line end by one ``bytes.replace`` (33 ms of CPU for a 6.6 MB run where the
    cut by positions took 114 ms, median of 7 on the loaded 2-core machine); None when a line ends otherwise (then
    fewer tags than line ends were cut). A match can only be a line's last column: it ends at a line end and starts
    at a space; and it holds no other line end, so no two matches share one. Whether every line end was cut is
    read from the length of the result, not from a count of the matches first: the count was a third of the time
    (14 ms instead of 18 ms for the bench's 6.6 MB run, min of 15). ``line_ends``: ``lines.count(b"\\n")``, when
    the caller counted them already (``_single_spaced_line_ends``: 11.6 ms of CPU instead of 13.8 ms for that run,
    min of 25; splitting at the tags and joining with line ends took 13.3 ms)."""
    first = lines[:lines.find(b"\n")] if b"\n" in lines else lines
    space = first.rfind(b" ")
    if space < 0:
        return None
    end = first[space:] + b"\n"
    whole = lines if lines.endswith(b"\n") else lines + b"\n"
    if not whole.endswith(end):  # the last line ends otherwise: no replace spent on it
        return None
    if line_ends is None:
        line_ends = lines.count(b"\n")
    out = whole.replace(end, b"\n")
    if len(whole) - len(out) != (len(end) - 1) * (line_ends + (whole is not lines)):
        return None
    return out if whole is lines else out[:-1]


def _cut_ranking_text(lines: bytes) -> bytes:
    """``_canonical_ranking_text`` of any lines it takes, each cut at its last space by positions (numpy)."""
    data = np.frombuffer(lines, dtype=np.uint8)
    newlines = np.flatnonzero(data == 0x0A)
    ends = np.append(newlines, len(data))  # each line's end (exclusive), the last line's included
    starts = np.concatenate(([0], newlines + 1))
    spaces = np.flatnonzero(data == 0x20)
    before = np.searchsorted(spaces, ends) - 1  # the last space before each line's end
    last = spaces[np.maximum(before, 0)] if len(spaces) else np.zeros(len(ends), dtype=np.int64)
    cut = (before >= 0) & (last >= starts)  # a line with no space keeps its only token
    edges = np.zeros(len(data) + 1, dtype=np.int32)
    edges[last[cut]] -= 1  # drop from the line's last space to its end (the ranges never overlap)
    edges[ends[cut]] += 1
    return data[np.cumsum(edges[:-1]) == 0].tobytes()


class _ContentStream:
    """An upload's content (inflated when gzip) as a stream, within the request's budget.

    ``read`` returns whole lines once the budget is reached and then ends the
    stream, setting ``complete = False``; a gzip file is then inflated to its
    end all the same, counting bytes only, so one past the decompressed cap is
    refused in the request. The sha256 of what was read and its first
    ``SNIFF_BYTES`` are kept on the way; ``digests=False`` leaves out both
    digests (a JSON run's content: its TREC run is digested once converted;
    the ranking digest holds a line until its end, and a JSON run is often one
    line: 15 s and 700 MiB for 20 MB, in the web process); ``ranking=False``
    leaves out the ranking digest alone.
    """

    def __init__(self, upload: UploadedFile, *, compressed: bool, budget: int, digests: bool = True,
                 ranking: bool = True):
        upload.seek(0)
        self.upload = upload
        self.digests = digests
        self.ranked = digests and ranking
        self.inflater = zlib.decompressobj(31) if compressed else None
        self.budget = budget
        self.cap = settings.LEXBOARD_MAX_DECOMPRESSED_BYTES
        self.max_ratio = settings.LEXBOARD_MAX_GZIP_RATIO
        self.consumed = 0
        self.produced = 0
        self.digest = hashlib.sha256()
        # The run without its tags: the same ranking sent again under another tag (#37).
        self.ranking = hashlib.sha256()
        self._pending: list[bytes] = []  # the pieces of a line not ended yet
        self.head = bytearray()
        self.complete = True
        self.ended = False
        #: bytes the whole content inflates to, once counted past the budget (0 otherwise).
        self.inflated_total = 0

    def _used(self) -> int:
        """Compressed bytes inflated so far (read ahead but not yet inflated does not count)."""
        d = self.inflater
        return self.consumed - (len(d.unconsumed_tail) + len(d.unused_data) if d is not None else 0)

    def _raw(self, n: int) -> bytes:
        data = self.upload.read(n)
        self.consumed += len(data)
        return data

    def _inflate(self, n: int) -> bytes:
        d = self.inflater
        assert d is not None
        while True:
            if d.eof:  # the end of one gzip member: another may follow (``cat a.gz b.gz``)
                src = d.unused_data or self._raw(_RAW_READ)
                if not src:
                    return b""
                d = self.inflater = zlib.decompressobj(31)
            elif d.unconsumed_tail:
                src = d.unconsumed_tail
            else:
                src = self._raw(_RAW_READ)
                if not src:
                    raise EOFError("the compressed data ends before its end marker")
            out = d.decompress(src, n)
            if out:
                return out

    def _check_size(self, inflated: int) -> None:
        """Refuse past the decompressed cap, or a gzip that expands more than the ratio allows."""
        if inflated > self.cap:
            raise UploadRefused(
                f"The file decompresses to more than {_human_bytes(self.cap)}, the limit. "
                "Keep at most the dataset's depth of documents per query, or split the run.",
                [{"line": None, "reason": f"decompressed size exceeds {_human_bytes(self.cap)}"}],
            )
        if self.inflater is not None and inflated > RATIO_GRACE_BYTES and inflated > self.max_ratio * self._used():
            raise UploadRefused(
                f"The gzip file expands more than {self.max_ratio} times ({_human_bytes(self._used())} became "
                f"{_human_bytes(inflated)} before the check stopped); runs compress about 5 to 10 times. "
                "This is not a run file (a compression bomb, or mostly blank lines): remove the padding and upload again.",
                [{"line": None, "reason": f"gzip expansion ratio above {self.max_ratio}"}],
            )

    def _inflate_rest(self, inflated: int) -> None:
        """Past the scan budget, inflate the rest only to count it (the output discarded, the ratio still checked):
        a gzip past the decompressed cap is refused here, in the request, before it costs a slot."""
        try:
            while piece := self._inflate(1 << 20):
                inflated += len(piece)
                self._check_size(inflated)
        except (EOFError, zlib.error) as exc:
            raise _gzip_refusal(exc) from None
        self.inflated_total = inflated

    def read(self, n: int = -1) -> bytes:
        if self.ended:
            return b""
        n = n if n and n > 0 else 1 << 20
        try:
            out = self._inflate(n) if self.inflater is not None else self._raw(n)
        except (EOFError, zlib.error) as exc:
            raise _gzip_refusal(exc) from None
        if not out:
            self.ended = True
            if self.ranked:
                self._rank(b"", final=True)
            return b""
        len_before_cut = len(out)
        if self.produced + len(out) > self.budget:
            # Stop at a line end, so the checks see whole lines only.
            keep = self.budget - self.produced
            cut = out.find(b"\n", keep)
            cut = cut if cut >= 0 else out.rfind(b"\n", 0, keep)
            out = out[:cut + 1]
            self.ended = True
            self.complete = False
        self.produced += len(out)
        self._check_size(self.produced)
        if self.ended and self.inflater is not None:
            self._inflate_rest(self.produced + (len_before_cut - len(out)))
        if self.digests:
            self.digest.update(out)
        if self.ranked:
            self._rank(out, final=False)
        if len(self.head) < SNIFF_BYTES:
            self.head += out[: SNIFF_BYTES - len(self.head)]
        return out

    def _rank(self, data: bytes, *, final: bool) -> None:
        """Feed the ranking digest whole lines of ``data``, without their last column and with single blanks."""
        cut = len(data) if final else data.rfind(b"\n") + 1
        if not cut and not final:  # no line ends here: kept as a piece (joined once, not copied at every read)
            self._pending.append(data)
            return
        lines = b"".join([*self._pending, data[:cut]])
        self._pending = [data[cut:]] if cut < len(data) else []
        if lines:
            self.ranking.update(ranking_text(lines))


def _complete_lines(head: bytes, *, whole: bool) -> bytes:
    """Drop a last, cut-off line so the sniffer does not report our cut as the user's error."""
    if whole:
        return head if head.endswith(b"\n") else head + b"\n"
    cut = head.rfind(b"\n")
    return head[: cut + 1] if cut >= 0 else head


def _first_docids(head: bytes) -> list[tuple[int, str]]:
    """(line number, docid) of the first data lines; the format itself is the sniffer's job."""
    rows = []
    for lineno, raw in enumerate(head.split(b"\n"), start=1):
        text = raw.decode("utf-8", errors="replace").lstrip("\ufeff").strip()
        if not text or text.startswith("#"):
            continue
        parts = text.split()
        if len(parts) >= 3:
            rows.append((lineno, parts[2]))
        if len(rows) >= SNIFF_LINES:
            break
    return rows


def _check_docid_scheme(head: bytes, *, dataset: Dataset) -> None:
    """Refuse a run whose first docids are mostly unknown to the corpus: the id scheme is wrong."""
    corpus = corpus_ids_for(dataset=dataset)
    if corpus is None:
        return
    rows = _first_docids(head)
    if not rows:
        return
    unknown = [(line, docid) for line, docid in rows if docid not in corpus]
    if len(unknown) <= UNKNOWN_DOCID_SHARE * len(rows):
        return
    example = dataset.docid_example or "(see the dataset page)"
    details = [
        {"line": line, "reason": f"document id {docid[:60]!r} is not in the {dataset.name} corpus"}
        for line, docid in unknown[:5]
    ]
    raise UploadRefused(
        f"{len(unknown)} of the first {len(rows)} document ids are not in the {dataset.name} corpus: "
        f"the id scheme looks wrong. {dataset.name} uses ids like `{example}` in the third column.",
        details,
    )


def _check_prediction_head(head: bytes, *, dataset: Dataset) -> None:
    """Classification and NER uploads: the first lines must be JSONL predictions for the dataset's task."""

    problems = predictions_head_problems(head, task=dataset.task)
    if problems:
        count = f"{len(problems)} problems" if len(problems) > 1 else "a problem"
        raise UploadRefused(
            f"The first lines of the prediction file have {count} (listed with their line numbers). "
            f"Fix them and upload again; {dataset.name} takes one JSON object per line, e.g. "
            f"{EXAMPLES[dataset.task]}",
            problems_to_details(problems),
        )


def _gzip_refusal(exc: BaseException) -> UploadRefused:
    return UploadRefused(
        "The file starts like gzip but cannot be decompressed (it is truncated or corrupt). "
        "Compress it again with `gzip run.txt`, or upload the plain text file.",
        [{"line": None, "reason": f"gzip: {exc}"}],
    )


def run_scan(stream) -> RunScan:
    """The whole-file checks of a run, in one pass over ``stream``; ``UploadRefused`` names the lines."""
    try:
        return scan_run(
            stream,
            max_lines=settings.LEXBOARD_MAX_RUN_LINES,
            max_bytes=settings.LEXBOARD_MAX_DECOMPRESSED_BYTES,
            max_line_bytes=settings.LEXBOARD_MAX_LINE_BYTES,
            max_qid_bytes=settings.LEXBOARD_MAX_QID_BYTES,
            max_docid_bytes=settings.LEXBOARD_MAX_DOCID_BYTES,
        )
    except RunFormatError as exc:
        raise UploadRefused(
            grouped_message(exc, fix="Fix the file and upload it again; a run has one line per document: "
                                     "qid Q0 docid rank score tag."),
            groups_to_details(exc),
        ) from None


#: The upload's content is copied for the JSON reader's child in pieces of this size (the reader's own reads).
JSON_COPY_BYTES = 64 * 1024


def json_child_limits() -> ChildLimits:
    """The JSON reader's child's bounds (settings; the TREC run it writes is bounded as an upload is)."""
    return ChildLimits(memory_bytes=settings.LEXBOARD_JSON_RUN_MEMORY_BYTES,
                       cpu_seconds=settings.LEXBOARD_JSON_RUN_CPU_SECONDS,
                       wall_seconds=settings.LEXBOARD_JSON_RUN_TIMEOUT_SECONDS,
                       output_bytes=settings.LEXBOARD_MAX_UPLOAD_BYTES + 1)


def _json_child_refusal(name: str, stopped: ConversionStopped, limits: ChildLimits) -> UploadRefused:
    """A child stopped by a limit: what the limit is and what to do, never a 500."""
    trec = "upload it as a TREC run (qid Q0 docid rank score tag per line), which is checked as a stream"
    if stopped.limit == "memory":
        message = (f"{name} is a JSON run whose conversion needs more than {_human_bytes(limits.memory_bytes)} "
                   "of memory, the limit of the JSON reader (it holds one query's documents at once). Keep at most "
                   f"the dataset's depth of documents per query, or {trec}.")
    elif stopped.limit == "cpu":
        message = (f"{name} is a JSON run whose conversion needs more than {limits.cpu_seconds} s of CPU time, the "
                   f"limit of the JSON reader. Keep at most the dataset's depth of documents per query, or {trec}.")
    elif stopped.limit == "time":
        message = (f"{name} is a JSON run not converted within {limits.wall_seconds:g} s, the JSON reader's time "
                   f"limit (the server is busy, or the run is very large). Upload it again later, or {trec}.")
    elif stopped.limit == "output":
        message = (f"{name} is a JSON run whose TREC run is larger than {_human_bytes(settings.LEXBOARD_MAX_UPLOAD_BYTES)}"
                   ", the limit of a run (each line repeats its query id). Keep at most the dataset's depth of "
                   "documents per query, or shorten the query ids.")
    else:
        logger.error("the JSON reader's child failed on %s: %s", name, stopped.detail)
        message = (f"{name} could not be converted from JSON: the JSON reader stopped unexpectedly (the fault is "
                   f"ours, and it is logged). Upload it again later, or {trec}.")
    return UploadRefused(message, [{"line": None, "reason": f"JSON reader's {stopped.limit} limit"
                                    if stopped.limit != "crash" else "JSON reader failed"}])


def json_run_as_trec(*, upload: UploadedFile, dataset: Dataset) -> UploadedFile:
    """A retrieval upload in JSON (MTEB's ``save_predictions``, ranx, ir_measures) as the TREC run it stands for.

    Converted on arrival, so the stored file, the checks, the scoring and the
    downloads are those of any run; any other upload is returned as it is.
    ``submission_create`` keeps the uploaded JSON too (``Submission.json_file``):
    the double entry reads it with a reader of its own.
    The content (inflated, within the size, gzip-ratio and scan caps of every
    upload) is copied to a temporary file and converted by a child process
    with its own bounds (``evaluation.run_json_child``: memory, CPU time, wall
    clock, output size; no secret in its environment), which reads it as a
    stream (``evaluation.run_json``: depth, number, string and key rules
    checked while reading, one query's documents in memory) and writes the
    TREC lines to another temporary file; a problem names the query and
    document keys, or the line of a syntax error; a limit reached is named.
    """
    size = upload.size or 0
    if dataset.task != Dataset.Task.RETRIEVAL or not size or size > settings.LEXBOARD_MAX_UPLOAD_BYTES:
        return upload  # upload_inspect says why an empty or oversized file is refused
    upload.seek(0)
    compressed = upload.read(2) == GZIP_MAGIC
    stream = _ContentStream(upload, compressed=compressed, budget=settings.LEXBOARD_UPLOAD_SCAN_BYTES, digests=False)
    name = (getattr(upload, "name", "") or "run.json").replace("\\", "/").rsplit("/", 1)[-1][:200]

    def too_large() -> UploadRefused:
        return UploadRefused(
            f"{name[:60]} is a JSON run larger than {_human_bytes(settings.LEXBOARD_UPLOAD_SCAN_BYTES)} once "
            "decompressed, more than is read in a request; upload it as a TREC run (qid Q0 docid rank score tag "
            "per line), which is checked as a stream.", [{"line": None, "reason": "JSON run too large"}])

    stem = name.removesuffix(".gz").removesuffix(".json")
    limits = json_child_limits()
    src = tempfile.TemporaryFile()
    out = tempfile.TemporaryFile()
    try:
        head = stream.read(SNIFF_BYTES)
        if not looks_like_json_run(head):
            out.close()
            return upload
        src.write(head)
        # What the reader would read in process: past the budget, the piece that crossed it is not given, and the
        # child's reader reaching the end of what it has is "too large" (ContentCut), after any problem before it.
        while stream.complete and (piece := stream.read(JSON_COPY_BYTES)) and stream.complete:
            src.write(piece)
        src.seek(0)
        try:
            stats = json_run_convert_in_child(src, out, path=name[:60], tag=stem.replace(" ", "_")[:60] or "json",
                                              limits=limits, cut=not stream.complete)
        except ContentCut:
            raise too_large() from None
        except ConversionStopped as stopped:
            raise _json_child_refusal(name[:60], stopped, limits) from None
        except RunFormatError as exc:
            first = exc.problems[0].reason
            more = len(exc.problems) - 1
            raise UploadRefused(
                f"{name[:60]} starts like a JSON run, {JSON_RUN_SHAPE}, but has {len(exc.problems)} "
                f"problem{'s' if len(exc.problems) > 1 else ''}: {first}"
                + (f" (and {more} more, listed)" if more else "") + " Fix them, or upload a TREC run.",
                problems_to_details(exc.problems)) from None
    except BaseException:
        out.close()
        raise
    finally:
        src.close()
        upload.seek(0)
    out.seek(0)
    return UploadedFile(out, name=f"{stem}.trec", content_type="text/plain", size=stats.bytes)


def _file_sha256(upload: UploadedFile, stream: _ContentStream, *, compressed: bool) -> str:
    """The sha256 of the file as sent: the stream's content digest when that read the whole file as it is (plain
    text, to its end, within the budget), sparing a second read and hash of it (4.4 ms for the bench's 6.6 MB run,
    min of 15); otherwise the file read again."""
    if not compressed and stream.ended and stream.complete and stream.consumed == (upload.size or 0):
        return stream.digest.hexdigest()
    digest = hashlib.sha256()
    for chunk in upload.chunks():
        digest.update(chunk)
    upload.seek(0)
    return digest.hexdigest()


def upload_inspect(*, upload: UploadedFile, dataset: Dataset, ranking: bool = True) -> InspectedUpload:
    """Run the cheap checks on an upload in one bounded pass; raise ``UploadRefused`` or describe the file.

    Size cap, gzip (by magic bytes) inflated as a stream with a ratio cap, then,
    for a run, every line within the request's budget: columns, scores, ranks,
    caps on the line, query id and document id lengths, at least one run line;
    the docid scheme of the first lines against the dataset's corpus.

    ``ranking``: whether the run's ranking digest is wanted (``ranking_sha256``, a shared task's rule: the
    caller's). Without it the request spares its cost, a third of the checks' CPU on a BSARD-scale run (17 of
    50 ms).
    """

    size = upload.size or 0
    limit = settings.LEXBOARD_MAX_UPLOAD_BYTES
    if size == 0:
        raise UploadRefused("The file is empty. Upload a TREC run: `qid Q0 docid rank score tag` per line.")
    if size > limit:
        raise UploadRefused(
            f"The file is {_human_bytes(size)}; the limit is {_human_bytes(limit)}. "
            "Compress it with gzip, or keep at most the dataset's depth of documents per query.",
            [{"line": None, "reason": f"file size {size} bytes exceeds {limit}"}],
        )
    upload.seek(0)
    compressed = upload.read(2) == GZIP_MAGIC
    stream = _ContentStream(upload, compressed=compressed, budget=settings.LEXBOARD_UPLOAD_SCAN_BYTES,
                            ranking=ranking and dataset.task == Dataset.Task.RETRIEVAL)
    docs_per_topic: dict[str, int] = {}
    try:
        if dataset.task == Dataset.Task.RETRIEVAL:
            docs_per_topic = run_scan(stream).docs_per_topic
            _check_docid_scheme(bytes(stream.head), dataset=dataset)
        else:
            while stream.read(1 << 20):
                pass
            if not stream.produced:
                raise UploadRefused("The file is empty once decompressed. Upload one JSON object per line.")
            head = bytes(stream.head)
            _check_prediction_head(_complete_lines(head, whole=stream.produced <= len(head)), dataset=dataset)
    finally:
        upload.seek(0)

    return InspectedUpload(
        size=size,
        sha256=_file_sha256(upload, stream, compressed=compressed),
        compressed=compressed,
        decompressed_size=stream.inflated_total or stream.produced,
        content_sha256=stream.digest.hexdigest() if stream.complete else "",
        ranking_sha256=stream.ranking.hexdigest() if stream.complete and stream.ranked else "",
        complete=stream.complete,
        docs_per_topic=docs_per_topic,
    )


def clean_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(metadata) - set(METADATA_FIELDS))
    if unknown:
        raise UploadRefused(
            f"Unknown field(s): {', '.join(unknown)}.",
            [{"line": None, "reason": f"{name}: not a submission field"} for name in unknown],
        )
    values = {name: metadata[name] for name in METADATA_FIELDS if name in metadata}
    for name in ("latency_ms", "llm_calls_per_query", "llm_tokens_per_query"):
        if values.get(name) == "":
            values[name] = None
    probe = Submission(**values)
    try:
        probe.full_clean(exclude=["user", "split", "run_file"], validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        details: list[dict[str, Any]] = [
            {"line": None, "reason": f"{field}: {' '.join(messages)}"}
            for field, messages in exc.message_dict.items()
        ]
        raise UploadRefused("Some fields are not valid: " + "; ".join(d["reason"] for d in details), details) from None
    return {name: getattr(probe, name) for name in values}


def check_provenance(*, split: Split, values: dict[str, Any]) -> None:
    """A split that requires provenance (``Split.requires_provenance``) refuses an entry that does not state it,
    naming each missing field and the fix (cleaned ``values``; a field not given is ``unknown``)."""
    if not split.requires_provenance:
        return
    gaps = provenance_gaps(training_data=values.get("training_data") or TrainingData.UNKNOWN,
                           could_have_seen=values.get("could_have_seen") or CouldHaveSeen.UNKNOWN,
                           models_used=values.get("models_used") or "")
    if gaps:
        raise UploadRefused(refusal_message(gaps, split_name=str(split)),
                            [{"line": None, "reason": gap.reason} for gap in gaps])


def _split_topics(split: Split) -> list[str]:
    return list(Topic.objects.filter(split=split).values_list("qid", flat=True))


def check_queries(*, split: Split, docs_per_topic: dict[str, int], complete: bool, coverage_exempt: bool) -> None:
    """A run must share queries with the split; on a hidden split, cover enough of them (the coverage rule).

    Both are decided over the whole file; when the request read only part of
    it (``complete`` False), a refusal waits for the worker, which reads it all.
    """
    topics = _split_topics(split)
    if not topics or not docs_per_topic or not complete:
        return
    topic_set = set(topics)
    if not topic_set.intersection(docs_per_topic):
        runs_qids = set(docs_per_topic)
        others = sorted(
            ((len(runs_qids.intersection(_split_topics(other))), other.name)
             for other in split.dataset.splits.exclude(pk=split.pk)),
            reverse=True,
        )
        match = next((name for n, name in others if n), None)
        hint = (f"they are {match}'s topics: did you mean {match}?" if match
                else "did you mean another split or dataset?")
        example = next(iter(docs_per_topic))
        raise UploadRefused(
            f"These queries are not in this split ({split}): none of the run's {len(docs_per_topic):,} query ids "
            f"is one of its {len(topics):,} topics; {hint} Send the run to the split whose topics it answers.",
            [{"line": 1, "reason": f"query id {example[:60]!r} is not a topic of {split}"}],
        )
    if split.hidden and not coverage_exempt:
        coverage = coverage_check(topic_ids=topics, docs_per_topic=docs_per_topic,
                                  min_share=split.min_coverage, min_docs=split.min_docs_per_topic)
        if coverage.refusal:
            raise UploadRefused(coverage.refusal, [{"line": None, "reason": coverage.refusal}])


def stored_run_refusal(*, submission: Submission, run: Run | bytes) -> UploadRefused | None:
    """The whole-file query checks for a run the request read only in part (the worker calls this).

    None when the run may be scored; otherwise the refusal the request would
    have given, had it read the whole file.
    """
    if not submission.checked_in_worker or not isinstance(run, Run):
        return None
    counts = np.bincount(run.qcode, minlength=len(run.qids))
    try:
        check_queries(split=submission.split, docs_per_topic=dict(zip(run.qids, counts.tolist(), strict=True)),
                      complete=True, coverage_exempt=submission.coverage_exempt)
    except UploadRefused as exc:
        return exc
    return None
