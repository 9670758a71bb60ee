"""Runs in JSON, as retrieval toolkits write them, turned into the TREC run they stand for.

MTEB's ``save_predictions``, ranx (``Run.save(..., kind="json")``) and
ir_measures / pytrec_eval all write one shape: ``{query id: {document id:
score}}``. :func:`json_run_to_trec` checks it (an object of objects, ids
that fit a TREC column, finite numeric scores) and answers the TREC lines,
ranked by score, ties by document id, both descending (trec_eval's order), so
the rest of the checks and the scoring are the ones every run gets. A problem
names the query and the document by their keys, or the line and column of a
JSON syntax error.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .errors import ProblemCollector, RunFormatError

#: What the shape is called in messages.
SHAPE = '{"query id": {"document id": score}}'
_UTF8_BOM = b"\xef\xbb\xbf"
_SPACE = b" \t\r\n"


def looks_like_json_run(head: bytes) -> bool:
    """Whether a retrieval upload's first bytes open a JSON object (a TREC line never starts with ``{``)."""
    return head.removeprefix(_UTF8_BOM).lstrip(_SPACE)[:1] == b"{"


def _bad_id(value: str) -> str | None:
    if not value:
        return "is empty"
    if any(c.isspace() for c in value):
        return "contains a space, which a TREC run cannot hold"
    return None


def json_run_to_trec(data: bytes, *, path: str = "run.json", tag: str = "json") -> bytes:
    """The TREC run that a JSON run ``{qid: {docid: score}}`` stands for; ``RunFormatError`` naming keys otherwise."""
    problems = ProblemCollector(path, RunFormatError)
    try:
        run: Any = json.loads(data.removeprefix(_UTF8_BOM))
    except UnicodeDecodeError as exc:
        problems.add(None, f"the JSON is not UTF-8 text (byte {exc.start + 1}).")
        problems.raise_now()
    except json.JSONDecodeError as exc:
        problems.add(exc.lineno, f"not valid JSON: {exc.msg} (column {exc.colno}). Expected {SHAPE}.")
        problems.raise_now()
    if not isinstance(run, dict):
        problems.add(None, f"a JSON run is an object {SHAPE} (as MTEB's save_predictions, ranx and ir_measures "
                           f"write it); this file holds {_kind(run)}.")
        problems.raise_now()
    lines: list[str] = []
    for qid, docs in run.items():
        if (why := _bad_id(qid)) is not None:
            problems.add(None, f"query {qid!r}: the query id {why}.")
            continue
        if not isinstance(docs, dict):
            problems.add(None, f"query {qid!r}: expected an object {{\"document id\": score}}, found {_kind(docs)}.")
            continue
        ranked = []
        for docid, score in docs.items():
            if (why := _bad_id(docid)) is not None:
                problems.add(None, f"query {qid!r}, document {docid!r}: the document id {why}.")
            elif isinstance(score, bool) or not isinstance(score, (int, float)):
                problems.add(None, f"query {qid!r}, document {docid!r}: the score {score!r} is not a number.")
            elif not math.isfinite(score):
                problems.add(None, f"query {qid!r}, document {docid!r}: the score {score!r} is not finite.")
            else:
                ranked.append((float(score), docid))
        ranked.sort(reverse=True)
        lines.extend(f"{qid} Q0 {docid} {rank} {score!r} {tag}" for rank, (score, docid) in enumerate(ranked, 1))
    problems.raise_if_any()
    if not lines:
        problems.add(None, f"the JSON run holds no document for any query; expected {SHAPE}.")
        problems.raise_now()
    return ("\n".join(lines) + "\n").encode()


def _kind(value: Any) -> str:
    names = {list: "a list", str: "a string", bool: "true or false", type(None): "null", dict: "an object"}
    return names.get(type(value), "a number")
