"""Identifiers (query ids, docids, tags) as rows of little-endian uint64 words, with their codes and order.

Invariants: a token becomes ``ceil(len / 8)`` words holding its bytes, zero
padded, so two identifiers are equal iff their words are equal (identifiers
hold no zero byte: every byte below 0x21 is a separator); byte-swapped words
compared as unsigned integers sort like ``strcmp``, trec_eval's docid order;
``hash_words`` folds the words into one uint64, a bijection for identifiers of
at most 8 bytes, so longer ones are always re-checked on their words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import ProblemCollector
from .chunks import Chunk

if TYPE_CHECKING:
    pass


LOW_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
HIGH_MASKS = np.array([((1 << 64) - 1) ^ ((1 << (8 * (8 - k))) - 1) if k else 0 for k in range(9)], dtype=np.uint64)


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
            for row in np.flatnonzero(L > MAX_ID_BYTES).tolist():
                collector.add(int(chunk.line_no[row]), f"the {label} is {int(L[row]):,} bytes long; identifiers "
                                                     f"have at most {MAX_ID_BYTES} bytes",
                              f"the {label} is longer than {MAX_ID_BYTES} bytes, the most an identifier has")
        L = np.minimum(L, MAX_ID_BYTES)
        longest = MAX_ID_BYTES
    nw = max(1, (longest + 7) // 8)
    out = np.empty((len(s), nw), dtype=np.uint64)
    if nw == 1:  # the usual identifier (MS MARCO's docids, query ids, tags): one word, no clipping
        np.bitwise_and(chunk.w8[s], LOW_MASKS[L], out=out[:, 0])
        return out
    last = len(chunk.w8) - 1
    for i in range(nw):
        k = clip8(L - 8 * i)
        out[:, i] = chunk.w8[np.minimum(s + 8 * i, last)] & LOW_MASKS[k]
    return out


def clip8(x: np.ndarray) -> np.ndarray:
    """``min(max(x, 0), 8)``, cheaper than ``np.clip``."""
    out: np.ndarray = np.maximum(x, 0)
    np.minimum(out, 8, out=out)
    return out


def low_mask(lengths: np.ndarray) -> np.ndarray:
    """Masks keeping the first ``min(length, 8)`` bytes of a little-endian word."""
    masks: np.ndarray = LOW_MASKS[clip8(lengths)]
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
