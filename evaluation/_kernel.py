"""Vectorized kernel shared by the run and qrels readers (private).

Why this exists: a 7-million-line run must be read in a few seconds and a few
hundred MB, so no Python object is made per line. A file is read in chunks of
whole lines; in each chunk numpy finds the token boundaries (any run of bytes
<= 0x20 separates tokens: spaces, tabs, CR), checks the column count per line,
and gathers only the columns needed:

* identifiers (query ids, docids, tags) become rows of little-endian uint64
  words holding their bytes, zero padded. That is an exact, compact code: two
  identifiers are equal iff their words are equal, and byte-swapped words sort
  like ``strcmp`` (trec_eval's docid order). ``hash_words`` folds the words into
  one uint64; for identifiers of at most 8 bytes it is a bijection, so the hash
  itself is exact, and longer ones are always re-checked on their words.
* scores are parsed with an exact decimal fast path (Clinger's: at most 15
  significant digits and a power of ten up to 1e22 give the correctly rounded
  double, the same as ``strtod``), and anything else (exponents, long
  mantissas, nan, garbage) goes through Python's ``float`` for those rows only.

Messages for bad lines are built in Python, but only for the lines that fail.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import numpy as np

from .errors import ProblemCollector

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

#: What the readers accept: a path, the bytes themselves, or a binary file object.
Source = str | os.PathLike[str] | bytes | bytearray | memoryview | BinaryIO

# 1 MB: a chunk's temporaries (a few MB) then mostly stay in a core's 2 MB L2 and the shared L3 instead of
# streaming through memory; at 7M lines 1 MB read 10-15% faster than 4 MB (0.5, 0.75, 1, 2 and 4 MB tried;
# earlier 2, 4 and 8 MB). Smaller chunks pay more Python calls per byte.
CHUNK_BYTES = 1 << 20
PAD = 32  # zero bytes around a chunk so unaligned 8-byte gathers never overflow
MAX_LINE_BYTES = 1 << 20
UTF8_BOM = b"\xef\xbb\xbf"

_LOW_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
_HIGH_MASKS = np.array([((1 << 64) - 1) ^ ((1 << (8 * (8 - k))) - 1) if k else 0 for k in range(9)], dtype=np.uint64)
_POW10_F = 10.0 ** np.arange(23)
_POW10_I = 10 ** np.arange(19, dtype=np.int64)


# ---------------------------------------------------------------- sources


def open_source(source: Source, name: str | None) -> tuple[BinaryIO, str, bool]:
    """Open a path, bytes or binary file object; gunzip by magic bytes.

    Returns (stream, display name, whether we own the stream).
    """
    own = False
    if isinstance(source, (str, os.PathLike)):
        display = name or str(source)
        raw: BinaryIO = open(source, "rb")
        own = True
    elif isinstance(source, (bytes, bytearray, memoryview)):
        display = name or "<bytes>"
        raw = io.BytesIO(bytes(source))
        own = True
    else:
        display = name or getattr(source, "name", None) or "<stream>"
        display = str(display)
        raw = source
    raw, head = _peek(raw, 2)
    if isinstance(head, str):
        raise TypeError("open the file in binary mode ('rb'): runs and qrels are read as bytes")
    if head == b"\x1f\x8b":
        return cast(BinaryIO, gzip.GzipFile(fileobj=raw, mode="rb")), display, True
    return raw, display, own


class _Prepended:
    """A stream whose first bytes were already read (for pipes that cannot seek)."""

    def __init__(self, head: bytes, rest: BinaryIO):
        self.head = head
        self.rest = rest

    def read(self, n: int = -1) -> bytes:
        if self.head:
            if n is None or n < 0:
                out, self.head = self.head + self.rest.read(), b""
                return out
            out, self.head = self.head[:n], self.head[n:]
            if len(out) < n:
                out += self.rest.read(n - len(out))
            return out
        return self.rest.read(n)

    def close(self) -> None:
        self.rest.close()


def _peek(stream: BinaryIO, n: int) -> tuple[BinaryIO, bytes]:
    """The first ``n`` bytes without consuming them; returns the stream to read from."""
    if hasattr(stream, "peek"):
        try:
            return stream, stream.peek(n)[:n]
        except (OSError, ValueError):
            pass
    try:
        if stream.seekable():
            pos = stream.tell()
            data = stream.read(n)
            stream.seek(pos)
            return stream, data
    except (OSError, ValueError, AttributeError):
        pass
    data = stream.read(n)
    return cast(BinaryIO, _Prepended(data, stream)), data


def sniff_content(head: bytes) -> str | None:
    """Recognise files that are not text tables at all; return a reason or None."""
    stripped = head.lstrip(UTF8_BOM).lstrip()
    low = stripped[:200].lower()
    if head.startswith(b"PK\x03\x04"):
        return ("this looks like a spreadsheet export or a zip archive (.xlsx, .ods, .zip), "
                "not a text file; export plain text with one row per line, columns separated by spaces")
    if head.startswith(b"\xd0\xcf\x11\xe0"):
        return "this looks like an Excel spreadsheet (.xls), not a text file; export plain text instead"
    if head.startswith(b"%PDF"):
        return "this looks like a PDF document, not a text file"
    if low.startswith((b"<!doctype", b"<html", b"<?xml", b"<head", b"<body")) or (low.startswith(b"<") and b"<html" in low):
        return ("this looks like an HTML page (perhaps a download link's error or login page was saved), "
                "not a run file")
    if low.startswith((b"{", b"[")):
        return "this looks like JSON, not a whitespace-separated TREC file"
    if b"\x00" in head[:65536]:
        return "this file contains NUL bytes, so it is binary (or UTF-16), not UTF-8 text"
    return None


# ---------------------------------------------------------------- chunks


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
    for i in bad[:25]:
        found = int(counts[i])
        line = _line_text(buf, nl, int(i))
        hint = _COLUMN_HINTS.get((ncols, found), "")
        if found < ncols and ("," in line or ";" in line):
            hint = " (it looks comma- or semicolon-separated; use spaces or tabs)"
        if cr_only[i]:
            hint = " (the lines end with CR alone, so the file reads as one line; save it with LF or CRLF line ends)"
        collector.add(base_line + int(i) + 1,
                      f"expected {ncols} columns ({columns_help}) separated by spaces or tabs, "
                      f"found {found}{hint}: {line!r}")
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


# ---------------------------------------------------------------- columns


#: Longest identifier (query id, docid, tag) accepted, in bytes. Words are as
#: wide as the longest identifier of a chunk, so one huge token would multiply
#: the memory of every row; real ids are far shorter (MS MARCO: 7 bytes).
MAX_ID_BYTES = 256


def column_words(chunk: Chunk, col: int, collector: ProblemCollector | None = None,
                 label: str = "identifier") -> np.ndarray:
    """Identifiers of a column as (rows, nw) uint64 words (bytes, zero padded).

    Identifiers longer than ``MAX_ID_BYTES`` are reported to ``collector`` (the
    file is refused) and truncated here so that memory stays bounded.
    """
    s = chunk.starts[:, col]
    L = chunk.lengths(col)
    longest = int(L.max()) if len(L) else 1
    if longest > MAX_ID_BYTES:
        if collector is not None:
            for i in np.flatnonzero(L > MAX_ID_BYTES)[:20]:
                collector.add(int(chunk.line_no[i]), f"the {label} is {int(L[i]):,} bytes long; identifiers "
                                                     f"have at most {MAX_ID_BYTES} bytes")
        L = np.minimum(L, MAX_ID_BYTES)
        longest = MAX_ID_BYTES
    nw = max(1, (longest + 7) // 8)
    out = np.empty((len(s), nw), dtype=np.uint64)
    if nw == 1:  # the usual identifier (MS MARCO's docids, query ids, tags): one word, no clipping
        np.bitwise_and(chunk.w8[s], _LOW_MASKS[L], out=out[:, 0])
        return out
    last = len(chunk.w8) - 1
    for i in range(nw):
        k = _clip8(L - 8 * i)
        out[:, i] = chunk.w8[np.minimum(s + 8 * i, last)] & _LOW_MASKS[k]
    return out


def as_single(scores: np.ndarray) -> np.ndarray:
    """Scores as C floats, the precision trec_eval compares them in.

    Beyond ±3.4e38 a score becomes ±inf, as a C cast gives; numpy's overflow
    warning is silenced because that is the intended result.
    """
    with np.errstate(over="ignore"):
        return scores.astype(np.float32)


def compared_scores(scores: np.ndarray, precision: str = "float32") -> np.ndarray:
    """Scores in the precision they are compared in: C floats (trec_eval 9.x) or doubles (trec_eval 10)."""
    return as_single(scores) if precision == "float32" else scores


def _clip8(x: np.ndarray) -> np.ndarray:
    """``min(max(x, 0), 8)``, cheaper than ``np.clip``."""
    out: np.ndarray = np.maximum(x, 0)
    np.minimum(out, 8, out=out)
    return out


def low_mask(lengths: np.ndarray) -> np.ndarray:
    """Masks keeping the first ``min(length, 8)`` bytes of a little-endian word."""
    masks: np.ndarray = _LOW_MASKS[_clip8(lengths)]
    return masks


def codes_for(chunk: Chunk, col: int, codes: dict[str, int], collector: ProblemCollector | None,
              label: str) -> np.ndarray:
    """Integer codes of an identifier column, new values added to ``codes`` in order of appearance.

    Files are grouped by query, so Python touches one row per change of value,
    not one per row.
    """
    words = column_words(chunk, col, collector, label)
    n = len(words)
    change = np.ones(n, dtype=bool)
    if n > 1:
        if words.shape[1] == 1:
            np.not_equal(words[1:, 0], words[:-1, 0], out=change[1:])
        else:
            change[1:] = (words[1:] != words[:-1]).any(axis=1)
    heads = np.flatnonzero(change)
    head_words = words[heads]
    inverse = None
    if len(heads) > 1024:
        # An interleaved file changes value on most lines: decode each distinct value once.
        head_words, first, inverse = np.unique(head_words, axis=0, return_index=True, return_inverse=True)
    head_codes = np.empty(len(head_words), dtype=np.int32)
    # New values get codes in order of first appearance, as in a grouped file.
    visit = np.argsort(first, kind="stable") if inverse is not None else np.arange(len(head_words))
    strings = words_to_strings(head_words[visit])
    for j, s in zip(visit.tolist(), strings, strict=True):
        head_codes[j] = codes.setdefault(s, len(codes))
    if inverse is not None:
        head_codes = head_codes[inverse.reshape(-1)]
    row_codes: np.ndarray = np.repeat(head_codes, np.diff(heads, append=n))
    return row_codes


_ONES = np.uint64(0x0101010101010101)
_HIGHS = np.uint64(0x8080808080808080)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_ASCII0 = np.uint64(0x3030303030303030)
_PLUS76 = np.uint64(0x7676767676767676)


def _zero_byte_flags(x: np.ndarray) -> np.ndarray:
    """0x80 in every byte of ``x`` that is zero, 0 elsewhere (exact, no carries)."""
    flags: np.ndarray = ~(((x & _LOW7) + _LOW7) | x | _LOW7)
    return flags


def _byte_flags(w: np.ndarray, byte: int) -> np.ndarray:
    return _zero_byte_flags(w ^ (_ONES * np.uint64(byte)))


def _nondigit_flags(w: np.ndarray) -> np.ndarray:
    """0x80 in every byte that is not an ASCII digit.

    For ASCII bytes ``t = w ^ '0'`` is below 0x80 and ``t + 0x76`` sets the
    high bit exactly when t > 9; a non-ASCII byte flags itself through ``| t``
    (its carry may disturb a neighbour, but the row is refused anyway).
    """
    t = w ^ _ASCII0
    return ((t + _PLUS76) | t) & _HIGHS


def _spread(flags: np.ndarray) -> np.ndarray:
    """Turn 0x80 flags into 0xFF byte masks."""
    return (flags >> np.uint64(7)) * np.uint64(0xFF)


def _eight_digits(d: np.ndarray) -> np.ndarray:
    """Bytes holding digit values 0..9 (first byte most significant) -> the 8-digit number."""
    d = (d * np.uint64(10) + (d >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    d = (d * np.uint64(100) + (d >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    d = (d * np.uint64(10000) + (d >> np.uint64(32))) & np.uint64(0x00000000FFFFFFFF)
    return d


def _flag_index(flag: np.ndarray) -> np.ndarray:
    """Byte index of a single 0x80 flag (0..7)."""
    return (np.bitwise_count(flag - np.uint64(1)).astype(np.int64) - 7) // 8


def _common_decimals(dot_hi: np.ndarray, dot_lo: np.ndarray, n_dot: np.ndarray) -> int | None:
    """The number of decimals when every token has one dot, in the same place from its end; else None.

    The dot flags of right-aligned tokens are equal exactly when their dots are.
    (Rows the fast path refuses are parsed again by ``float`` afterwards.)
    """
    if not len(n_dot) or int(n_dot[0]) != 1:
        return None
    h0, l0 = dot_hi[0], dot_lo[0]
    if not ((dot_hi == h0).all() and (dot_lo == l0).all()):
        return None
    dot_pos = int(_flag_index(np.array([h0]))[0]) if h0 else 8 + int(_flag_index(np.array([l0]))[0])
    return 15 - dot_pos


_DOT = np.uint64(ord(".") ^ 0x30)  # a dot's byte once the ASCII zero is xored away


def _parse_fixed_decimals(chunk: Chunk, col: int) -> np.ndarray | None:
    """The usual score column in a third of ``parse_scores``' passes; None when the chunk is not like that.

    Like that: every token is an optional minus, then 2 to 16 digits and dots
    with exactly one dot, in the same place from the token's end in every row
    (at most 7 decimals: what run writers print). The right-aligned last 8
    bytes then hold the dot at one known byte: the digits left of it are
    shifted over it (one mask and one shift for the whole column, no
    division), the word before supplies the leading digits, and the number is
    ``mantissa / 10**decimals`` as in ``parse_scores``: the same doubles. One
    byte that is not a digit anywhere and the whole chunk goes the general way.
    """
    e = chunk.ends[:, col]
    L = chunk.lengths(col)
    if not len(L):
        return None
    neg = None
    if chunk.contains(b"-"):
        neg = chunk.b[chunk.starts[:, col]] == 45
        if neg.any():
            L = L - neg  # the digits and the dot; the minus is left out by the masks below
        else:
            neg = None
    shortest, longest = int(L.min()), int(L.max())
    if shortest < 2 or longest > 16:
        return None
    end0, len0 = int(e[0]), int(L[0])
    dot_at = bytes(chunk.buf[end0 - len0:end0]).rfind(b".")
    decimals = len0 - 1 - dot_at
    if dot_at < 0 or decimals > 7:
        return None
    dot_byte = 7 - decimals  # the dot's byte in the right-aligned last word (byte 0 = lowest address)
    d_lo = chunk.w8[e - 8] ^ _ASCII0  # digits become their values 0..9, the dot 0x1e
    if shortest < 8:
        d_lo &= _HIGH_MASKS[np.minimum(L, 8)]  # bytes before the token: 0, a leading zero
    byte_mask = np.uint64(0xFF << (8 * dot_byte))
    if not ((d_lo & byte_mask) == (_DOT << np.uint64(8 * dot_byte))).all():
        return None
    below = np.uint64((1 << (8 * dot_byte)) - 1)  # digits left of the dot in this word
    above = np.uint64(((1 << 64) - 1) ^ ((1 << (8 * (dot_byte + 1))) - 1))  # the decimals
    digits = (d_lo & below) << np.uint64(8)
    digits |= d_lo & above
    del d_lo
    rest = None
    if longest == 9:  # (scores of 10 to 99 with 6 decimals) one more digit: one byte, not one more word
        first = chunk.b[e - 9] ^ np.uint8(0x30)
        first[L != 9] = 0
        if int(first.max()) > 9:
            return None
        digits |= first  # into byte 0, where the dot's shift left room
        del first
    elif longest > 8:
        d_hi = chunk.w8[e - 16] ^ _ASCII0
        d_hi &= _HIGH_MASKS[_clip8(L - 8)]
        if _nondigit_values(d_hi):
            return None
        digits |= d_hi >> np.uint64(56)  # its last byte moves in where the dot was
        if longest > 9:
            rest = d_hi << np.uint64(8)
        del d_hi
    if _nondigit_values(digits):
        return None
    mant = _eight_digits(digits)
    if rest is not None:
        mant += _eight_digits(rest) * np.uint64(100_000_000)
    values: np.ndarray = mant.astype(np.float64)
    values /= _POW10_F[decimals]
    if neg is not None:
        np.negative(values, out=values, where=neg)
    return values


def _nondigit_values(d: np.ndarray) -> bool:
    """Whether any byte of ``d`` is above 9 (bytes already xored with ASCII zero; see ``_nondigit_flags``)."""
    return bool((((d + _PLUS76) | d) & _HIGHS).any())


def parse_scores(chunk: Chunk, col: int, collector: ProblemCollector, label: str = "score") -> np.ndarray:
    """Parse a column of decimal numbers exactly as ``strtod`` would; report bad ones.

    Fast path (SWAR on two right-aligned 8-byte words): an optional leading
    minus, at most 15 digits and at most one dot. The mantissa is then exact
    in a double and dividing by an exact power of ten rounds once, correctly.
    """
    fixed = _parse_fixed_decimals(chunk, col)
    if fixed is not None:
        return fixed
    e = chunk.ends[:, col]
    L = chunk.lengths(col)
    k_hi = _clip8(L - 8)
    k_lo = np.minimum(L, 8)
    hi = chunk.w8[e - 16] & _HIGH_MASKS[k_hi]
    lo = chunk.w8[e - 8] & _HIGH_MASKS[k_lo]
    pad_hi = _HIGHS & ~_HIGH_MASKS[k_hi]
    pad_lo = _HIGHS & ~_HIGH_MASKS[k_lo]
    nd_hi = _nondigit_flags(hi)
    nd_lo = _nondigit_flags(lo)
    dot_hi = _byte_flags(hi, 46) & ~pad_hi
    dot_lo = _byte_flags(lo, 46) & ~pad_lo
    n_dot = np.bitwise_count(dot_hi) + np.bitwise_count(dot_lo)
    if chunk.contains(b"-"):
        minus_hi = _byte_flags(hi, 45) & ~pad_hi
        minus_lo = _byte_flags(lo, 45) & ~pad_lo
        # The only place a minus may sit: the token's first byte.
        first_hi = np.where(L > 8, np.uint64(0x80) << (np.uint64(8) * np.clip(16 - L, 0, 7).astype(np.uint64)),
                            np.uint64(0))
        first_lo = np.where(L <= 8, np.uint64(0x80) << (np.uint64(8) * np.clip(8 - L, 0, 7).astype(np.uint64)),
                            np.uint64(0))
        n_minus = np.bitwise_count(minus_hi) + np.bitwise_count(minus_lo)
        minus_ok = ((minus_hi & ~first_hi) == 0) & ((minus_lo & ~first_lo) == 0)
    else:
        # No minus anywhere in the chunk (the usual case): skip its checks.
        minus_hi = minus_lo = np.uint64(0)
        n_minus = np.zeros(len(L), dtype=np.uint8)
        minus_ok = True
    n_digits = L - n_dot - n_minus
    fast = ((L <= 16) & (n_dot <= 1) & (n_digits >= 1) & (n_digits <= 15)
            & ((nd_hi & ~(pad_hi | dot_hi | minus_hi)) == 0)
            & ((nd_lo & ~(pad_lo | dot_lo | minus_lo)) == 0)
            & minus_ok)
    dig_hi = (hi ^ _ASCII0) & ~_spread(nd_hi)
    dig_lo = (lo ^ _ASCII0) & ~_spread(nd_lo)
    full = (_eight_digits(dig_hi) * np.uint64(100_000_000) + _eight_digits(dig_lo)).astype(np.int64)
    f0 = _common_decimals(dot_hi, dot_lo, n_dot)
    if f0 is not None:
        # Every score of the chunk has its dot in the same place (a fixed number of decimals: the usual
        # file), so the dot's digit is dropped and the power applied with scalars, the same numbers as below.
        p0 = _POW10_I[f0]
        mant = (full // (p0 * 10)) * p0 + full % p0
        values = mant.astype(np.float64) / _POW10_F[f0]
    else:
        has_dot = n_dot == 1
        dot_pos = np.where(dot_hi != 0, _flag_index(dot_hi), 8 + _flag_index(dot_lo))
        f = np.where(has_dot & fast, 15 - dot_pos, 0)
        mant = np.where(has_dot, (full // _POW10_I[np.minimum(f + 1, 18)]) * _POW10_I[f] + full % _POW10_I[f],
                        full)
        values = mant.astype(np.float64) / _POW10_F[f]
    if minus_ok is not True:
        values = np.where(n_minus > 0, -values, values)
    for i in np.flatnonzero(~fast):
        token = chunk.token(int(i), col)
        try:
            if "_" in token or not token.isascii():  # Python also reads "١٢" and "１２"; strtod does not
                raise ValueError
            v = float(token)
        except ValueError:
            hint = ("; write decimals with a dot (0.5, not 0,5)" if "," in token
                    else "; write a plain decimal number such as 14.2 or -0.5")
            collector.add(int(chunk.line_no[i]), f"the {label} {token!r} is not a number{hint}")
            v = 0.0
        else:
            if v != v:
                collector.add(int(chunk.line_no[i]), f"the {label} {token!r} is NaN; every row needs a finite number")
                v = 0.0
            elif v in (float("inf"), float("-inf")):
                what = "is infinite" if "inf" in token.lower() else "overflows a double-precision number"
                collector.add(int(chunk.line_no[i]), f"the {label} {token!r} {what}; use a finite number")
                v = 0.0
        values[i] = v
    parsed: np.ndarray = values
    return parsed


def check_integers(chunk: Chunk, col: int, collector: ProblemCollector, message: str) -> None:
    """Check that a column holds integers (optional leading minus), SWAR on one word."""
    s = chunk.starts[:, col]
    L = chunk.lengths(col)
    if len(L) and int(L.max()) <= 8 and not chunk.contains(b"-"):
        # The usual column (ranks): digits xored with ASCII zero are 0..9 and the bytes past the token,
        # masked to 0, read as leading zeros, so one test on every byte decides the whole chunk.
        if not _nondigit_values((chunk.w8[s] ^ _ASCII0) & _LOW_MASKS[L]):
            return
    k = np.minimum(L, 8)
    w = chunk.w8[s] & _LOW_MASKS[k]
    pad = _HIGHS & ~_LOW_MASKS[k]
    if chunk.contains(b"-"):
        pad |= _byte_flags(w, 45) & np.uint64(0x80) & np.where(L > 1, _HIGHS, np.uint64(0))  # a leading minus
    ok = (_nondigit_flags(w) & ~pad) == 0
    ok &= L <= 8
    for i in np.flatnonzero(~ok):
        token = chunk.token(int(i), col)
        try:
            if "_" in token or "+" in token or not token.isascii():
                raise ValueError
            int(token)
        except ValueError:
            collector.add(int(chunk.line_no[i]), message.format(token=token))


# ---------------------------------------------------------------- identifiers


def splitmix64(x: np.ndarray) -> np.ndarray:
    """A bijective 64-bit mixer (splitmix64's finalizer)."""
    x = x.astype(np.uint64, copy=True)
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def _mix_fast(x: np.ndarray) -> np.ndarray:
    """A cheap bijection of uint64 (xorshift, odd multiply, xorshift) that spreads every byte into the top bits."""
    x = x ^ (x >> np.uint64(32))
    x *= np.uint64(0xD6E8FEB86659FD93)
    x ^= x >> np.uint64(29)
    return x


def hash_words(words: np.ndarray, block: int = 1 << 20) -> np.ndarray:
    """Fold identifier words into one uint64, independent of zero padding.

    Exact (a bijection) for identifiers of at most 8 bytes. Works in blocks so
    that temporaries stay small on multi-million-row runs.
    """
    n = words.shape[0]
    out = np.empty(n, dtype=np.uint64)
    for a in range(0, n, block):
        w = words[a:a + block]
        h = _mix_fast(w[:, 0])
        for i in range(1, w.shape[1]):
            wi = w[:, i]
            nz = wi != 0
            if nz.any():
                h = np.where(nz, splitmix64(h ^ splitmix64(wi ^ np.uint64(i))), h)
        out[a:a + block] = h
    return out


class Columns:
    """Growable column arrays filled chunk by chunk.

    Writing each chunk into preallocated arrays (instead of keeping per-chunk
    arrays and concatenating) keeps the heap from fragmenting, so the resident
    size after reading a 7M-line run stays close to the data itself.
    """

    def __init__(self, specs: dict[str, tuple[DTypeLike, int]], capacity: int):
        self.n = 0
        self.capacity = max(capacity, 1024)
        self.arrays = {name: np.empty((self.capacity, width) if width else self.capacity, dtype=dtype)
                       for name, (dtype, width) in specs.items()}

    def append(self, **values: np.ndarray) -> None:
        """Append the same number of rows to every column (2-D columns may widen)."""
        m = len(next(iter(values.values())))
        if self.n + m > self.capacity:
            self._grow(max(self.n + m, int(self.capacity * 1.5)))
        for name, v in values.items():
            arr = self.arrays[name]
            if arr.ndim == 2 and v.shape[1] != arr.shape[1]:
                if v.shape[1] > arr.shape[1]:
                    wider = np.zeros((self.capacity, v.shape[1]), dtype=arr.dtype)
                    wider[:self.n, :arr.shape[1]] = arr[:self.n]
                    self.arrays[name] = arr = wider
                else:
                    v = pad_words(v, arr.shape[1])
            arr[self.n:self.n + m] = v
        self.n += m

    def _grow(self, capacity: int) -> None:
        for name, arr in self.arrays.items():
            bigger = np.empty((capacity,) + arr.shape[1:], dtype=arr.dtype)
            bigger[:self.n] = arr[:self.n]
            self.arrays[name] = bigger
        self.capacity = capacity

    def get(self, name: str) -> np.ndarray:
        """The filled part of a column (a view; untouched capacity is never resident)."""
        return self.arrays[name][:self.n]


def size_hint(stream: Any) -> int | None:
    """Expected size in bytes of the text of a stream, when cheaply known.

    For gzip the compressed size is scaled by 5 (runs compress 3 to 5 times):
    overestimating costs nothing, because untouched capacity is never resident,
    while underestimating makes the columns grow by copying.
    """
    if isinstance(stream, gzip.GzipFile):
        inner = size_hint(stream.fileobj) if stream.fileobj is not None else None
        return inner * 5 if inner else None
    try:
        return os.fstat(stream.fileno()).st_size
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        pass
    if isinstance(stream, io.BytesIO):
        return len(stream.getbuffer())
    return None


def pair_key(qcode: np.ndarray, dkey: np.ndarray) -> np.ndarray:
    """Combine a query code and a docid hash into one uint64 key.

    ``dkey`` is already well mixed, so xor with a spread query code suffices;
    equal keys are only candidates and are always confirmed on the words.
    """
    out = qcode.astype(np.uint64)
    out *= np.uint64(0x9E3779B97F4A7C15)
    out ^= dkey
    return out


def pad_words(words: np.ndarray, nw: int) -> np.ndarray:
    """Widen a words matrix with zero columns."""
    if words.shape[1] >= nw:
        return words
    out = np.zeros((words.shape[0], nw), dtype=np.uint64)
    out[:, :words.shape[1]] = words
    return out


def words_to_strings(words: np.ndarray) -> list[str]:
    """Decode identifier words back to strings."""
    if len(words) == 0:
        return []
    raw = np.ascontiguousarray(words.astype("<u8")).view(f"S{8 * words.shape[1]}").ravel()
    # "replace": a file with non-UTF-8 bytes is refused anyway (iter_chunks records the line);
    # its identifiers must not raise UnicodeDecodeError before that refusal is raised.
    return [x.decode("utf-8", "replace") for x in raw.tolist()]


def strings_to_words(strings: list[str]) -> np.ndarray:
    """Encode identifier strings as words (for dict inputs and fused runs)."""
    encoded = [s.encode("utf-8") for s in strings]
    width = max((len(x) for x in encoded), default=1)
    nw = max(1, (width + 7) // 8)
    arr = np.array(encoded, dtype=f"S{8 * nw}") if encoded else np.zeros(0, dtype=f"S{8 * nw}")
    return arr.view("<u8").reshape(len(encoded), nw).astype(np.uint64)


def sort_keys_desc(words: np.ndarray) -> list[np.ndarray]:
    """Keys for ``np.lexsort`` ordering identifiers descending as strings.

    Byte-swapped words compare like ``strcmp``; inverting them gives descending
    order. Returned least significant first, as lexsort expects.
    """
    be = words.byteswap()
    return [~be[:, i] for i in range(words.shape[1] - 1, -1, -1)]


def sort_keys_asc(words: np.ndarray) -> list[np.ndarray]:
    """Keys for ``np.lexsort`` ordering identifiers ascending as strings (least significant first)."""
    be = words.byteswap()
    return [be[:, i] for i in range(words.shape[1] - 1, -1, -1)]
