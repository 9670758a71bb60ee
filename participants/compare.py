"""Comparing two or more submissions of one split, query by query.

Each submission after the first is compared with the first (the reference)
on every measure: the difference of the means, the paired randomization test
(10,000 seeded sign flips, exact for few queries) and the paired t-test from
:mod:`evaluation.stats`, Holm–Bonferroni over all the comparisons on the page,
wins/ties/losses over queries, and, on splits whose labels are public,
per-category differences and how much the top 10 documents of the two runs overlap. Per-query values (the scatter plot)
only on dev and train splits; on hidden splits only aggregates leave here, and only what
:mod:`submissions.disclosure` releases: the primary measure (the Ladder's), its means on the split's grid, and the
randomization test as a band ("p < 0.01", "p < 0.05", "p ≥ 0.05"), never a p-value's digits (a t-test p carries
the sum of squared per-query differences, an equation the means do not give) nor a t-test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.core.cache import cache

from catalogue.models import Dataset
from catalogue.page_generation import CacheKind, cache_key
from evaluation.runs import read_run
from evaluation.stats import holm, paired_ttest, randomization_test, randomization_tests
from lexboard.converters import MAX_ID
from presentation import plots
from submissions import disclosure
from submissions.disclosure import min_group_size, result_released
from submissions.models import Result, Submission
from submissions.selectors import load_per_query, partition_in_use, submission_current_result

from .analysis import _topics, category_table, per_query_allowed

N_RESAMPLES = 10_000
SEED = 0
ALPHA = 0.05
MAX_SUBMISSIONS = 6
OVERLAP_K = 10
TIE_TOLERANCE = 1e-12


class CompareRefused(Exception):
    """The submissions cannot be compared; the message says why and what to do."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass
class Scored:
    """A submission with its current result and per-query arrays."""

    submission: Submission
    result: Result
    vectors: dict[str, np.ndarray]

    @property
    def qids(self) -> list[str]:
        return [str(q) for q in self.vectors.get("qids", [])]


@dataclass
class PairStats:
    """One submission against the reference on one measure."""

    measure: str
    mean_a: float
    mean_b: float
    p_randomization: float
    p_ttest: float
    wins: int  # queries where a is better than b
    ties: int
    losses: int  # queries where b is better
    p_randomization_holm: float = 1.0
    p_ttest_holm: float = 1.0

    @property
    def difference(self) -> float:
        return self.mean_b - self.mean_a


def pair_stats(a: np.ndarray, b: np.ndarray, *, measure: str, n_resamples: int = N_RESAMPLES,
               seed: int = SEED, p_randomization: float | None = None) -> PairStats:
    """Means, p-values, and wins/ties/losses of ``a`` over ``b`` (aligned per-query vectors).

    ``p_randomization``: the randomization test's p-value when the caller
    already has it from a batch (:func:`randomization_p_values`), else it is computed here.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    diff = a - b
    if p_randomization is None:
        p_randomization = randomization_test(a, b, n_resamples=n_resamples, seed=seed)
    return PairStats(
        measure=measure,
        mean_a=float(a.mean()) if len(a) else 0.0,
        mean_b=float(b.mean()) if len(b) else 0.0,
        p_randomization=p_randomization,
        p_ttest=paired_ttest(a, b),
        wins=int(np.count_nonzero(diff > TIE_TOLERANCE)),
        ties=int(np.count_nonzero(np.abs(diff) <= TIE_TOLERANCE)),
        losses=int(np.count_nonzero(diff < -TIE_TOLERANCE)),
    )


def randomization_p_values(pairs: list[tuple[np.ndarray, np.ndarray]], *, n_resamples: int = N_RESAMPLES,
                           seed: int = SEED) -> list[float]:
    """``randomization_test(a, b)`` of each (a, b) pair, in one batch: the seeded flips are drawn once for all.

    The vectors must all have the same length (one value per query of the split).
    """
    if not pairs:
        return []
    return randomization_tests(np.stack([a for a, _ in pairs]), np.stack([b for _, b in pairs]),
                               n_resamples=n_resamples, seed=seed).tolist()


def top_k_overlap(run_a: dict[str, list[str]], run_b: dict[str, list[str]], *, k: int = OVERLAP_K,
                  qids: list[str] | None = None) -> dict[str, float | int]:
    """Mean over queries of |A∩B| / k (overlap@k) and |A∩B| / |A∪B| (Jaccard) of the two top-k lists.

    ``run_*`` map qid → docids in rank order. Queries: ``qids`` (e.g. the
    evaluated ones), else those of either run; a query one run lacks
    contributes 0.
    """
    queries = qids if qids is not None else sorted(set(run_a) | set(run_b))
    overlaps, jaccards = [], []
    for q in queries:
        a, b = set(run_a.get(q, [])[:k]), set(run_b.get(q, [])[:k])
        inter = len(a & b)
        union = len(a | b)
        overlaps.append(inter / k)
        jaccards.append(inter / union if union else 1.0)
    return {
        "k": k,
        "n_queries": len(queries),
        "overlap": float(np.mean(overlaps)) if overlaps else 0.0,
        "jaccard": float(np.mean(jaccards)) if jaccards else 0.0,
    }


def _top_docs(submission: Submission, k: int) -> dict[str, list[str]]:
    """qid → the top ``k`` docids of the submission's run, in the leaderboard's order (cached: files never change)."""
    key = cache_key(CacheKind.TOP_K, submission.pk, submission.sha256, k)
    cached = cache.get(key)
    if cached is not None:
        return cached
    with submission.run_file.open("rb") as fh:
        run = read_run(fh, name=submission.original_name or "run")
    top = {q: [d for d, _ in docs[:k]] for q, docs in run.ranked().items()}
    cache.set(key, top, 7 * 24 * 60 * 60)
    return top


def load_scored(submissions: list[Submission]) -> list[Scored]:
    """Each submission with its current result; refuses unscored ones, different qrels versions and,
    on a hidden split, results the Ladder did not release."""
    out = []
    for sub in submissions:
        result = submission_current_result(submission=sub) if sub.status == Submission.Status.SCORED else None
        if result is None:
            raise CompareRefused(f"#{sub.pk} ({sub.system_name}) is not scored yet ({sub.status}); "
                                 "compare it once it is scored.")
        if not result_released(result, split=sub.split):
            raise CompareRefused(f"#{sub.pk} ({sub.system_name}) was not released on this hidden split (it is not a "
                                 "significant improvement over its owner's best); only released entries can be "
                                 "compared here.")
        out.append(Scored(submission=sub, result=result, vectors=load_per_query(result)))
    versions = {s.result.qrels_version_id for s in out}
    if len(versions) > 1:
        raise CompareRefused("These submissions were scored on different versions of the relevance judgments; "
                             "compare them once the rescoring on the current judgments has finished.")
    return out


def check_task(dataset: Dataset) -> None:
    """Refuse datasets whose entries store no per-example values (classification, NER): nothing to pair."""
    if dataset.task != Dataset.Task.RETRIEVAL:
        raise CompareRefused(
            f"Comparison of per-query values is for retrieval datasets; {dataset.name} is a "
            f"{dataset.get_task_display()} dataset, whose entries store no per-example values. "
            "Compare their scores on the leaderboard.")


def check_comparable(submissions: list[Submission]) -> None:
    """Two to ``MAX_SUBMISSIONS`` distinct submissions of one split, else :class:`CompareRefused`."""
    if len(submissions) < 2:
        raise CompareRefused("Choose at least two submissions to compare (e.g. ?ids=12,15).")
    if len(submissions) > MAX_SUBMISSIONS:
        raise CompareRefused(f"Compare at most {MAX_SUBMISSIONS} submissions at a time.")
    if len({s.pk for s in submissions}) != len(submissions):
        raise CompareRefused("The same submission is named twice; choose different ones.")
    splits = {s.split_id for s in submissions}
    if len(splits) > 1:
        raise CompareRefused("Only submissions to the same dataset split can be compared "
                             f"(these are to {', '.join(sorted({str(s.split) for s in submissions}))}).")
    check_task(submissions[0].split.dataset)


@dataclass
class Comparison:
    """Everything the compare page shows."""

    split: object
    entries: list[Scored]
    measures: list[str]
    focus: str
    pairs: list[dict] = field(default_factory=list)  # one per other entry: {"entry", "stats": [PairStats], ...}
    n_comparisons: int = 0
    bands: bool = False  # p-values shown as bands only (a hidden split)
    #: The evaluated queries the page names; None during a shared task (``disclosure.topic_count_shown``).
    n_queries: int | None = None


def compare(*, submissions: list[Submission], measure: str | None = None,
            overlap: bool = True) -> Comparison:
    """Compare ``submissions[1:]`` with ``submissions[0]`` on every measure of the dataset.

    ``measure`` (default: the primary one) is the one of the per-category
    table and the scatter plot. Holm–Bonferroni runs over all (entry, measure)
    comparisons, once for the randomization p-values and once for the t-tests.
    """
    check_comparable(submissions)
    split = submissions[0].split
    dataset = split.dataset
    focus = measure or dataset.primary_measure
    if focus not in (dataset.measures or []):
        raise CompareRefused(f"{dataset.name} has no measure {focus!r}; choose one of: {', '.join(dataset.measures)}.")
    entries = load_scored(submissions)
    ref = entries[0]
    shown = disclosure.released_measures(split)  # a hidden split: the primary measure only
    if focus not in shown:
        focus = dataset.primary_measure
    measures = [m for m in shown if all(m in e.vectors for e in entries)]
    if not measures or any(e.qids != ref.qids for e in entries):
        raise CompareRefused("The stored per-query values of these submissions do not cover the same queries; "
                             "a curator can rescore the split to fix this.")
    fmt: Callable[[float | None], str] = (dataset.format_value if disclosure.shows(split, "p_values")
                                          else disclosure.formatter(split))  # a hidden split's released precision
    topics = _topics(split)
    categories = {q: c for q, (c, _) in topics.items()}
    min_queries = min_group_size(split)
    allowed = per_query_allowed(split)

    # Every (entry, measure) randomization test at once: 5 entries × 8 measures cost about what one does.
    p_values = iter(randomization_p_values([(ref.vectors[m], other.vectors[m]) for other in entries[1:]
                                            for m in measures]))
    pairs: list[dict[str, Any]] = []
    all_stats: list[PairStats] = []
    for other in entries[1:]:
        stats = [pair_stats(ref.vectors[m], other.vectors[m], measure=m, p_randomization=next(p_values))
                 for m in measures]
        all_stats += stats
        diff = {focus: np.asarray(other.vectors[focus]) - np.asarray(ref.vectors[focus])}
        # Hidden split: no category. Two released runs of one participant may differ in five queries, four
        # in one category and one in another: that category's difference is one query's (docs/security.md).
        cat_rows, n_hidden = ([], 0) if not disclosure.shows(split, "categories") else category_table(
            qids=ref.qids, categories=categories, vectors=diff, measures=[focus], min_queries=min_queries)
        pair: dict[str, Any] = {
            "entry": other,
            "stats": stats,
            "categories": [{"label": r.label, "n": r.n_queries, "delta": r.means[focus]} for r in cat_rows],
            "n_hidden_categories": n_hidden,
            "overlap": None,
            "scatter_svg": "",
        }
        # Top-k overlap is a per-query comparison of documents: public splits only (docs/security.md).
        if overlap and disclosure.shows(split, "overlap"):
            try:
                pair["overlap"] = top_k_overlap(_top_docs(ref.submission, OVERLAP_K),
                                                _top_docs(other.submission, OVERLAP_K), qids=ref.qids)
            except Exception:  # a missing or unreadable file must not take the page down
                pair["overlap"] = None
        if allowed:
            a, b = ref.vectors[focus], other.vectors[focus]
            # In the site's unit, percent (the tables beside it): 0 to 100 on both axes.
            pair["scatter_svg"] = plots.scatter(
                list(zip((100 * np.asarray(a, dtype=float)).tolist(), (100 * np.asarray(b, dtype=float)).tolist(),
                         strict=True)),
                labels=ref.qids,
                title=f"Per-query {focus}: #{ref.submission.pk} against #{other.submission.pk}",
                desc=(f"One dot per query ({len(ref.qids)}). Horizontal: {ref.submission.system_name} "
                      f"(#{ref.submission.pk}); vertical: {other.submission.system_name} (#{other.submission.pk}). "
                      f"Dots above the diagonal are queries where #{other.submission.pk} is better "
                      f"({stats[measures.index(focus)].losses if focus in measures else 0} of them)."),
                x_label=f"{focus} (%), #{ref.submission.pk} {ref.submission.system_name[:30]}",
                y_label=f"{focus} (%), #{other.submission.pk}", x_range=(0.0, 100.0), y_range=(0.0, 100.0),
                decimals=2,
            )
        pairs.append(pair)

    for stat, p_r, p_t in zip(all_stats, holm([s.p_randomization for s in all_stats]),
                              holm([s.p_ttest for s in all_stats]), strict=True):
        stat.p_randomization_holm = p_r
        stat.p_ttest_holm = p_t
    bands = not disclosure.shows(split, "p_values")  # a hidden split: bands, no t-test, no per-query counts

    def means(s: PairStats, other: Scored) -> tuple[float, float]:
        # A hidden split: the released means (the values stored at the Ladder's verdict, which the board shows),
        # and their difference; the exact difference would be a third constraint on the two means, finer than
        # the grid.
        if not bands:
            return s.mean_a, s.mean_b
        shown = [disclosure.result_scores_shown(e.result, split=split).get(s.measure) for e in (ref, other)]
        return (shown[0] or 0.0, shown[1] or 0.0)

    for pair in pairs:
        pair["rows"] = []
        for s in pair["stats"]:
            mean_a, mean_b = means(s, pair["entry"])
            difference = round(mean_b - mean_a, 10)
            row = {
                "measure": s.measure, "mean_a": fmt(mean_a), "mean_b": fmt(mean_b),
                "difference": ("+" if difference >= 0 else "−") + fmt(abs(difference)),
                # A hidden split: the pair's own band and nothing adjusted for the page's other comparisons (Holm
                # moves with how many entries are shown: comparing one pair beside 0-4 fillers would test its p
                # against 0.05/m for each m, more than the band's one bit).
                "significant": not bands and s.p_randomization_holm < ALPHA,
                "focus": s.measure == focus,
            }
            if bands:
                row.update(band=disclosure.p_band(s.p_randomization))
            else:
                row.update(p_randomization=s.p_randomization, p_randomization_holm=s.p_randomization_holm,
                           p_ttest=s.p_ttest, p_ttest_holm=s.p_ttest_holm, wins=s.wins, ties=s.ties, losses=s.losses)
            pair["rows"].append(row)
        for row in pair["categories"]:
            row["delta_text"] = ("+" if row["delta"] >= 0 else "−") + fmt(abs(row["delta"]))
    return Comparison(split=split, entries=entries, measures=measures, focus=focus, pairs=pairs,
                      n_comparisons=len(all_stats), bands=bands,
                      n_queries=disclosure.topic_count_shown(len(ref.qids), split=split,
                                                             partitioned=partition_in_use(split_id=split.pk)))


def check_measure(split, measure: str) -> None:
    """Refuse a measure the dataset lacks, or one the split does not release (a hidden split: the primary only)."""
    dataset = split.dataset
    if measure not in (dataset.measures or []):
        raise CompareRefused(f"{dataset.name} has no measure {measure!r}; choose one of: {', '.join(dataset.measures)}.")
    if measure not in disclosure.released_measures(split):
        raise CompareRefused(f"measure: {measure} is not shown on the hidden {split.name} split of {dataset.name} "
                             f"(its labels are hidden); compare on its primary measure, {dataset.primary_measure}, "
                             "by leaving measure out.")


def compare_two(*, a: Submission, b: Submission, measure: str) -> dict:
    """The API answer: ``b`` against ``a`` on one measure (raw p-values: one comparison).

    On a hidden split: the primary measure only (another is refused, naming it), the released means, the
    randomization test's band in ``p_band`` and no p-value, t-test or per-query count (null).
    """
    check_comparable([a, b])
    split = a.split
    check_measure(split, measure)
    first, second = load_scored([a, b])
    if measure not in first.vectors or measure not in second.vectors or first.qids != second.qids:
        raise CompareRefused("The stored per-query values of these submissions do not cover the same queries; "
                             "a curator can rescore the split to fix this.")
    s = pair_stats(first.vectors[measure], second.vectors[measure], measure=measure)
    if not disclosure.shows(split, "p_values"):
        means = [disclosure.result_scores_shown(e.result, split=split).get(measure) for e in (first, second)]
        return {"measure": measure, "a": a.pk, "b": b.pk, "mean_a": means[0], "mean_b": means[1],
                "p_randomization": None, "p_ttest": None, "p_band": disclosure.p_band(s.p_randomization),
                "wins": None, "ties": None, "losses": None}
    return {
        "measure": measure,
        "a": a.pk,
        "b": b.pk,
        "mean_a": s.mean_a,
        "mean_b": s.mean_b,
        "p_randomization": s.p_randomization,
        "p_ttest": s.p_ttest,
        "p_band": disclosure.p_band(s.p_randomization),
        "wins": s.wins,
        "ties": s.ties,
        "losses": s.losses,
    }


def parse_ids(values: list[str]) -> list[int]:
    """Ids from ``?ids=1,2`` or ``?ids=1&ids=2`` (checkboxes); refuses anything that is not a number."""
    ids = []
    for value in values:
        for part in str(value).replace(" ", ",").split(","):
            part = part.strip().lstrip("#")
            if not part:
                continue
            if not (part.isascii() and part.isdigit()) or not 1 <= int(part) <= MAX_ID:
                raise CompareRefused(f"{part!r} is not a submission id; give numbers, e.g. ?ids=12,15.")
            ids.append(int(part))
    return ids


def visible_submissions(*, ids: list[int], user) -> list[Submission]:
    """The submissions in the order given, each visible to ``user``; an unknown or hidden id is refused alike."""
    found = {s.pk: s for s in Submission.objects.select_related("split__dataset", "user__profile").filter(pk__in=ids)}
    out = []
    for pk in ids:
        sub = found.get(pk)
        if sub is None or not sub.visible_to(user):
            raise CompareRefused(f"No submission #{pk} is visible to you.")
        out.append(sub)
    return out


def comparable_with(*, submission: Submission, user, limit: int = 50) -> list[Submission]:
    """Other scored entries of the submission's split that ``user`` may see, newest first (for one-click links)."""
    qs = (Submission.objects.filter(split_id=submission.split_id, status=Submission.Status.SCORED)
          .exclude(pk=submission.pk).select_related("split__dataset", "user__profile").order_by("-created_at"))
    return [s for s in qs[: limit * 4] if s.visible_to(user)][:limit]
