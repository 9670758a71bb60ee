"""Cutting a file into chunks of whole lines and finding every token's boundaries, with numpy.

Invariants: a chunk's text sits in one reused buffer as PAD zero bytes, a
newline, whole lines each ending with a newline, then PAD zero bytes, so an
unaligned 8-byte read at any token start (``Chunk.w8``) stays inside the
buffer and the bytes after a token's end are separators or padding; tokens are
separated by any run of bytes <= 0x20 (spaces, tabs, CR); a row of a chunk is
a data line with the expected number of columns (blank and ``#`` lines and
refused lines are not rows), and ``line_no`` maps rows back to file lines. A
chunk is valid only until the next one is asked for.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from ..errors import ProblemCollector
from .sources import UTF8_BOM, sniff_content

if TYPE_CHECKING:
    pass


# 1 MB: a chunk's temporaries (a few MB) then mostly stay in a core's 2 MB L2 and the shared L3 instead of
# streaming through memory; at 7M lines 1 MB read 10-15% faster than 4 MB (0.5, 0.75, 1, 2 and 4 MB tried;
# earlier 2, 4 and 8 MB). Smaller chunks pay more Python calls per byte.
CHUNK_BYTES = 1 << 20
PAD = 32  # zero bytes around a chunk so unaligned 8-byte gathers never overflow
MAX_LINE_BYTES = 1 << 20


@dataclass
class Chunk:
    """Whole lines of a file, tokenized; rows are data lines with ``ncols`` columns."""

    buf: bytearray  # PAD zeros, a newline sentinel, the lines, PAD zeros; beyond len(b): stale bytes
    b: np.ndarray  # uint8 view of buf
    w8: np.ndarray  # unaligned little-endian uint64 view: w8[i] = bytes i..i+7
    starts: np.ndarray  # (rows, ncols) token start offsets into buf
    ends: np.ndarray  # (rows, ncols) token end offsets (exclusive)
    line_no: np.ndarray  # (rows,) 1-based line numbers
    trailing: np.ndarray | None = None  # line numbers of the rows with text after the last column (when allowed)
    _seen: dict[bytes, bool] = field(default_factory=dict, repr=False)  # contains()'s answers
    _lengths: np.ndarray | None = field(default=None, repr=False)  # (rows, ncols) token lengths, when known

    def contains(self, byte: bytes) -> bool:
        """Whether the chunk's text holds ``byte`` (one scan per byte and chunk: the columns ask the same)."""
        found = self._seen.get(byte)
        if found is None:
            found = self._seen[byte] = self.buf.find(byte, 0, len(self.b)) >= 0
        return found

    def lengths(self, col: int) -> np.ndarray:
        """Token lengths of a column."""
        if self._lengths is not None:
            return self._lengths[:, col]
        lengths: np.ndarray = self.ends[:, col] - self.starts[:, col]
        return lengths

    def token(self, row: int, col: int) -> str:
        """One token as text (for messages)."""
        raw = self.buf[self.starts[row, col]:self.ends[row, col]]
        return raw.decode("utf-8", "replace")


def _line_text(buf: bytearray, nl: np.ndarray, i: int, limit: int = 80) -> str:
    raw = buf[nl[i] + 1:nl[i + 1]].rstrip(b"\r")
    text = raw.decode("utf-8", "replace")
    return text if len(text) <= limit else text[:limit] + "…"


def iter_chunks(
    stream: BinaryIO,
    *,
    ncols: int,
    columns_help: str,
    collector: ProblemCollector,
    max_lines: int | None = None,
    max_bytes: int | None = None,
    chunk_bytes: int | None = None,
    trailing_text: bool = False,
) -> Iterator[Chunk]:
    """Yield tokenized chunks of whole lines; record problems in ``collector``.

    Blank lines and lines whose first token starts with ``#`` are skipped.
    Lines with the wrong number of columns are reported, not yielded; with
    ``trailing_text``, a line with more than ``ncols`` columns is a row of its
    first ``ncols`` (the rest ignored, as trec_eval ignores text after a run's
    tag) and its line number is in ``Chunk.trailing``.

    The file is read into one buffer, reused for every chunk (``readinto``
    when the stream has it): a chunk, and its ``buf``, ``b`` and ``w8``, are
    valid only until the next one is asked for. Fresh memory per chunk cost
    the kernel more time zeroing pages than the tokenizer took.
    """
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    buf = bytearray(2 * PAD + 1 + chunk_bytes)
    buf[PAD] = 10  # text held in buf[PAD:PAD + n]: a newline sentinel, then the carried partial line
    n = 1
    readinto = getattr(stream, "readinto", None)
    base_line = 0  # lines completed before the current chunk
    total = 0
    first = True
    utf8_reported = False
    eof = False
    while not eof:
        if PAD + n + chunk_bytes + PAD > len(buf):
            bigger = bytearray(PAD + n + chunk_bytes + PAD)
            bigger[:PAD + n] = buf[:PAD + n]
            buf = bigger
        try:
            if readinto is not None:
                with memoryview(buf) as view:
                    got = readinto(view[PAD + n:PAD + n + chunk_bytes]) or 0
            else:
                data = stream.read(chunk_bytes)
                got = len(data)
                buf[PAD + n:PAD + n + got] = data
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:  # only a gzip stream raises these
            collector.add(None, f"the gzip file is truncated or corrupt ({exc}); compress the run again "
                                "with `gzip run.txt`, or send the plain text file")
            collector.raise_now()
        if first:
            first = False
            if buf[PAD + 1:PAD + 4] == UTF8_BOM:
                buf[PAD + 1:PAD + 1 + got - 3] = buf[PAD + 4:PAD + 1 + got]
                got -= 3
            reason = sniff_content(bytes(buf[PAD + 1:PAD + 1 + min(got, 65536)]))
            if reason:
                collector.add(1, reason)
                collector.raise_now()
        total += got
        if max_bytes is not None and total > max_bytes:
            collector.add(None, f"the file is larger than {max_bytes:,} bytes (uncompressed); split it or cut it to the dataset's depth")
            collector.raise_now()
        if not got:
            eof = True
            if n <= 1:
                break
            buf[PAD + n] = 10
            cut = n  # the text is the carried line and a newline
            carry = b"\n"
        else:
            end = n + got
            cut = buf.rfind(b"\n", PAD, PAD + end) - PAD
            if cut <= 0:
                n = end
                if n > MAX_LINE_BYTES:
                    collector.add(base_line + 1, f"line is longer than {MAX_LINE_BYTES:,} bytes; this is not a TREC file")
                    collector.raise_now()
                continue
            carry = bytes(buf[PAD + cut:PAD + end])
        length = PAD + cut + 1 + PAD  # the text buf[PAD:PAD + cut + 1] starts and ends with a newline
        buf[PAD + cut + 1:length] = bytes(PAD)
        b = np.frombuffer(buf, dtype=np.uint8, count=length)
        if not utf8_reported and int(b.max()) >= 128:
            text = bytes(buf[PAD:PAD + cut + 1])
            try:
                text.decode("utf-8")
            except UnicodeDecodeError as exc:
                utf8_reported = True
                line = base_line + text.count(b"\n", 1, exc.start) + 1
                collector.add(line, f"this line is not UTF-8 text (byte 0x{text[exc.start]:02x}); save the file as UTF-8")
            del text
        chunk, nlines = _tokenize(buf, b, ncols, columns_help, base_line, collector, trailing_text)
        del b
        base_line += nlines
        collector.lines_read = base_line
        if max_lines is not None and base_line > max_lines:
            collector.add(max_lines + 1, f"the file has more than {max_lines:,} lines, the limit for this dataset")
            collector.raise_now()
        if chunk is not None:
            yield chunk
            del chunk
        buf[PAD:PAD + len(carry)] = carry
        n = len(carry)


# Column counts that usually mean another kind of file was sent.
_COLUMN_HINTS = {
    (6, 4): " (this looks like a qrels file: qid iter docid grade; send the run)",
    (6, 3): " (three columns look like the MS MARCO format qid docid rank; write the six TREC columns)",
    (4, 6): " (this looks like a run file: qid Q0 docid rank score tag; send the qrels)",
}


def _tokenize(buf: bytearray, b: np.ndarray, ncols: int, columns_help: str, base_line: int,
              collector: ProblemCollector, trailing_text: bool = False) -> tuple[Chunk | None, int]:
    """Tokenize ``b`` = ``buf[:len(b)]``: PAD zeros, text starting and ending with a newline, PAD zeros.

    Returns (chunk, number of lines).
    """
    w8 = np.ndarray(shape=(len(b) - 7,), dtype="<u8", buffer=buf, offset=0, strides=(1,))
    fast = _tokenize_single_separators(buf, b, w8, ncols, base_line)
    if fast is not None:
        return fast
    sep = b <= 32
    bounds = np.flatnonzero(sep[1:] != sep[:-1])
    bounds += 1
    starts = bounds[0::2]
    ends = bounds[1::2]
    nl = np.flatnonzero(b == 10)
    nlines = len(nl) - 1
    if nlines <= 0:
        return None, 0
    # A long line inside a chunk (not only one spanning chunks) is refused: one huge
    # identifier would widen every row's words to its length (memory times rows).
    too_long = np.flatnonzero(np.diff(nl) > MAX_LINE_BYTES + 1)
    if len(too_long):
        collector.add(base_line + int(too_long[0]) + 1,
                      f"line is longer than {MAX_LINE_BYTES:,} bytes; this is not a TREC file")
        collector.raise_now()
    # Fast path: every line holds exactly ncols tokens and none is a comment.
    if len(starts) == ncols * nlines:
        S = starts.reshape(nlines, ncols)
        E = ends.reshape(nlines, ncols)
        if (S[:, 0] > nl[:-1]).all() and (E[:, -1] <= nl[1:]).all() and not (b[S[:, 0]] == 35).any():
            line_no = np.arange(base_line + 1, base_line + nlines + 1, dtype=np.int64)
            return Chunk(buf, b, w8, S, E, line_no), nlines
    # General path: blank lines, comments or wrong column counts.
    tok_line = np.searchsorted(nl, starts, side="right") - 1
    counts = np.bincount(tok_line, minlength=nlines)
    first_tok = np.cumsum(counts) - counts
    has = counts > 0
    comment = np.zeros(nlines, dtype=bool)
    comment[has] = b[starts[first_tok[has]]] == 35
    data = has & ~comment
    wrong = (counts < ncols) if trailing_text else (counts != ncols)
    cr_only = np.zeros(nlines, dtype=bool)
    if trailing_text:
        # Text after the last column is ignored, but not a CR inside a line: line ends of CR alone make the file
        # one long line, whose first columns are no run.
        cr = np.flatnonzero(b == 13)
        cr = cr[b[cr + 1] != 10]
        cr_only[np.searchsorted(nl, cr, side="right") - 1] = True
        wrong |= cr_only & (counts > ncols)
    bad = np.flatnonzero(data & wrong)
    for i in bad:  # every one, for the counts: the collector stops at its bound
        found = int(counts[i])
        line = _line_text(buf, nl, int(i))
        hint = _COLUMN_HINTS.get((ncols, found), "")
        expected = f"expected {ncols} columns ({columns_help}) separated by spaces or tabs"
        rule = f"{expected}, found {found}{hint}"
        if found < ncols and ("," in line or ";" in line):
            hint = " (it looks comma- or semicolon-separated; use spaces or tabs)"
            rule = f"comma- or semicolon-separated — use spaces or tabs between the {ncols} columns ({columns_help})"
        if cr_only[i]:
            hint = " (the lines end with CR alone, so the file reads as one line; save it with LF or CRLF line ends)"
            rule = f"{expected}{hint}"
        collector.add(base_line + int(i) + 1,
                      f"{expected}, found {found}{hint}: {line!r}", rule)
    good = np.flatnonzero(data & ~wrong)
    if len(good) == 0:
        return None, nlines
    idx = first_tok[good][:, None] + np.arange(ncols)
    line_no = base_line + good.astype(np.int64) + 1
    longer = counts[good] > ncols
    return Chunk(buf, b, w8, starts[idx], ends[idx], line_no,
                 trailing=line_no[longer] if longer.any() else None), nlines


def _tokenize_single_separators(buf: bytearray, b: np.ndarray, w8: np.ndarray, ncols: int,
                                base_line: int) -> tuple[Chunk, int] | None:
    """The usual file, tokenized in one pass: every line holds ``ncols`` tokens, one separator byte apart.

    Then the separator bytes alone give every boundary (token j of line i runs
    from separator ``ncols*i + j`` + 1 to separator ``ncols*i + j + 1``), which
    halves the work of the general path. None when the chunk is not like
    that (tabs and single spaces mixed are fine; runs of blanks, CR, blank or
    comment lines and wrong column counts are not): the general path decides.
    """
    text = b[PAD:len(b) - PAD]
    p = np.flatnonzero(text <= 32)  # offsets into text, not buf
    nlines = (len(p) - 1) // ncols
    if nlines <= 0 or len(p) != ncols * nlines + 1:
        return None
    # Every ncols-th separator a newline, and no other newline in the text.
    if not (text[p[::ncols]] == 10).all() or int(np.count_nonzero(text == 10)) != nlines + 1:
        return None
    # Column-major int32 tables (chunks are far below 2 GB): a column (chunk.starts[:, j]) is then one
    # contiguous block, where row-major int64 made every column's pass stream the whole table.
    p32 = np.add(p, PAD, dtype=np.int32, casting="unsafe")  # offsets into buf
    del p
    sep = np.empty((ncols + 1, nlines), dtype=np.int32)  # sep[j, i]: separator before token j of line i
    sep[:ncols] = p32[:-1].reshape(nlines, ncols).T
    sep[ncols] = p32[ncols::ncols]
    del p32
    ends = sep[1:]
    starts = sep[:ncols] + 1
    lengths = ends - starts
    if int(lengths.min()) < 1:  # an empty token: two separators in a row
        return None
    if (b[starts[0]] == 35).any():  # a comment line
        return None
    if int(lengths.max()) >= MAX_LINE_BYTES:
        return None  # the general path names the long line
    line_no = np.arange(base_line + 1, base_line + nlines + 1, dtype=np.int64)
    return Chunk(buf, b, w8, starts.T, ends.T, line_no, _lengths=lengths.T), nlines
