"""The double entry's own reader of a JSON run ``{qid: {docid: score}}``, sharing no code with ``run_json``.

A JSON upload is converted to TREC lines on arrival (``evaluation.run_json``, a
streaming scanner) and the converted file is what the core scores. The second
implementation reads the uploaded JSON itself, kept beside the converted run,
with the standard library's ``json.loads`` and strict checks, and ranks each
query's documents itself (``reference.ranked`` or pytrec_eval: score
descending, docid descending), so a fault in the converter (a score written
wrongly, a document dropped, a query lost) changes the core's values and not
the second implementation's: a disagreement.

It is a second reader *bounded by the first having accepted the file*: the
upload's caps (size, gzip ratio, the in-request scan budget) held when it was
converted, so the whole file is read at once. Anything the first reader
should have refused (a duplicate key, NaN, a score that is not a number, an
id a TREC line cannot hold) is refused here with ``JsonRunRefused``, which the
caller treats as a disagreement too. A query whose object is empty is left
out: it has no TREC line either.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Callable
from typing import IO

_UTF8_BOM = b"\xef\xbb\xbf"

JsonSource = bytes | Callable[[], IO[bytes]]


class JsonRunRefused(ValueError):
    """The second reader refuses a JSON run (the first accepted it: the two readers disagree)."""


def _pairs(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise JsonRunRefused(f"the key {key[:60]!r} appears twice in one object")
        out[key] = value
    return out


def _constant(name: str) -> float:
    raise JsonRunRefused(f"{name} is not a JSON number")


def _check_id(value: str, what: str) -> None:
    if not value or any(c.isspace() or c < " " for c in value):
        raise JsonRunRefused(f"the {what} {value[:60]!r} cannot be a TREC run's column")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise JsonRunRefused(f"the {what} {value[:60]!r} holds a lone surrogate") from None


def read_json_run(source: JsonSource) -> dict[str, dict[str, float]]:
    """``{qid: {docid: score}}`` from a JSON run's stored bytes (gzip by its magic bytes, a UTF-8 BOM allowed)."""
    if callable(source):
        with source() as fh:
            data = fh.read()
    else:
        data = source
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    data = data.removeprefix(_UTF8_BOM)
    try:
        top = json.loads(data.decode("utf-8"), object_pairs_hook=_pairs, parse_constant=_constant)
    except JsonRunRefused:
        raise
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, an integer of thousands of digits
        raise JsonRunRefused(f"not a JSON run in UTF-8: {str(exc)[:200]}") from None
    if not isinstance(top, dict):
        raise JsonRunRefused(f"the run is a {type(top).__name__}, not an object")
    run: dict[str, dict[str, float]] = {}
    for qid, docs in top.items():
        _check_id(qid, "query id")
        if not isinstance(docs, dict):
            raise JsonRunRefused(f"query {qid[:60]!r} holds a {type(docs).__name__}, not an object")
        scores: dict[str, float] = {}
        for docid, score in docs.items():
            _check_id(docid, "document id")
            if isinstance(score, bool) or not isinstance(score, int | float):
                raise JsonRunRefused(f"query {qid[:60]!r}, document {docid[:60]!r}: the score is not a number")
            try:
                value = float(score)
            except OverflowError:
                value = math.inf
            if not math.isfinite(value):
                raise JsonRunRefused(f"query {qid[:60]!r}, document {docid[:60]!r}: the score is not finite")
            scores[docid] = value
        if scores:
            run[qid] = scores
    if not run:
        raise JsonRunRefused("the run holds no document for any query")
    return run


__all__ = ["JsonRunRefused", "read_json_run"]
