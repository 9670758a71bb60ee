"""What a hidden split discloses: the one module every page, export and API field asks.

A leaderboard on hidden labels is an oracle for them unless every number it
shows is coarse enough. An attacker puts every other topic of a crafted run
on a known lattice (one document per topic, fillers before a probe), so the
released mean of *any* measure decodes the probes when it is finer than one
topic's share of the mean. The rule, stated once here (docs/security.md,
"The information budget of a hidden split", holds the same table):

* a hidden split releases a run's numbers only when the Ladder admitted it
  (:func:`result_released`), and then **only its primary measure** (the one
  the Ladder watches, :func:`released_measures`); the other measures are for
  public splits and a shared task's reveal;
* a released value sits on a grid (:func:`grid_step`): the smallest "nice"
  step (1, 2 or 5 × 10^k of the measure's range) at least range / N for the
  N evaluated topics of the released scope — whole percentage points on 100
  topics, half points on 222. One topic moves the mean by at most one step,
  so a release tells about one bit, not one bit per probe;
* p-values on a hidden split are bands (:func:`p_band`), never digits;
* the features of :data:`BUDGET` marked public-only are not shown at all.

The owner of a run is the attacker: owners see what everyone sees. Staff read
full precision in the admin only (the one exception, staff-only by the admin
site itself). Public splits show everything, at full precision.

Values are fractions (0..1) as stored; the site shows them in percent
(:func:`format_released`), and machine-readable surfaces say so
(:data:`SCORES_ARE`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from leaderboard.models import Split

from .models import Result, ResultPart

# --- the information budget, as data ----------------------------------------------------------------


@dataclass(frozen=True)
class Feature:
    """One kind of number a page, an export or the API may show, and whether a hidden split shows it."""

    name: str
    hidden: bool  # shown on a hidden split (then on the grid, and only for a run the Ladder released)
    why: str  # one line for docs/security.md's table


BUDGET: dict[str, Feature] = {f.name: f for f in (
    Feature("primary_measure", True, "the Ladder's measure, on the 1/N grid, for runs the Ladder released"),
    Feature("other_measures", False, "a second released mean is a second equation on the same per-query values"),
    Feature("per_query", False, "one topic's value is its judgments"),
    Feature("curves", False, "recall curves and histograms are per-query facts, one point per rank or bin"),
    Feature("categories", False, "a crafted run scores 0 outside one category: its mean is one topic"),
    Feature("relevant_buckets", False, "groups by the number of relevant documents count the judgments"),
    Feature("bootstrap", False, "a seeded interval's endpoints are exact equations on per-query values"),
    Feature("judged_at_k", False, "which retrieved documents are judged is the qrels"),
    Feature("overlap", False, "top-k overlaps with other runs are per-query facts"),
    Feature("qrels_warnings", False, "unknown or missing topics say which topics are judged"),
    Feature("p_values", False, "a p-value's digits carry the sum of squared per-query differences"),
    Feature("p_bands", True, "p < 0.01, p < 0.05 or p ≥ 0.05 on the primary measure: about one bit"),
    Feature("version_deltas", False, "before/after values of one changed judgment tell the judgment"),
)}


def shows(split: Split, feature: str) -> bool:
    """Whether ``split``'s pages, exports and API show ``feature`` (a key of :data:`BUDGET`)."""
    return not split.hidden or BUDGET[feature].hidden


def hidden(split: Split) -> bool:
    """Whether ``split`` is held to the budget (its labels are hidden): the one display reading of ``Split.hidden``."""
    return bool(split.hidden)


# --- the grid ----------------------------------------------------------------------------------------

#: What machine-readable scores are: the JSON exports and the API name the unit next to the numbers.
SCORES_ARE = "fractions (0..1); the site shows them in percent (× 100)"
#: The range of every retrieval measure and of macro-F1 (fractions).
MEASURE_RANGE = 1.0
#: Where the grid is explained (the link the board and the messages give).
GRID_DOCS = "/docs/metrics/#hidden-split-grid"
LADDER_DOCS = "/docs/metrics/#the-ladder"


def nice_step(minimum: float) -> float:
    """The smallest of 1, 2, 5 × 10^k that is at least ``minimum`` (> 0)."""
    k = math.floor(math.log10(minimum))
    for exponent in (k, k + 1):
        for mantissa in (1, 2, 5):
            step = round(mantissa * 10.0 ** exponent, 12)
            if step >= minimum * (1 - 1e-12):
                return step
    return 10.0 ** (k + 1)  # unreachable: 1 × 10^(k+1) > minimum


def step_for(n_topics: int, measure_range: float = MEASURE_RANGE) -> float:
    """The grid of a mean over ``n_topics``: the smallest nice step ≥ range / N (the whole range when N is 0)."""
    return nice_step(measure_range / max(1, int(n_topics)))


def grid_step(split: Split, measure: str | None = None, *, n_topics: int | None = None) -> float | None:
    """The step a released value of ``measure`` sits on: None (full precision) on a public split.

    ``n_topics`` is the N of the released scope (a result's ``n_queries``); when not given, the topics of
    the split's current judgments (an upper bound of N, so the finest step a page may state as ±).
    """
    if not split.hidden:
        return None
    return step_for(n_topics if n_topics is not None else _split_topics(split))


def _split_topics(split: Split) -> int:
    version = split.current_qrels
    return version.n_topics if version is not None else 0


def on_grid(value: float, step: float) -> float:
    """``value`` to the nearest multiple of ``step`` (halves up), as a clean float."""
    decimals = max(0, -math.floor(math.log10(step))) + 1
    return round(math.floor(float(value) / step + 0.5) * step, decimals)


def result_released(result: Result | ResultPart | None, *, split: Split) -> TypeGuard[Result]:
    """Whether a view may show ``result``'s numbers: always on a public split; on a hidden one if the Ladder did."""
    return result is not None and (not split.hidden or bool(getattr(result, "released", True)))


def released_measures(split: Split) -> list[str]:
    """The measures a split shows: all of its dataset's on a public split, the primary one on a hidden split."""
    dataset = split.dataset
    if split.hidden:
        return [dataset.primary_measure] if dataset.primary_measure else []
    return list(dataset.measures or [])


def scores_shown(scores: Mapping[str, Any] | None, *, split: Split, n_topics: int | None = None
                 ) -> dict[str, float | None]:
    """Stored scores as every surface shows them: public splits in full; hidden splits primary-only, on the grid.

    The caller has checked :func:`result_released` (or passes a row the board already filtered).
    """
    out = {k: (float(v) if v is not None else None) for k, v in (scores or {}).items()}
    if not split.hidden:
        return out
    step = step_for(n_topics if n_topics is not None else _split_topics(split))
    keep = set(released_measures(split))
    return {k: (on_grid(v, step) if v is not None else None) for k, v in out.items() if k in keep}


def released_scores(result: Result | ResultPart | None, *, split: Split, viewer: Any = None
                    ) -> dict[str, float | None]:
    """Every score of ``result`` that ``viewer`` may read, as fractions: {} when the Ladder kept it back.

    ``viewer`` is accepted for the surfaces' sake and changes nothing: on a hidden
    split the owner is the attacker, so owners see what everyone sees.
    """
    if not result_released(result, split=split):
        return {}
    return scores_shown(result.scores, split=split, n_topics=result.n_queries or None)


def released_primary(result: Result | ResultPart | None, *, split: Split) -> float | None:
    """The primary score as released (None when not released)."""
    return released_scores(result, split=split).get(split.dataset.primary_measure)


def budget_scores(scores: Mapping[str, Any] | None, *, split: Split, n_topics: int | None = None
                  ) -> dict[str, float | None]:
    """Alias of :func:`scores_shown` under the name the surfaces used before this module."""
    return scores_shown(scores, split=split, n_topics=n_topics)


# --- how a released value reads ---------------------------------------------------------------------


def decimals_of(step: float | None) -> int:
    """Decimals a percent value on ``step`` needs (2 at full precision)."""
    if step is None:
        return 2
    return max(0, -math.floor(math.log10(100 * step) + 1e-9))


def format_released(value: float | None, *, split: Split, n_topics: int | None = None) -> str:
    """A released fraction in percent at the precision its split stands for ("82", "82.5", "51.33"); "–" if none."""
    if value is None:
        return "–"
    step = grid_step(split, n_topics=n_topics)
    if step is None:
        return f"{100 * float(value):.2f}"
    return f"{100 * on_grid(value, step):.{decimals_of(step)}f}"


def points(step: float) -> str:
    """A step in percentage points, for people ("1 point", "0.5 points")."""
    value = f"{100 * step:g}"
    return f"{value} point" + ("" if value == "1" else "s")


def grid_note(split: Split, *, n_topics: int | None = None) -> str:
    """What the board says next to a hidden split's values ("±0.5 points: hidden split"); "" on public splits."""
    step = grid_step(split, n_topics=n_topics)
    if step is None:
        return ""
    return f"±{points(step / 2)}: hidden split"


# --- p-values ---------------------------------------------------------------------------------------

P_BANDS = ((0.01, "p < 0.01"), (0.05, "p < 0.05"))
P_NOT_SIGNIFICANT = "p ≥ 0.05"


def p_band(p: float | None) -> str:
    """A p-value as a hidden split shows it: "p < 0.01", "p < 0.05" or "p ≥ 0.05" ("" when there is none)."""
    if p is None or p != p:
        return ""
    for bound, label in P_BANDS:
        if p < bound:
            return label
    return P_NOT_SIGNIFICANT
