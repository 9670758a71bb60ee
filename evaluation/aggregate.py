"""Suite aggregates: one score per system over many datasets (and configurations, and languages).

A suite table is ``{"system": {"cell": score}}``. A cell is a dataset (a suite of
retrieval datasets) or, for the LEXTREME aggregate, ``dataset/config/language``.
Scores are fractions or percentages, as long as a table uses one scale.

Methods (``METHODS``):

- ``mean``: the arithmetic mean over the cells.
- ``harmonic``: the harmonic mean over the cells; a weak cell pulls the
  aggregate down much more than a strong one lifts it (so a model cannot hide a
  weak task), and one 0 makes it 0.
- ``mean-rank``: in every cell the systems that have a score are ranked, best
  (highest) = 1; tied systems share the mean of the ranks they span (1 and 2
  tied → 1.5 each, as ``scipy.stats.rankdata(method="average")``), so ties
  neither reward nor punish. The aggregate is the mean of a system's ranks —
  lower is better, the only method where it is.
- ``lextreme``: Niklaus et al. (2023), LEXTREME: the *dataset aggregate* is the
  harmonic mean over datasets of the harmonic mean over configurations of the
  harmonic mean over languages; the *language aggregate* is the harmonic mean
  over languages of the harmonic mean over datasets of the harmonic mean over
  configurations; the *LEXTREME score* is the harmonic mean of the two.

Completeness: the cells of a table are the union of every system's cells (or an
explicit ``cells`` list). A system missing a cell gets no aggregate
(``value=None``) — never a silent mean over fewer cells. With ``partial=True``
it gets the aggregate over the cells it has, with ``partial`` set and the
missing cells listed, so a page or the command line can mark it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from evaluation.conventions import AGGREGATE_METHODS
from evaluation.errors import InputError, ProblemCollector

METHODS = AGGREGATE_METHODS

#: Methods where a lower aggregate is better.
LOWER_IS_BETTER = frozenset({"mean-rank"})


class ScoresFormatError(InputError):
    """A suite score table that cannot be aggregated (bad shape, bad value, bad cell name)."""


@dataclass(frozen=True)
class SystemAggregate:
    """The aggregate of one system.

    ``value`` is None when the system misses cells and partial aggregates were
    not asked for; ``partial`` is True when ``value`` was computed over fewer
    cells than the table has. ``parts`` holds the named intermediate values of a
    method (for ``lextreme``: ``dataset_aggregate``, ``language_aggregate``).
    """

    system: str
    method: str
    value: float | None
    partial: bool = False
    missing: tuple[str, ...] = ()
    n_cells: int = 0
    parts: dict[str, float | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """JSON-friendly form."""
        return {
            "method": self.method,
            "value": self.value,
            "partial": self.partial,
            "missing": list(self.missing),
            "n_cells": self.n_cells,
            **self.parts,
        }


def arithmetic_mean(values: Iterable[float]) -> float:
    """The arithmetic mean; refuses an empty list rather than inventing a 0."""
    vals = list(values)
    if not vals:
        raise ValueError("the mean of no values is undefined")
    return math.fsum(vals) / len(vals)


def harmonic_mean(values: Iterable[float]) -> float:
    """The harmonic mean n / Σ 1/x of non-negative values; 0 when any value is 0.

    A 0 makes the harmonic mean 0 (its limit), which is what a suite wants: a
    system that fails one task entirely has failed the suite.
    """
    vals = list(values)
    if not vals:
        raise ValueError("the harmonic mean of no values is undefined")
    for v in vals:
        if v < 0 or math.isnan(v):
            raise ValueError(f"the harmonic mean needs non-negative values, got {v}")
    if any(v == 0 for v in vals):
        return 0.0
    return len(vals) / math.fsum(1.0 / v for v in vals)


def average_ranks(scores: Mapping[str, float]) -> dict[str, float]:
    """Ranks of systems in one cell, best (highest score) = 1, ties sharing their mean rank."""
    ordered = sorted(scores.items(), key=lambda kv: -kv[1])
    ranks: dict[str, float] = {}
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1][1] == ordered[i][1]:
            j += 1
        shared = (i + 1 + j + 1) / 2
        for name, _ in ordered[i : j + 1]:
            ranks[name] = shared
        i = j + 1
    return ranks


def split_cell(cell: str) -> tuple[str, str, str]:
    """``"dataset/config/language"`` → its three parts; ValueError naming the fix otherwise."""
    parts = cell.split("/")
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise ValueError(
            f"cell {cell!r} is not dataset/config/language: the LEXTREME aggregate needs all three parts "
            "(use e.g. 'swiss_judgment_prediction/default/de' for a dataset with one configuration)"
        )
    return parts[0], parts[1], parts[2]


def lextreme_aggregates(scores: Mapping[str, float]) -> dict[str, float]:
    """The LEXTREME dataset aggregate, language aggregate and score of one system.

    ``scores`` maps ``dataset/config/language`` to a score. The nesting follows
    the paper: a configuration's languages are averaged first for the dataset
    aggregate; a language's configurations, then its datasets, for the language
    aggregate.
    """
    if not scores:
        raise ValueError("no scores to aggregate")
    tree: dict[str, dict[str, dict[str, float]]] = {}
    for cell, value in scores.items():
        dataset, config, language = split_cell(cell)
        tree.setdefault(dataset, {}).setdefault(config, {})[language] = value

    dataset_aggregate = harmonic_mean(
        harmonic_mean(harmonic_mean(langs.values()) for langs in configs.values()) for configs in tree.values()
    )

    by_language: dict[str, dict[str, list[float]]] = {}
    for dataset, configs in tree.items():
        for langs in configs.values():
            for language, value in langs.items():
                by_language.setdefault(language, {}).setdefault(dataset, []).append(value)
    language_aggregate = harmonic_mean(
        harmonic_mean(harmonic_mean(config_values) for config_values in datasets.values())
        for datasets in by_language.values()
    )
    return {
        "dataset_aggregate": dataset_aggregate,
        "language_aggregate": language_aggregate,
        "score": harmonic_mean([dataset_aggregate, language_aggregate]),
    }


def aggregate_table(
    scores: Mapping[str, Mapping[str, float | None]],
    *,
    method: str,
    cells: Sequence[str] | None = None,
    partial: bool = False,
) -> dict[str, SystemAggregate]:
    """The aggregate of every system of a suite table, in the table's order.

    ``cells`` fixes the table's columns (default: every cell any system has);
    a None score counts as missing. Raises ``ScoresFormatError`` for a value
    that is not a finite non-negative number or a cell name the method cannot
    read, so the caller can show every bad cell at once.
    """
    if method not in METHODS:
        raise ValueError(f"unknown aggregate method {method!r}; choose one of {', '.join(METHODS)}")
    validate_table(scores, method=method)
    columns = list(cells) if cells is not None else _union_cells(scores)
    present = {
        system: {c: float(v) for c in columns if (v := row.get(c)) is not None} for system, row in scores.items()
    }

    ranks: dict[str, dict[str, float]] = {}
    if method == "mean-rank":
        for c in columns:
            column = {s: row[c] for s, row in present.items() if c in row}
            for s, r in average_ranks(column).items():
                ranks.setdefault(s, {})[c] = r

    out: dict[str, SystemAggregate] = {}
    for system, row in present.items():
        missing = tuple(c for c in columns if c not in row)
        parts: dict[str, float | None] = (
            {"dataset_aggregate": None, "language_aggregate": None} if method == "lextreme" else {}
        )
        if not row or (missing and not partial):
            out[system] = SystemAggregate(system, method, None, bool(missing), missing, len(row), parts)
            continue
        if method == "mean":
            value = arithmetic_mean(row.values())
        elif method == "harmonic":
            value = harmonic_mean(row.values())
        elif method == "mean-rank":
            value = arithmetic_mean(ranks[system].values())
        else:
            agg = lextreme_aggregates(row)
            value = agg["score"]
            parts = {"dataset_aggregate": agg["dataset_aggregate"], "language_aggregate": agg["language_aggregate"]}
        out[system] = SystemAggregate(system, method, value, bool(missing), missing, len(row), parts)
    return out


def validate_table(scores: object, *, method: str, path: str = "scores") -> None:
    """Refuse a table that is not ``{system: {cell: number >= 0 | null}}``, naming each bad entry."""
    problems = ProblemCollector(path, ScoresFormatError)
    if not isinstance(scores, Mapping) or not scores:
        problems.add(None, 'expected a JSON object {"system": {"dataset/config/language": score}} with at least one system')
        problems.raise_now()
    for system, row in scores.items():
        if not isinstance(row, Mapping):
            problems.add(None, f"system {system!r}: expected an object of cell → score, got {type(row).__name__}")
            continue
        for cell, value in row.items():
            if method == "lextreme":
                try:
                    split_cell(cell)
                except ValueError as exc:
                    problems.add(None, f"system {system!r}: {exc}")
                    continue
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                problems.add(None, f"system {system!r}, cell {cell!r}: score {value!r} is not a finite number")
            elif value < 0:
                problems.add(None, f"system {system!r}, cell {cell!r}: score {value} is negative; scores are F1 or retrieval measures ≥ 0")
    problems.raise_if_any()


def _union_cells(scores: Mapping[str, Mapping[str, object]]) -> list[str]:
    seen: dict[str, None] = {}
    for row in scores.values():
        for cell in row:
            seen.setdefault(cell, None)
    return list(seen)
