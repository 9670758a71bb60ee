"""Suite tables: one row per system across a benchmark's datasets, with the benchmark's aggregate.

A benchmark whose ``aggregate`` is not "none" is a suite. Its table has a
column per published dataset (the primary measure on the dataset's default
split, hidden test first) and a row per system, where a system is the same
user and system name across the datasets (``leaderboard_rows`` already hides
private, withdrawn and hidden entries). The aggregate is computed by the metric
core (``evaluation.aggregate``), so the page and ``python -m evaluation
aggregate`` agree.

A row missing a dataset shows a gap and gets no aggregate — unless partial
aggregates were asked for, and then the row says it is partial and which
datasets it lacks. Never a silent mean over fewer datasets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from catalogue.models import Benchmark, Dataset, Split
from evaluation.aggregate import LOWER_IS_BETTER, aggregate_table, harmonic_mean
from evaluation.ladder import percent_text
from submissions.models import Submission

from .selectors import LeaderboardRow, cell_format, leaderboard_rows

#: Measures of a dataset that already holds LEXTREME's two reported aggregates (the LEXTREME card).
LEXTREME_PARTS = {"dataset aggregate": "dataset_aggregate", "language aggregate": "language_aggregate"}


@dataclass
class SuiteColumn:
    """A dataset of the suite and the measure its column shows."""

    dataset: Dataset
    split: Split | None
    measure: str
    key: str  # the cell name given to the aggregate


@dataclass
class SuiteCell:
    """A system's score on one dataset (``value`` None: a gap)."""

    value: float | None
    display: str
    submission_id: int | None = None


@dataclass
class SuiteRow:
    """A system across the suite: its cells (aligned with the columns) and its aggregate."""

    rank: int | None
    kind: str  # "scored", "baseline" or "reported"
    system: str
    owner: str
    cells: list[SuiteCell]
    aggregate: float | None
    aggregate_display: str
    partial: bool = False
    missing: list[str] = field(default_factory=list)  # names of the datasets the row lacks
    parts: dict[str, float | None] = field(default_factory=dict)
    parts_display: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "kind": self.kind,
            "system": self.system,
            "owner": self.owner,
            "scores": [c.value for c in self.cells],
            "aggregate": self.aggregate,
            "partial": self.partial,
            "missing": list(self.missing),
            **self.parts,
        }


@dataclass
class SuiteTable:
    """What the suite template renders (and an API could serialize with ``to_dict``)."""

    benchmark: Benchmark
    method: str
    method_label: str
    lower_is_better: bool
    partial_allowed: bool
    columns: list[SuiteColumn]
    rows: list[SuiteRow]
    # True for the LEXTREME card: its one column already holds the dataset
    # aggregate, shown under "dataset aggregate", so the page does not repeat it.
    parts_from_dataset: bool = False

    @property
    def is_suite(self) -> bool:
        return self.method != Benchmark.Aggregate.NONE and bool(self.columns)

    @property
    def has_gaps(self) -> bool:
        return any(r.missing for r in self.rows)

    @property
    def part_names(self) -> list[str]:
        return ["dataset aggregate", "language aggregate"] if self.method == Benchmark.Aggregate.LEXTREME else []

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark.slug,
            "method": self.method,
            "lower_is_better": self.lower_is_better,
            "columns": [{"dataset": c.dataset.slug, "measure": c.measure} for c in self.columns],
            "rows": [r.to_dict() for r in self.rows],
        }


def suite_table(*, benchmark: Benchmark, partial: bool = False) -> SuiteTable:
    """The suite table of ``benchmark``: public entries of its published datasets, aggregated per system.

    ``partial=True`` gives incomplete rows the aggregate over the datasets they
    have, marked partial; by default they get none. One leaderboard read per
    dataset (each cached) plus one query to link submissions to their users.
    """
    method = benchmark.aggregate
    parts_from_dataset = False
    datasets = list(
        Dataset.objects.filter(benchmark=benchmark, is_published=True).prefetch_related("splits").order_by("order", "name")
    )
    columns: list[SuiteColumn] = []
    per_column: list[list[LeaderboardRow]] = []
    for ds in datasets:
        split = ds.default_split
        if split is not None:
            split.dataset = ds
        columns.append(SuiteColumn(dataset=ds, split=split, measure=ds.primary_measure, key=_cell_key(ds, method)))
        per_column.append(leaderboard_rows(split=split) if split is not None else [])

    users = _submission_users([r.submission_id for rows in per_column for r in rows if r.submission_id])
    systems: dict[tuple, dict[str, Any]] = {}
    for col, rows in zip(columns, per_column, strict=True):
        for row in rows:
            value = row.scores.get(col.measure)
            if value is None:
                continue
            key = _system_key(row, users)
            entry = systems.setdefault(key, {"row": row, "cells": {}, "parts": {}})
            # Several entries of one system on a dataset: its best one counts (rows come ranked).
            if col.key not in entry["cells"]:
                entry["cells"][col.key] = (value, row.submission_id)
            if len(columns) == 1 and method == Benchmark.Aggregate.LEXTREME and set(LEXTREME_PARTS) <= set(row.scores):
                entry["parts"] = {v: row.scores.get(k) for k, v in LEXTREME_PARTS.items()}
                parts_from_dataset = True

    aggregates = {}
    if method != Benchmark.Aggregate.NONE and columns and systems:
        table = {
            str(i): {c.key: entry["cells"].get(c.key, (None, None))[0] for c in columns}
            for i, entry in enumerate(systems.values())
        }
        aggregates = aggregate_table(table, method=method, cells=[c.key for c in columns], partial=partial)

    pct = bool(columns)  # every score is shown in percent (Dataset.format_value; a hidden split's on its grid)
    formats = {c.key: cell_format(c.split) for c in columns}  # as the dataset's board prints each row
    out_rows: list[SuiteRow] = []
    for i, entry in enumerate(systems.values()):
        row = entry["row"]
        cells = []
        for c in columns:
            value, sub_id = entry["cells"].get(c.key, (None, None))
            cells.append(SuiteCell(value=value, display=formats[c.key](row, value), submission_id=sub_id))
        agg = aggregates.get(str(i))
        value = agg.value if agg else None
        parts = dict(agg.parts) if agg else {}
        if entry["parts"] and all(v is not None for v in entry["parts"].values()):
            # The LEXTREME card: the dataset holds the two reported aggregates; the score is their harmonic mean.
            parts = dict(entry["parts"])
            value = harmonic_mean([v for v in parts.values() if v is not None])
        missing_keys = set(agg.missing) if agg else set()
        out_rows.append(
            SuiteRow(
                rank=None,
                kind=row.kind,
                system=row.system,
                owner=row.source if row.kind == "reported" else row.owner,
                cells=cells,
                aggregate=value,
                aggregate_display=_format(value, method, pct),
                partial=bool(agg and agg.partial and value is not None),
                missing=[c.dataset.name for c in columns if c.key in missing_keys],
                parts=parts,
                parts_display={k: _format(v, method, pct) for k, v in parts.items()},
            )
        )
    lower = method in LOWER_IS_BETTER
    _rank(out_rows, lower_is_better=lower)
    return SuiteTable(
        benchmark=benchmark,
        method=method,
        method_label=Benchmark.Aggregate(method).label if method in Benchmark.Aggregate.values else method,
        lower_is_better=lower,
        partial_allowed=partial,
        columns=columns,
        rows=out_rows,
        parts_from_dataset=parts_from_dataset,
    )


def _cell_key(ds: Dataset, method: str) -> str:
    """The cell name of a dataset: its slug, or ``slug/default/language`` for the LEXTREME aggregate."""
    if method == Benchmark.Aggregate.LEXTREME:
        language = (ds.language or "unknown").replace("/", "-").strip() or "unknown"
        return f"{ds.slug}/default/{language}"
    return ds.slug


def _submission_users(ids: list[int]) -> dict[int, int]:
    if not ids:
        return {}
    return dict(Submission.objects.filter(pk__in=set(ids)).values_list("pk", "user_id"))


def _system_key(row: LeaderboardRow, users: dict[int, int]) -> tuple:
    """Who a row belongs to: the user and system name. An anonymous entry joins nothing, not even its owner's
    other anonymous entries: a joined row would say that they have one owner."""
    if row.kind == "reported" or row.submission_id is None:
        return ("reported", row.system)
    if row.is_anonymous:
        return ("anonymous", row.submission_id)
    return (row.kind, users.get(row.submission_id), row.system)


def _format(value: float | None, method: str, percent: bool) -> str:
    if value is None:
        return "–"
    if method == Benchmark.Aggregate.MEAN_RANK:
        return f"{value:.2f}"
    return percent_text(value) if percent else f"{value:.4f}"


def _rank(rows: list[SuiteRow], *, lower_is_better: bool) -> None:
    """Order rows by aggregate (rows without one last) and rank complete rows scored here; ties share a rank.

    Partial and reported rows keep their place by value but get no rank, like
    reported rows on a dataset leaderboard.
    """

    def key(r: SuiteRow):
        if r.aggregate is None:
            return (1, 0.0, r.system.lower())
        return (0, r.aggregate if lower_is_better else -r.aggregate, r.system.lower())

    rows.sort(key=key)
    position = 0
    previous = None
    rank = 0
    for r in rows:
        if r.aggregate is None or r.partial or r.kind == "reported":
            continue
        position += 1
        if previous is None or r.aggregate != previous:
            rank, previous = position, r.aggregate
        r.rank = rank
