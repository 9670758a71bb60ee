"""How the living board differs from a snapshot: rescored values, entries added or gone, ranks moved.

Both sides are rows as a snapshot stores them (the living one built now by
:func:`snapshots.services.board_rows`, the same call that takes a snapshot),
so the comparison is between two things the board showed: on a hidden split
two released values on their grids, never a finer number. Across new judgments
a hidden split sets no entry's values (or rank) then beside its values now: the
pair is what the new judgments changed for that run, which a hidden split does
not show (the budget's ``version_deltas``; the submission page and the qrels
history keep the same rule).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from catalogue.models import Split
from submissions import disclosure

from .models import Snapshot, entry_ids
from .services import board_rows, core_version

#: "kept": on both boards, its values then not compared (a hidden split under other judgments: ``version_deltas``).
Change = Literal["same", "rescored", "moved", "added", "removed", "kept"]


def row_key(row: dict[str, Any]) -> tuple:
    """An entry's identity across time: its submission, or for a paper's number the paper and the system."""
    if row.get("submission_id"):
        return ("entry", row["submission_id"])
    return ("reported", row.get("source", ""), row.get("system", ""))


@dataclass
class DiffRow:
    change: Change
    then: dict[str, Any] | None
    now: dict[str, Any] | None
    cells: list[tuple[str, str, bool]] = field(default_factory=list)  # (then, now, changed) per measure

    @property
    def row(self) -> dict[str, Any]:
        return self.now or self.then or {}

    @property
    def rank_then(self) -> int | None:
        return self.then.get("rank") if self.then else None

    @property
    def rank_now(self) -> int | None:
        return self.now.get("rank") if self.now else None

    @property
    def rank_move(self) -> int | None:
        """Places gained (positive) or lost since the snapshot; None without a rank on both sides."""
        if self.rank_then is None or self.rank_now is None:
            return None
        return self.rank_then - self.rank_now


@dataclass
class BoardDiff:
    snapshot: Snapshot
    measures: list[str]
    rows: list[DiffRow]
    qrels_now: int | None
    core_now: str
    grid_now_note: str
    counts: dict[str, int]
    compared: bool = True  # False: a hidden split under other judgments, entries' values then not set beside now

    @property
    def unchanged(self) -> bool:
        return all(r.change == "same" for r in self.rows) and self.qrels_now == self.snapshot.qrels_version


def board_diff(*, snapshot: Snapshot, split: Split) -> BoardDiff:
    """The snapshot's rows against the board now, in the current board's order, then the entries that left it."""
    now_rows = board_rows(split=split)
    version = split.current_qrels.version if split.current_qrels_id and split.current_qrels else None
    compared = version == snapshot.qrels_version or disclosure.shows(split, "version_deltas")
    measures = [m for m in snapshot.measures
                if any(r["cells"].get(m) for r in snapshot.rows) or any(r["cells"].get(m) for r in now_rows)]
    moved = entry_ids(snapshot)  # an imported snapshot's rows cite the ids of the host that took it
    then_rows = [{**r, "submission_id": moved.get(r["submission_id"], r["submission_id"])}
                 if r.get("submission_id") else r for r in snapshot.rows]
    then_by_key = {row_key(r): r for r in then_rows}
    seen: set[tuple] = set()
    out: list[DiffRow] = []
    for now in now_rows:
        key = row_key(now)
        then = then_by_key.get(key)
        seen.add(key)
        out.append(_compare(then, now, measures) if compared or then is None else
                   DiffRow("kept", None, now, [("", now["cells"].get(m, ""), False) for m in measures]))
    for then in then_rows:
        if row_key(then) not in seen:
            out.append(_compare(then, None, measures))
    counts = {c: sum(1 for r in out if r.change == c) for c in ("same", "rescored", "moved", "added", "removed", "kept")}
    return BoardDiff(snapshot=snapshot, measures=measures, rows=out, qrels_now=version, core_now=core_version(),
                     grid_now_note=disclosure.grid_note(split), counts=counts, compared=compared)


def _compare(then: dict[str, Any] | None, now: dict[str, Any] | None, measures: list[str]) -> DiffRow:
    if then is None:
        return DiffRow("added", None, now, [("", (now or {})["cells"].get(m, ""), False) for m in measures])
    if now is None:
        return DiffRow("removed", then, None, [(then["cells"].get(m, ""), "", False) for m in measures])
    cells = []
    for m in measures:
        a, b = then["cells"].get(m, ""), now["cells"].get(m, "")
        cells.append((a, b, a != b))
    if any(changed for _, _, changed in cells):
        change: Change = "rescored"
    elif then.get("rank") != now.get("rank"):
        change = "moved"
    else:
        change = "same"
    return DiffRow(change, then, now, cells)
