"""Taking a snapshot: the board as an anonymous visitor reads it now, stored once.

The rows come from the one function that builds a board
(:func:`leaderboard.selectors.leaderboard_rows`, no user: public entries only),
the values from the one module that decides what a hidden split shows
(:mod:`submissions.disclosure`): a snapshot can hold nothing the board and
its JSON export did not show at that moment — on a hidden split the
primary measure's released values on the grid, no per-topic value, no
p-value, no judgment's checksum.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import logging
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

import evaluation
from catalogue.models import Split, format_percent
from leaderboard.selectors import LeaderboardRow, leaderboard_rows
from submissions import disclosure
from submissions.models import Submission

from .models import Snapshot

logger = logging.getLogger(__name__)

#: Fields of a board row a snapshot keeps: the board's JSON export's, plus the run's checksum and the printed cells.
#: Snapshots taken before the provenance fields hold ``used_training_data`` instead (kept as taken).
ROW_FIELDS = (
    "rank", "kind", "submission_id", "system", "owner", "team", "family", "date", "paper_url", "code_url", "source",
    "notes", "training_data", "training_data_note", "models", "could_have_seen", "disclosed", "is_anonymous",
    "coverage_exempt", "params", "owner_submission_number", "reproduced",
)


@functools.cache
def core_version() -> str:
    """The metric core that scored the board: ``evaluation@`` and the sha256 (12 hex) of its source files.

    A digest rather than a number somebody must remember to raise: any change to a measure, a parser or the
    compiled path gives another value, so two snapshots with the same value were scored by the same code.
    """
    root = Path(evaluation.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".c", ".h") and p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return f"evaluation@{digest.hexdigest()[:12]}"


def _cell_format(split: Split):
    """As the board's CSV and LaTeX print a value: papers' numbers as printed, entries scored here on the grid."""
    scored = disclosure.formatter(split)
    return lambda row, value: (format_percent if row.kind == "reported" else scored)(value)


def board_rows(*, split: Split) -> list[dict[str, Any]]:
    """The public board of ``split`` now, as the rows a snapshot stores (ranked by the primary measure)."""
    dataset = split.dataset
    measures = list(dataset.measures or [])
    rows: list[LeaderboardRow] = [r for r in leaderboard_rows(split=split, user=None) if not r.is_private]
    fmt = _cell_format(split)
    sha = dict(Submission.objects.filter(pk__in=[r.submission_id for r in rows if r.submission_id])
               .values_list("pk", "sha256"))
    out = []
    for row in rows:
        data = row.to_dict()
        entry = {name: data[name] for name in ROW_FIELDS}
        entry["after_task"] = bool(row.extra.get("after_task"))
        entry["scores"] = {m: row.scores.get(m) for m in measures}  # the JSON export's fractions
        entry["cells"] = {m: ("" if row.scores.get(m) is None else fmt(row, row.scores[m])) for m in measures}
        entry["run_sha256"] = sha.get(row.submission_id, "") if row.submission_id else ""
        out.append(entry)
    return out


def snapshot_key(*, split: Split, day: dt.date) -> str:
    """``<dataset>-<split>-<yyyy-mm-dd>``, with ``-2``, ``-3`` … for the day's later snapshots of the board."""
    base = f"{split.dataset.slug}-{split.name}-{day.isoformat()}"
    taken = set(Snapshot.objects.filter(key__startswith=base).values_list("key", flat=True))
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def snapshot_title(*, dataset_name: str, split_name: str, day: dt.date, key_suffix: str = "") -> str:
    """"Lexboard, BSARD test board, snapshot 2027-03-01" (a second one that day: "… 2027-03-01 (2)")."""
    return f"Lexboard, {dataset_name} {split_name} board, snapshot {day.isoformat()}{key_suffix}"


def snapshot_take(*, split: Split, reason: str = Snapshot.Reason.CURATOR, note: str = "", made_by: str = "",
                  now: dt.datetime | None = None) -> Snapshot:
    """Store the board of ``split`` as it reads now; returns the new snapshot.

    Refuses a split without published judgments (there is no board to cite). Two curators at the same second
    get two keys: the unique key is retried.
    """
    split = Split.objects.select_related("dataset__benchmark", "current_qrels").get(pk=split.pk)
    if split.current_qrels_id is None:
        raise ValueError(f"{split} has no published judgments yet: there is no board to snapshot.")
    dataset = split.dataset
    now = (now or timezone.now()).astimezone(dt.UTC).replace(microsecond=0)
    day = now.date()
    version = split.current_qrels
    assert version is not None  # current_qrels_id checked above
    hidden = disclosure.hidden(split)
    rows = board_rows(split=split)
    for attempt in range(5):
        key = snapshot_key(split=split, day=day)
        suffix = key[len(f"{dataset.slug}-{split.name}-{day.isoformat()}"):]
        snapshot = Snapshot(
            key=key, split=split, taken_at=now, reason=reason, note=note, made_by=made_by,
            title=snapshot_title(dataset_name=dataset.name, split_name=split.name, day=day,
                                 key_suffix=f" ({suffix.lstrip('-')})" if suffix else ""),
            benchmark_name=dataset.benchmark.name, dataset_slug=dataset.slug, dataset_name=dataset.name,
            split_name=split.name, hidden=hidden,
            qrels_version=version.version, qrels_created_at=version.created_at,
            qrels_sha256="" if hidden else version.sha256,
            core_version=core_version(),
            measures=list(dataset.measures or []), primary_measure=dataset.primary_measure,
            ranked_by=dataset.primary_measure, grid=disclosure.grid_step(split),
            grid_note=disclosure.grid_note(split), scores_are=disclosure.SCORES_ARE, rows=rows,
        )
        try:
            with transaction.atomic():
                snapshot.save()
            return snapshot
        except IntegrityError:
            if attempt == 4:
                raise
    raise AssertionError("unreachable")


def snapshot_on_event(*, split: Split, reason: str, note: str) -> Snapshot | None:
    """The automatic snapshot of a board about to change (new judgments, a reveal); never breaks the event.

    Taken in a savepoint of the event's transaction, before the change: the board that stops being shown is
    kept. A board with no entry scored here (nothing to cite) is skipped. A failure is logged and rolled back
    to the savepoint; the event goes on.
    """
    try:
        with transaction.atomic():
            fresh = Split.objects.select_related("dataset").get(pk=split.pk)
            if fresh.current_qrels_id is None:
                return None
            if not any(r["kind"] != "reported" for r in board_rows(split=fresh)):
                return None
            return snapshot_take(split=fresh, reason=reason, note=note)
    except Exception:
        logger.exception("the automatic snapshot of %s (%s) failed", split, reason)
        return None
