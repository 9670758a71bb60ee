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
  so a release tells which grid value the sum falls on (at most log2 of the grid's values; with every
  other topic known exactly, the hit count of whole-range probes), not the value of each probe;
* p-values on a hidden split are bands (:func:`p_band`), never digits;
* the features of :data:`BUDGET` marked public-only are not shown at all;
* a URL shows what :data:`INFORMATION_BUDGET` says it does about a hidden split, and a URL it does not name
  shows nothing derived from the hidden qrels.

The owner of a run is the attacker: owners see what everyone sees. Staff read
full precision in the admin only (the one exception, staff-only by the admin
site itself). Public splits show everything, at full precision.

Values are fractions (0..1) as stored; the site shows them in percent
(:func:`format_released`), and machine-readable surfaces say so
(:data:`SCORES_ARE`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from django.core.cache import cache
from django.db.models import Max, Min

from catalogue.models import Dataset, QrelsVersion, Split
from catalogue.page_generation import CacheKind, cache_key
from evaluation.ladder import (
    MEASURE_RANGE as MEASURE_RANGE,  # the skeleton's names, kept for its callers
    grid_decimals,
    macro_f1_step,
    nice_step as nice_step,
    on_grid,
    percent_text,
    step_for,
)

from .ledger_models import WAITING_FOR_BUDGET, WAITING_NOTE
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
    Feature("judgment_counts", True, "judgments per qrels version, added, regraded: to two digits, under 10 as a band"),
)}


def shows(split: Split, feature: str) -> bool:
    """Whether ``split``'s pages, exports and API show ``feature`` (a key of :data:`BUDGET`)."""
    return not split.hidden or BUDGET[feature].hidden


@dataclass(frozen=True)
class UrlBudget:
    """What one URL of the site shows about a hidden split: the row of docs/security.md's budget table it is in."""

    view: str  # the docs' view: a path (or a file's name) in the first cell of its row of docs/security.md's table
    reveals: str  # what it shows about a hidden split, in one line


#: Every URL (its name, ``namespace:name``) that shows anything about a hidden split, and what. A URL not named
#: here shows no value derived from the hidden qrels (accounts, the docs, the schema): the access matrix
#: (tests/robustness/test_access_matrix.py) holds every URL to it, and docs/security.md's table has a row for each
#: view named here.
INFORMATION_BUDGET: dict[str, UrlBudget] = {
    "leaderboard:dataset": UrlBudget("/d/<slug>/", "released rows, means rounded to the display precision, markers"),
    "leaderboard:export": UrlBudget("/d/<slug>/export", "the same released rows, rounded"),
    "api:leaderboard": UrlBudget("/api/v1/datasets/<slug>/leaderboard", "the same released rows, rounded"),
    "leaderboard:home": UrlBudget("/d/<slug>/", "the best released row per dataset, rounded"),
    "leaderboard:benchmark": UrlBudget("/d/<slug>/", "released rows, rounded"),
    "participants:detail": UrlBudget("/submissions/<id>/", "a released run's rounded means, large categories; "
                                                           "else the Ladder's message"),
    "participants:status": UrlBudget("status.json", "the status and the Ladder's message, no value"),
    "api:submission": UrlBudget("/api/v1/submissions/<id>/", "rounded scores of a released run, released, message"),
    "api:submissions": UrlBudget("/api/v1/submissions/<id>/", "the same per submission (?mine=1)"),
    "participants:mine": UrlBudget("/submissions/mine/", "the primary score of released runs, rounded"),
    "participants:compare": UrlBudget("/submissions/compare/", "released entries only: rounded means and difference, "
                                                               "coarse p-values, no wins/ties/losses, no overlap"),
    "api:compare": UrlBudget("/api/v1/compare/", "the same for two entries"),
    "participants:fusion": UrlBudget("/submissions/fusion/", "the runs one may fuse (released ones of others), no "
                                                             "value"),
    "api:fusions": UrlBudget("/submissions/fusion/", "a fusion is a new submission under every rule"),
    "participants:per_query_csv": UrlBudget("per-query.csv", "404 on a hidden split"),
    "api:datasets": UrlBudget("/api/v1/datasets/", "constants of the split (number of topics)"),
    "leaderboard:task": UrlBudget("/tasks/<id>/", "a team's runs with their public-part scores (members); the "
                                                  "private board's snapshot after the reveal"),
    "leaderboard:board_export": UrlBudget("/tasks/<id>/private-board", "the private board's snapshot, rounded"),
}


#: On hidden splits no group below this size is shown, whatever a curator sets: a group of one query is
#: that query's value.
HIDDEN_GROUP_FLOOR = 5


def min_group_size(split: Split) -> int:
    """The smallest group (category, bucket, language) whose mean may be shown on this split."""
    return max(HIDDEN_GROUP_FLOOR, int(split.dataset.category_min_queries)) if split.hidden else 1


def hidden(split: Split) -> bool:
    """Whether ``split`` is held to the budget (its labels are hidden): the one display reading of ``Split.hidden``."""
    return bool(split.hidden)


# --- the grid ----------------------------------------------------------------------------------------

#: What machine-readable scores are: the JSON exports and the API name the unit next to the numbers.
SCORES_ARE = "fractions (0..1); the site shows them in percent (× 100)"
#: Where the grid is explained (the link the board and the messages give).
GRID_DOCS = "/docs/metrics/#hidden-grid"
LADDER_DOCS = "/docs/metrics/#ladder"


def grid_step(split: Split, measure: str | None = None, *, n_topics: int | None = None) -> float | None:
    """The step a released value of ``measure`` sits on, as the board, the exports and the API state it: None
    (full precision) on a public split, and None on a hidden split with no evaluated topic yet (no judgments: a
    card's board before its qrels), which has no value to show and so no grid to state ("±50 points" would be
    one topic's share of no topic).

    ``n_topics`` is the N of a released scope of its own (a compare page's topics, the private part); by
    default the split's step: the coarsest step its results on the current judgments were released on
    (:func:`release_step`, stored with each result), else one topic's share of the judged topics.
    Every measure of a retrieval or classification dataset ranges over 0..1, so ``measure`` changes nothing
    today; it is part of the signature for a measure of another range.
    """
    if not split.hidden:
        return None
    if n_topics is not None:
        return step_for(n_topics)
    if evaluated_topics(split) == 0:
        return None
    return split_step(split)


def rounding_step(split: Split, *, n_topics: int | None = None) -> float | None:
    """The step a hidden split's values are put on before they are printed: :func:`grid_step`, and on a split with
    no evaluated topic (no grid stated) still the coarsest one, the whole range, so that no value is ever printed
    finer than its split releases. None on a public split."""
    if not split.hidden:
        return None
    if n_topics is not None:
        return step_for(n_topics)
    return split_step(split)


def split_step(split: Split) -> float:
    """The grid of ``split``'s released values: the largest step stored with a released result on its judgments.

    Only results the Ladder released count: a withheld run shows nothing, so it does not move the grid either (its
    evaluated-topic count is a fact of its own, which would otherwise show on the board as the grid's step).

    Cached under the split's ``cache_version`` (every new score and qrels version bumps it). Without a stored
    step (no result judged yet), one topic's share of :func:`evaluated_topics`.
    """
    if split.current_qrels_id is None:
        return step_for(0)
    key = cache_key(CacheKind.DISCLOSURE_STEP, split=split)
    step = cache.get(key)
    if step is None:
        step = (Result.objects.filter(submission__split_id=split.pk, qrels_version_id=split.current_qrels_id,
                                      n_queries__gt=0, released=True).aggregate(s=Max("released_step"))["s"]
                or step_for(evaluated_topics(split)))
        cache.set(key, step, 24 * 60 * 60)
    return float(step)


def release_step(*, n_topics: int, label_supports: Iterable[int] | None = None, min_predicted: int = 1) -> float:
    """The grid of one result's released values: what one topic (or one example's label) can move its mean.

    A mean over N topics: one topic's share, 1/N (:func:`evaluation.ladder.step_for`). Macro-F1 of a
    classification split (``label_supports``: each gold label's count of examples; ``min_predicted``: the
    fewest examples a released file predicts a label on): one example moves it by up to about
    2 / (L × (smallest support + min_predicted)) per label it touches, far more than 1/N for a rare label
    (:func:`evaluation.ladder.macro_f1_step`).
    """
    if label_supports is not None:
        return macro_f1_step(n_examples=n_topics, supports=label_supports, min_predicted=min_predicted)
    return step_for(n_topics)


def release_of(primary: float | None, *, step: float) -> float | None:
    """The released value of a primary score on ``step``: the one computation, stored once per result.

    The Ladder's verdict stores it (``Result.released_score``, ``services.ladder.ladder_judge``) and compares
    the stored values; every surface shows the stored value (:func:`released_primary`).
    """
    return None if primary is None else on_grid(primary, step)


def stored_release(result: Result | ResultPart, *, split: Split) -> tuple[float | None, float]:
    """(released primary value, its step) of ``result``: as stored at the Ladder's verdict.

    A row judged before the value was stored (or a shared task's part, which no page shows) is put on the
    split's grid by :func:`release_of`, the same computation.
    """
    value, step = getattr(result, "released_score", None), getattr(result, "released_step", None)
    if value is not None and step is not None:
        return float(value), float(step)
    step = split_step(split) if split.hidden else step_for(result.n_queries or 0)
    return release_of(result.primary_score, step=step), step


def evaluated_topics(split: Split) -> int:
    """N of a hidden split's released scope: the topics its released means average over.

    The fewest evaluated topics of any released result on the split's current judgments (a shared task's public part
    while it runs; for classification, the examples), else the judged topics of those judgments. Cached
    under the split's ``cache_version``, which every new score and every new qrels version bumps.
    """
    if split.current_qrels_id is None:
        return 0
    key = cache_key(CacheKind.DISCLOSURE_N, split=split)
    n = cache.get(key)
    if n is None:
        n = (Result.objects.filter(submission__split_id=split.pk, qrels_version_id=split.current_qrels_id,
                                   n_queries__gt=0, released=True).aggregate(n=Min("n_queries"))["n"]
             or QrelsVersion.objects.filter(pk=split.current_qrels_id).values_list("n_topics", flat=True).first()
             or 0)
        cache.set(key, n, 24 * 60 * 60)
    return int(n)


def result_released(result: Result | ResultPart | None, *, split: Split) -> TypeGuard[Result]:
    """Whether a view may show ``result``'s numbers: always on a public split; on a hidden one if the Ladder did."""
    return result is not None and (not split.hidden or bool(getattr(result, "released", True)))


def released_measures(split: Split) -> list[str]:
    """The measures a split shows: all of its dataset's on a public split, the primary one on a hidden split."""
    dataset = split.dataset
    if split.hidden:
        return [dataset.primary_measure] if dataset.primary_measure else []
    return list(dataset.measures or [])


def scores_shown(scores: Mapping[str, Any] | None, *, split: Split, n_topics: int | None = None,
                 measures: Iterable[str] | None = None) -> dict[str, float | None]:
    """Stored scores as every surface shows them: public splits in full; hidden splits primary-only, on the grid.

    The caller has checked :func:`result_released` (or passes a row the board already filtered).
    ``measures``: the measures a hidden split shows here instead of :func:`released_measures` (a shared
    task's reveal shows them all, still on the grid).
    """
    out = {k: (float(v) if v is not None else None) for k, v in (scores or {}).items()}
    if not split.hidden:
        return out
    step = step_for(n_topics if n_topics is not None else evaluated_topics(split))
    keep = set(released_measures(split) if measures is None else measures)
    return {k: (on_grid(v, step) if v is not None else None) for k, v in out.items() if k in keep}


def released_value(value: float, *, split: Split, n_topics: int | None = None) -> float:
    """One value as a split releases it: on the grid of a hidden split, as stored on a public one."""
    step = rounding_step(split, n_topics=n_topics)
    return float(value) if step is None else on_grid(value, step)


def result_grid(result: Result | ResultPart | None, *, split: Split) -> float | None:
    """The step ``result``'s released values sit on (its stored one); the split's without a result; None when public."""
    if not split.hidden:
        return None
    return stored_release(result, split=split)[1] if result is not None else split_step(split)


def result_scores_shown(result: Result | ResultPart, *, split: Split, measures: Iterable[str] | None = None
                        ) -> dict[str, float | None]:
    """``result``'s stored scores as every surface shows them (:func:`scores_shown`), its primary measure on a
    hidden split the value stored at the Ladder's verdict and the others on that value's step.

    The caller has checked :func:`result_released` (or passes a row the board already filtered).
    """
    if not split.hidden:
        return scores_shown(result.scores, split=split)
    value, step = stored_release(result, split=split)
    keep = set(released_measures(split) if measures is None else measures)
    out = {k: (on_grid(float(v), step) if v is not None else None) for k, v in (result.scores or {}).items()
           if k in keep}
    primary = split.dataset.primary_measure
    if primary in out:
        out[primary] = value
    return out


def released_scores(result: Result | ResultPart | None, *, split: Split, viewer: Any = None
                    ) -> dict[str, float | None]:
    """Every score of ``result`` that ``viewer`` may read, as fractions: {} when the Ladder kept it back.

    ``viewer`` is accepted for the surfaces' sake and changes nothing: on a hidden
    split the owner is the attacker, so owners see what everyone sees.
    """
    if not result_released(result, split=split):
        return {}
    return result_scores_shown(result, split=split)


def released_primary(result: Result | ResultPart | None, *, split: Split) -> float | None:
    """The primary score as released (None when not released)."""
    return released_scores(result, split=split).get(split.dataset.primary_measure)


# --- how a released value reads ---------------------------------------------------------------------


#: Decimals a percent value on ``step`` needs (2 at full precision): ``evaluation.ladder.grid_decimals``.
decimals_of = grid_decimals


def format_released(value: float | None, *, split: Split, n_topics: int | None = None) -> str:
    """A released fraction in percent at the precision its split stands for ("82", "82.5", "51.33"); "–" if none.

    The one formatting, :func:`evaluation.ladder.percent_text`, on the split's step (:func:`rounding_step`).
    """
    return percent_text(value, rounding_step(split, n_topics=n_topics))


def formatter(split: Split | None, *, step: float | None = None) -> Callable[[float | None], str]:
    """``format_released`` for one split, its step looked up once: what a table of the split's values calls.

    ``step``: a board's own stated grid (the private board's, its private topics' share) instead of the split's.
    No split (a suite's reported-only column): full precision.
    """
    if step is None and split is not None:
        step = rounding_step(split)
    return lambda value: percent_text(value, step)


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


# --- counts -----------------------------------------------------------------------------------------

#: Below this a hidden split's count of judgments is a band, not a number.
COUNT_BAND = 10


def count_shown(n: int | None, *, split: Split) -> str:
    """A count of judgments (a qrels version's, or what it added or regraded) as ``split`` shows it.

    Public splits: the number. Hidden splits: "fewer than 10" below 10 and two significant digits above
    ("about 780"), so that a version adding or regrading one judgment is not told apart from one adding
    nine, and the totals of two versions do not difference to one judgment.
    """
    if n is None:
        return "–"
    if not split.hidden:
        return f"{n:,}"
    if n < COUNT_BAND:
        return f"fewer than {COUNT_BAND}"
    return f"about {count_released(n, split=split):,}"


def count_released(n: int, *, split: Split) -> int:
    """A count of judgments as a number that :func:`count_shown` writes as it writes ``n``: ``n`` on a public
    split; on a hidden one 0 below the band and two significant digits above (what a benchmark archive carries
    in clear, ``snapshots/archive/released.py``)."""
    if not split.hidden:
        return int(n)
    if n < COUNT_BAND:
        return 0
    digits = len(str(int(n))) - 2
    return round(int(n), -digits) if digits > 0 else int(n)


def evaluated_count(result: Result | ResultPart | None, *, split: Split, partitioned: bool) -> int | None:
    """The evaluated topics (or examples) a page names beside a result's values; None when it names none.

    While a shared task partitions a hidden split (``partitioned``) the result holds its public part, whose
    evaluated count beside the split's (public) one would give the private part's by difference.
    """
    if result is None:
        return None
    return topic_count_shown(int(result.n_queries), split=split, partitioned=partitioned)


def topic_count_shown(n: int, *, split: Split, partitioned: bool) -> int | None:
    """A count of evaluated topics as any page names it (``evaluated_count``'s rule for a count computed elsewhere:
    per-query vectors, a power analysis); None while a shared task partitions the hidden split."""
    if split.hidden and partitioned:
        return None
    return int(n)


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


# --- messages and warnings --------------------------------------------------------------------------


def ladder_grid(step: float) -> Callable[[float], float]:
    """Where the Ladder puts a mean it has no stored release for (a first run's free reference): on ``step``,
    by :func:`release_of`, as the stored values are."""
    return lambda value: on_grid(value, step)


def ladder_format(split: Split, *, step: float | None = None) -> Callable[[float], str]:
    """A value in a Ladder message, in the site's unit: "R@100 82 %" on a whole-point grid (``step``: the
    judged result's, by default the split's)."""
    measure = split.dataset.primary_measure
    show = formatter(split, step=step)
    return lambda value: f"{measure} {show(value)} %"


def ladder_rule(split: Split) -> str:
    """The rule a run held back by the Ladder was held to, with where it is explained (appended to its message)."""
    units = "examples" if split.dataset.task != Dataset.Task.RETRIEVAL else "topics"
    return (f"The Ladder's rule: {units} better minus {units} worse on {split.dataset.primary_measure}, plus noise, "
            f"over a margin (the verdict is not exact), and the value up a step "
            f"({points(grid_step(split) or step_for(0))}): {LADDER_DOCS}")


#: The longest message a result stores (``Result.ladder_message``).
MESSAGE_MAX = 300


def with_ladder_rule(message: str, *, split: Split) -> str:
    """A held-back run's message with the rule it was held to and the docs' address, when it fits the field."""
    full = f"{message} {ladder_rule(split)}"
    return full if len(full) <= MESSAGE_MAX else f"{message} The Ladder: {LADDER_DOCS}"[:MESSAGE_MAX]

#: What others read about a run the Ladder did not release (its message names the owner's best).
NOT_RELEASED = "Not released: not a significant improvement over its owner's best on this hidden split."
#: What others read about a run the Ladder released (its message names the owner's previous best).
RELEASED = "Released: a significant improvement over its owner's earlier results on this hidden split."


def ladder_note(result: Result | None, *, split: Split, is_owner: bool) -> str:
    """What a hidden split's Ladder says about ``result``: its message to the owner, a bare fact to others.

    The owner's message names their best, which may be a private entry's score: others never read it.
    """
    if result is None or not split.hidden or not result.ladder_message:
        return ""
    if is_owner:
        return result.ladder_message
    if not result.released:
        return WAITING_NOTE if result.ladder_message.startswith(WAITING_FOR_BUDGET) else NOT_RELEASED
    return RELEASED if result.ladder_message.startswith("Released") else result.ladder_message


#: Warnings that count against the qrels (which topics are judged, which have a relevant document) or the
#: gold (how many of its labels a file never predicts: which labels the hidden split holds): facts about the
#: hidden labels, so a hidden split never shows them (the budget's ``qrels_warnings``).
QRELS_WARNINGS = frozenset({"unknown_queries", "missing_queries", "empty_queries_counted", "never_predicted"})


def budget_warnings(warnings: list[dict] | None, *, split: Split) -> list[dict]:
    """A submission's warnings as they may be shown: on a hidden split, the facts about the file only."""
    if shows(split, "qrels_warnings"):
        return list(warnings or [])
    return [w for w in (warnings or []) if w.get("code") not in QRELS_WARNINGS]
