"""Parsing score and integer columns without a Python object per row.

Invariants: a token's bytes are read as little-endian uint64 words from the
chunk buffer (the padding makes every 8-byte read safe); the exact decimal fast
path (Clinger's: at most 15 significant digits and a power of ten up to 1e22
give the correctly rounded double, as ``strtod``) is taken only when every
byte is checked to be a digit, a sign or the dot; every other row (exponents,
long mantissas, nan, garbage) goes through Python's ``float`` for that row
alone, so the result always equals ``float(token)``. Messages are built in
Python, only for the rows that fail.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..errors import ProblemCollector
from .chunks import Chunk
from .words import HIGH_MASKS, LOW_MASKS, clip8

if TYPE_CHECKING:
    pass


_POW10_F = 10.0 ** np.arange(23)
_POW10_I = 10 ** np.arange(19, dtype=np.int64)


#: A token is quoted in a message up to this many characters (a line may be a megabyte long).
TOKEN_SHOWN = 40


def shown_token(token: str) -> str:
    """``repr(token)``, cut to ``TOKEN_SHOWN`` characters: a message stays a line whatever the file holds."""
    return repr(token) if len(token) <= TOKEN_SHOWN else repr(token[:TOKEN_SHOWN]) + "…"


class TokenShown(str):
    """A token that formats as ``shown_token`` under ``{token!r}`` (the messages given as templates)."""

    def __repr__(self) -> str:
        return shown_token(str(self))


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
        d_lo &= HIGH_MASKS[np.minimum(L, 8)]  # bytes before the token: 0, a leading zero
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
        d_hi &= HIGH_MASKS[clip8(L - 8)]
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


class _ScoreBytes(NamedTuple):
    """What ``parse_scores`` reads of a score column's bytes: each token's two right-aligned words, their flags."""

    hi: np.ndarray
    lo: np.ndarray
    nd_hi: np.ndarray
    nd_lo: np.ndarray
    dot_hi: np.ndarray
    dot_lo: np.ndarray
    n_dot: np.ndarray
    n_minus: np.ndarray
    minus_ok: np.ndarray | bool
    #: the rows of the fast path (an optional leading minus, at most 15 digits and at most one dot); the others are
    #: read by ``float``, and refused when it refuses them.
    fast: np.ndarray
    #: no token is longer than one word: ``hi`` is zero and its flags those of padding in every row.
    short: bool


def _score_bytes(chunk: Chunk, col: int) -> _ScoreBytes:
    """The words and flags of a score column (SWAR on two right-aligned 8-byte words), and its fast rows.

    A column of tokens of at most 8 bytes (scores such as ``12.3456``) has nothing in its high words: their flags
    are constants, not computed (3.6 ms instead of 7.0 ms for the bench's 6.6 MB run, whose scores have 3 to 7
    bytes, min of 9; its ``parse_scores`` 10.2 ms instead of 14.5 ms)."""
    e = chunk.ends[:, col]
    L = chunk.lengths(col)
    short = not len(L) or int(L.max()) <= 8
    k_lo = np.minimum(L, 8)
    lo = chunk.w8[e - 8] & HIGH_MASKS[k_lo]
    pad_lo = _HIGHS & ~HIGH_MASKS[k_lo]
    nd_lo = _nondigit_flags(lo)
    dot_lo = _byte_flags(lo, 46) & ~pad_lo
    if short:
        hi = dot_hi = np.zeros(len(L), dtype=np.uint64)
        pad_hi = nd_hi = np.full(len(L), _HIGHS, dtype=np.uint64)
        n_dot = np.bitwise_count(dot_lo)
    else:
        k_hi = clip8(L - 8)
        hi = chunk.w8[e - 16] & HIGH_MASKS[k_hi]
        pad_hi = _HIGHS & ~HIGH_MASKS[k_hi]
        nd_hi = _nondigit_flags(hi)
        dot_hi = _byte_flags(hi, 46) & ~pad_hi
        n_dot = np.bitwise_count(dot_hi) + np.bitwise_count(dot_lo)
    minus_ok: np.ndarray | bool
    minus_hi: np.ndarray | np.uint64
    minus_lo: np.ndarray | np.uint64
    if chunk.contains(b"-"):
        minus_lo = _byte_flags(lo, 45) & ~pad_lo
        # The only place a minus may sit: the token's first byte.
        first_lo = np.where(L <= 8, np.uint64(0x80) << (np.uint64(8) * np.clip(8 - L, 0, 7).astype(np.uint64)),
                            np.uint64(0))
        if short:
            minus_hi = np.uint64(0)
            n_minus = np.bitwise_count(minus_lo)
            minus_ok = (minus_lo & ~first_lo) == 0
        else:
            minus_hi = _byte_flags(hi, 45) & ~pad_hi
            first_hi = np.where(L > 8, np.uint64(0x80) << (np.uint64(8) * np.clip(16 - L, 0, 7).astype(np.uint64)),
                                np.uint64(0))
            n_minus = np.bitwise_count(minus_hi) + np.bitwise_count(minus_lo)
            minus_ok = ((minus_hi & ~first_hi) == 0) & ((minus_lo & ~first_lo) == 0)
    else:
        # No minus anywhere in the chunk (the usual case): skip its checks.
        minus_hi = minus_lo = np.uint64(0)
        n_minus = np.zeros(len(L), dtype=np.uint8)
        minus_ok = True
    n_digits = L - n_dot - n_minus
    fast = ((n_dot <= 1) & (n_digits >= 1) & ((nd_lo & ~(pad_lo | dot_lo | minus_lo)) == 0) & minus_ok)
    if not short:
        fast &= (L <= 16) & (n_digits <= 15) & ((nd_hi & ~(pad_hi | dot_hi | minus_hi)) == 0)
    return _ScoreBytes(hi, lo, nd_hi, nd_lo, dot_hi, dot_lo, n_dot, n_minus, minus_ok, fast, short)


def parse_scores(chunk: Chunk, col: int, collector: ProblemCollector, label: str = "score") -> np.ndarray:
    """Parse a column of decimal numbers exactly as ``strtod`` would; report bad ones.

    Fast path (SWAR on two right-aligned 8-byte words): an optional leading
    minus, at most 15 digits and at most one dot. The mantissa is then exact
    in a double and dividing by an exact power of ten rounds once, correctly.
    """
    fixed = _parse_fixed_decimals(chunk, col)
    if fixed is not None:
        return fixed
    sb = _score_bytes(chunk, col)
    dig_lo = (sb.lo ^ _ASCII0) & ~_spread(sb.nd_lo)
    if sb.short:  # the high words are zero
        full = _eight_digits(dig_lo).astype(np.int64)
    else:
        dig_hi = (sb.hi ^ _ASCII0) & ~_spread(sb.nd_hi)
        full = (_eight_digits(dig_hi) * np.uint64(100_000_000) + _eight_digits(dig_lo)).astype(np.int64)
    f0 = _common_decimals(sb.dot_hi, sb.dot_lo, sb.n_dot)
    if f0 is not None:
        # Every score of the chunk has its dot in the same place (a fixed number of decimals: the usual
        # file), so the dot's digit is dropped and the power applied with scalars, the same numbers as below.
        p0 = _POW10_I[f0]
        mant = (full // (p0 * 10)) * p0 + full % p0
        values = mant.astype(np.float64) / _POW10_F[f0]
    else:
        has_dot = sb.n_dot == 1
        dot_pos = np.where(sb.dot_hi != 0, _flag_index(sb.dot_hi), 8 + _flag_index(sb.dot_lo))
        f = np.where(has_dot & sb.fast, 15 - dot_pos, 0)
        mant = np.where(has_dot, (full // _POW10_I[np.minimum(f + 1, 18)]) * _POW10_I[f] + full % _POW10_I[f],
                        full)
        values = mant.astype(np.float64) / _POW10_F[f]
    if sb.minus_ok is not True:
        values = np.where(sb.n_minus > 0, -values, values)
    _read_slow_rows(chunk, col, collector, label, sb.fast, values)
    parsed: np.ndarray = values
    return parsed


def check_scores(chunk: Chunk, col: int, collector: ProblemCollector, label: str = "score") -> None:
    """``parse_scores``' refusals without its numbers, for a pass that keeps none (``scan_run``, ``sniff_run``):
    the same rows refused with the same words, from the same flags, but no digit turned into a double. Tokens of at
    most 8 bytes go to the flags at once (3.6 ms for the bench's 6.6 MB run, whose scores have 1 to 4 decimals,
    where ``parse_scores`` took 14.5 ms, min of 9); a longer column tries the fixed-decimals pass first, which is
    cheaper there (4.8 ms instead of 6.1 ms for that run written with 6 decimals)."""
    L = chunk.lengths(col)
    if len(L) and int(L.max()) > 8 and _parse_fixed_decimals(chunk, col) is not None:
        return  # every token read as a number: nothing to refuse
    _read_slow_rows(chunk, col, collector, label, _score_bytes(chunk, col).fast, None)


def _read_slow_rows(chunk: Chunk, col: int, collector: ProblemCollector, label: str, fast: np.ndarray,
                    values: np.ndarray | None) -> None:
    """The rows off the fast path read by Python's ``float`` (into ``values`` when given), a bad one refused."""
    for i in np.flatnonzero(~fast):
        token = chunk.token(int(i), col)
        said = shown_token(token)
        try:
            if "_" in token or not token.isascii():  # Python also reads "١٢" and "１２"; strtod does not
                raise ValueError
            v = float(token)
        except ValueError:
            hint = ("; write decimals with a dot (0.5, not 0,5)" if "," in token
                    else "; write a plain decimal number such as 14.2 or -0.5")
            collector.add(int(chunk.line_no[i]), f"the {label} {said} is not a number{hint}",
                          f"the {label} is not a number{hint}")
            v = 0.0
        else:
            if v != v:
                collector.add(int(chunk.line_no[i]), f"the {label} {said} is NaN; every row needs a finite number",
                              f"the {label} is NaN; every row needs a finite number")
                v = 0.0
            elif v in (float("inf"), float("-inf")):
                what = "is infinite" if "inf" in token.lower() else "overflows a double-precision number"
                collector.add(int(chunk.line_no[i]), f"the {label} {said} {what}; use a finite number",
                              f"the {label} {what}; use a finite number")
                v = 0.0
        if values is not None:
            values[i] = v


def check_integers(chunk: Chunk, col: int, collector: ProblemCollector, message: str) -> None:
    """Check that a column holds integers (optional leading minus), SWAR on one word."""
    s = chunk.starts[:, col]
    L = chunk.lengths(col)
    if len(L) and int(L.max()) <= 8 and not chunk.contains(b"-"):
        # The usual column (ranks): digits xored with ASCII zero are 0..9 and the bytes past the token,
        # masked to 0, read as leading zeros, so one test on every byte decides the whole chunk.
        if not _nondigit_values((chunk.w8[s] ^ _ASCII0) & LOW_MASKS[L]):
            return
    k = np.minimum(L, 8)
    w = chunk.w8[s] & LOW_MASKS[k]
    pad = _HIGHS & ~LOW_MASKS[k]
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
            collector.add(int(chunk.line_no[i]), message.format(token=TokenShown(token)),
                          message.replace(" {token!r}", ""))
