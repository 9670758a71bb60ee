"""Schemathesis hooks of the live run (scripts/ci-schemathesis.sh): uploads that are accepted, waits that are short.

An upload's file is any bytes in the schema (`format: binary`), so Schemathesis alone almost never sends a run of
the dataset it names, every upload is a 400 naming the lines, and the stateful chain that starts at an accepted
upload (upload → status → per-query → update → withdraw, the schema's links) never runs. This hook puts a valid
run into the positive cases of `POST /api/v1/submissions/`: a run of a split (its topics, its documents) that the
script exported to ``ST_RUNS`` as ``<dataset>__<split>.trec``, under a tag of its own each time (identical bytes
would be refused as a duplicate), and, one case in two, with only the fields an upload needs (the generated
metadata is often refused, rightly, by the server). Negative cases are left as generated: they must be refused.

A changed body is judged again by Schemathesis' own validator (jsonschema_rs), and a case it finds invalid counts as
negative, so its 202 would be reported as "Schema-violating request accepted". Stop 44's CI failed so: a kept
generated ``models_used`` of ``""`` matched both branches of the schema's ``oneOf`` (its pattern took the empty
text too), a schema fault since mended (``submissions.provenance.MODELS_PATTERN``). The hook now checks the body it
builds with that validator first (``upload_body``) and stops the run with the fields and values it refuses: a
positive value the schema itself refuses is a fault of the schema, to be mended there, not a flaky case.

A submission's status takes ``wait`` (0 < wait ≤ 10 s: the server holds the answer while the run is queued or
scoring), and the runs this fuzzing uploads often are (one worker, many uploads): ten seconds for each such case
would make the run minutes longer. A positive case asks at most ``MAX_WAIT`` seconds (the same code path, held the
same way, answered the same); negative ones stay as generated, and are refused at once.

The choices follow ``ST_SEED`` (the script prints it, and passes the same seed to Schemathesis): a failure replays
with ``ST_SEED=<seed> scripts/ci-schemathesis.sh``.
"""

from __future__ import annotations

import gzip
import itertools
import os
import random
from pathlib import Path

import jsonschema_rs
import schemathesis

UPLOAD = ("POST", "/api/v1/submissions/")
RETRIEVE = ("GET", "/api/v1/submissions/{id}/")
#: The longest ``wait`` a positive case asks, in seconds.
MAX_WAIT = 0.2
_RUNS = sorted(Path(os.environ["ST_RUNS"]).glob("*.trec")) if os.environ.get("ST_RUNS") else []
_RANDOM = random.Random(int(os.environ.get("ST_SEED", "0")))
_COUNT = itertools.count(1)


def _run(path: Path, tag: str) -> str:
    """The run at ``path`` under ``tag``, as text: Schemathesis validates a body a hook changed against the schema
    again, and bytes are no JSON string (the case would count as negative, its 202 as a failure)."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    lines = (line.split() for line in raw.decode().splitlines() if line.strip())
    return "".join(f"{q} Q0 {doc} {rank} {score} {tag}\n" for q, _, doc, rank, score, *_ in lines)


def _negative(case) -> bool:
    """A case meant to be refused (the whole case, or one of its parts): it stays as generated."""
    meta = case.meta
    return meta is not None and (meta.generation.mode.is_negative
                                 or any(info.mode.is_negative for info in meta.components.values()))


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    operation = (case.method.upper(), case.path)
    if operation == RETRIEVE:
        _short_wait(case)
    elif operation == UPLOAD:
        _valid_run(case)


def _short_wait(case) -> None:
    wait = (case.query or {}).get("wait")
    if wait is None or isinstance(wait, bool) or _negative(case):
        return
    try:
        seconds = float(wait)
    except (TypeError, ValueError):
        return
    if 0 < seconds <= 10:
        case.query = {**case.query, "wait": min(seconds, MAX_WAIT)}


def _valid_run(case) -> None:
    if not _RUNS or not isinstance(case.body, dict) or _negative(case):
        return
    path = _RANDOM.choice(_RUNS)
    dataset, split = path.stem.split("__", 1)
    tag = f"st{os.environ.get('ST_SEED', '0')}-{next(_COUNT)}"
    generated = dict(case.body) if _RANDOM.random() < 0.5 else {"visibility": "public"}
    schema = case.operation.get_body_for_media_type(case.media_type).validation_schema
    case.body = upload_body(generated, schema, tag=tag, dataset=dataset, split=split, run_file=_run(path, tag))


def upload_body(generated: dict, schema: dict, *, tag: str, **upload: str) -> dict:
    """``upload`` (dataset, split, run_file) and the ``generated`` fields, with ``tag`` as the system's name when
    none was generated; AssertionError naming the fields ``schema`` refuses, as Schemathesis' validator judges it."""
    body = {"system_name": tag, **generated, **upload}
    validator = jsonschema_rs.validator_for(schema)
    refused = {error.instance_path[0] if error.instance_path else "(the body)": error.message
               for error in validator.iter_errors(body)}
    if refused:
        whose = "the upload hook's own" if set(refused) <= set(upload) else "generated positive"
        raise AssertionError(
            f"{whose} fields that the schema refuses: {refused}; a value Schemathesis generates as valid and its "
            "validator refuses is a fault of the schema (e.g. two branches of a oneOf taking it): mend the schema")
    return body
