"""Analyses of one scored submission: intervals, breakdowns, curves and per-query rows.

Plain functions over the per-query vectors the worker stored with the result
(:func:`submissions.selectors.load_per_query`); the statistics come from the
metric core (:mod:`evaluation.stats`), the plots from :mod:`presentation.plots`.

Hidden labels stay hidden: on a hidden split nothing here returns a value of
a single query, nor a bootstrap interval (seeded, so its endpoints are exact
equations on a crafted run's per-query values), nor a category's mean (a
crafted run scores 0 on the category's other queries). Elsewhere categories
and relevant-count buckets are shown when they hold at least
``Dataset.category_min_queries`` queries, and per-query rows, the per-query
CSV and scatter plots exist only for dev and train splits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.core.cache import cache

from catalogue.models import Split, Topic
from catalogue.page_generation import CacheKey, CacheKind, cache_key
from evaluation.csv_cells import csv_rows
from evaluation.stats import bootstrap_ci
from presentation import plots
from submissions import disclosure
from submissions.disclosure import min_group_size

#: Buckets of the number of relevant documents of a query: (label, lowest, highest or None).
RELEVANT_BUCKETS: list[tuple[str, int, int | None]] = [("1", 1, 1), ("2–5", 2, 5), ("6–20", 6, 20), (">20", 21, None)]
HISTOGRAM_BINS = 10
BOOTSTRAP_RESAMPLES = 10_000
CACHE_SECONDS = 24 * 60 * 60
NO_CATEGORY = "(no category)"


class PerQueryNotAllowed(Exception):
    """Per-query values were asked for on a split whose labels are hidden (or a test split)."""

    def __init__(self, split: Split):
        super().__init__(
            f"{split} is a {'hidden' if split.hidden else 'test'} split: per-query values are shown only for "
            "dev and train splits, so that a leaderboard never reveals its test labels."
        )


def per_query_allowed(split: Split) -> bool:
    """Per-query values (tables, CSV, scatter plots) only for visible dev and train splits."""
    return disclosure.shows(split, "per_query") and split.kind in (Split.Kind.DEV, Split.Kind.TRAIN)


# --- the pure functions -----------------------------------------------------------------


def bootstrap_intervals(vectors: dict[str, np.ndarray], measures: list[str], *,
                        n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> dict[str, tuple[float, float, float]]:
    """``{measure: (mean, low, high)}``: the mean over queries and its 95% percentile bootstrap interval."""
    out = {}
    for name in measures:
        values = np.asarray(vectors.get(name, []), dtype=np.float64)
        if len(values) == 0:
            continue
        low, high = bootstrap_ci(values, n_resamples=n_resamples, seed=seed)
        out[name] = (float(values.mean()), low, high)
    return out


@dataclass
class GroupRow:
    """Mean of each measure over a group of queries (a category or a relevant-count bucket)."""

    label: str
    n_queries: int
    means: dict[str, float]


def left_out_groups(sizes: dict[str, int], min_queries: int) -> set[str]:
    """The groups not shown: those under ``min_queries``, and then the smallest others until those left out
    hold ``min_queries`` queries together.

    The mean over all queries is shown beside the groups, so the mean of the
    queries left out follows from it and the shown groups' means and sizes
    (total minus the shown sums): left out together, they must be a group
    that may be shown (secondary suppression, as in statistical tables).
    """
    left_out = {label for label, n in sizes.items() if n < min_queries}
    if not left_out:
        return left_out
    for label in sorted((lb for lb in sizes if lb not in left_out), key=lambda lb: (sizes[lb], lb)):
        if sum(sizes[lb] for lb in left_out) >= min_queries:
            break
        left_out.add(label)
    return left_out


def _group_rows(labels: np.ndarray, order: list[str], vectors: dict[str, np.ndarray], measures: list[str],
                min_queries: int) -> tuple[list[GroupRow], int]:
    masks = {label: labels == label for label in order}
    sizes = {label: int(mask.sum()) for label, mask in masks.items() if mask.any()}
    left_out = left_out_groups(sizes, min_queries)
    rows = [
        GroupRow(label=label, n_queries=n,
                 means={m: float(np.asarray(vectors[m])[masks[label]].mean()) for m in measures if m in vectors})
        for label, n in sizes.items() if label not in left_out
    ]
    return rows, len(left_out)


def category_table(*, qids: list[str], categories: dict[str, str], vectors: dict[str, np.ndarray],
                   measures: list[str], min_queries: int = 1) -> tuple[list[GroupRow], int]:
    """Per-category means with query counts, and how many categories were left out as too small.

    ``categories`` maps qid → category (topics without one go to “(no category)”).
    Categories with fewer than ``min_queries`` evaluated queries are left out.
    Returns ``([], 0)`` when no topic has a category.
    """
    labels = np.asarray([categories.get(q) or NO_CATEGORY for q in qids], dtype=object)
    if len(labels) == 0 or all(label == NO_CATEGORY for label in labels):
        return [], 0
    order = sorted(set(labels.tolist()), key=lambda c: (c == NO_CATEGORY, c))
    return _group_rows(labels, order, vectors, measures, min_queries)


def bucket_of(n_relevant: int) -> str:
    for label, low, high in RELEVANT_BUCKETS:
        if n_relevant >= low and (high is None or n_relevant <= high):
            return label
    return RELEVANT_BUCKETS[0][0]  # never reached: evaluated queries have at least one relevant document


def relevant_breakdown(*, n_relevant: np.ndarray, vectors: dict[str, np.ndarray], measures: list[str],
                       min_queries: int = 1) -> tuple[list[GroupRow], int]:
    """Means by number of relevant documents (1, 2–5, 6–20, >20), small buckets left out as above."""
    labels = np.asarray([bucket_of(int(n)) for n in np.asarray(n_relevant)], dtype=object)
    return _group_rows(labels, [b[0] for b in RELEVANT_BUCKETS], vectors, measures, min_queries)


def value_histogram(values: np.ndarray, *, bins: int = HISTOGRAM_BINS) -> tuple[list[int], list[float]]:
    """Counts of per-query values in ``bins`` equal bins over [0, 1] (1.0 falls in the last bin)."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    counts, _ = np.histogram(np.clip(np.asarray(values, dtype=np.float64), 0.0, 1.0), bins=edges)
    return counts.astype(int).tolist(), [round(float(e), 6) for e in edges]


def recall_curve_points(curve: np.ndarray, *, max_points: int = 200) -> list[tuple[float, float]]:
    """(k, mean R@k) for k = 1..len(curve), thinned to about ``max_points`` log-spaced ks for drawing."""
    curve = np.asarray(curve, dtype=np.float64)
    n = len(curve)
    if n == 0:
        return []
    ks = np.unique(np.round(np.geomspace(1, n, num=min(n, max_points))).astype(int))
    return [(float(k), float(curve[k - 1])) for k in ks]


# --- for the pages -------------------------------------------------------------------------


def _topics(split: Split) -> dict[str, tuple[str, str]]:
    """qid → (category, text) for the split's topics."""
    return {qid: (cat, text) for qid, cat, text in Topic.objects.filter(split=split).values_list("qid", "category", "text")}


def per_query_rows(*, split: Split, vectors: dict[str, np.ndarray], measures: list[str]) -> list[dict]:
    """One row per evaluated query (text, category, relevant count, first relevant rank, each measure).

    Raises :class:`PerQueryNotAllowed` on hidden and test splits.
    """
    if not per_query_allowed(split):
        raise PerQueryNotAllowed(split)
    qids = [str(q) for q in vectors.get("qids", [])]
    topics = _topics(split)
    n_rel = vectors.get("n_relevant")
    first = vectors.get("first_relevant_rank")
    rows = []
    for i, qid in enumerate(qids):
        category, text = topics.get(qid, ("", ""))
        rank = int(first[i]) if first is not None else None
        rows.append({
            "qid": qid,
            "text": text,
            "category": category,
            "n_relevant": int(n_rel[i]) if n_rel is not None else None,
            "first_relevant_rank": rank if rank and rank > 0 else None,
            "values": [float(vectors[m][i]) for m in measures if m in vectors],
        })
    return rows


def per_query_csv(*, split: Split, vectors: dict[str, np.ndarray], measures: list[str]) -> str:
    """The per-query rows as CSV (values as fractions with full precision). Dev and train splits only."""
    rows = per_query_rows(split=split, vectors=vectors, measures=measures)
    present = [m for m in measures if m in vectors]
    return csv_rows([["qid", "query", "category", "n_relevant", "first_relevant_rank", *present]] + [
        [row["qid"], row["text"], row["category"], row["n_relevant"], row["first_relevant_rank"] or "",
         *row["values"]] for row in rows])


def _cache_key(result, split: Split) -> CacheKey:
    # The group minimum too: a curator raising it (small categories were shown) bumps no split version.
    # v5: no intervals nor categories on hidden splits (an entry cached before would still hold them).
    # v7: the charts in percent (an entry cached before holds them drawn 0 to 1).
    return cache_key(CacheKind.ANALYSIS, result.pk, result.qrels_version_id, min_group_size(split), split=split)


def _aggregates(*, split: Split, result, vectors: dict[str, np.ndarray], measures: list[str]) -> dict:
    """Everything on the page that is not a per-query row (safe on hidden splits); cached."""
    key = _cache_key(result, split)
    cached = cache.get(key)
    if cached is not None:
        return cached
    dataset = split.dataset
    fmt = disclosure.formatter(split)
    qids = [str(q) for q in vectors.get("qids", [])]
    min_queries = min_group_size(split)

    # A hidden split shows no bootstrap interval: with its published seed, the endpoints of a crafted run are
    # exact equations on its per-query values, which tell apart vectors of one rounded mean (docs/security.md).
    intervals = bootstrap_intervals(vectors, measures) if disclosure.shows(split, "bootstrap") else {}
    interval_rows = [
        {"name": m, "mean": fmt(v[0]), "low": fmt(v[1]), "high": fmt(v[2]), "primary": m == dataset.primary_measure}
        for m, v in intervals.items()
    ]
    # A hidden split shows no group of queries either: the attacker decides what the others of a category
    # score (0 with documents outside the corpus) and puts the Ladder's anchors in another one, so a
    # category of ten queries is one query (docs/security.md). The bucket table, the recall curve, the
    # histogram and judged@10 are facts about single queries' judgments.
    categories: list[GroupRow] = []
    n_hidden_categories = 0
    if disclosure.shows(split, "categories"):
        topics = _topics(split)
        categories, n_hidden_categories = category_table(
            qids=qids, categories={q: c for q, (c, _) in topics.items()}, vectors=vectors, measures=measures,
            min_queries=min_queries,
        )
    buckets: list[GroupRow] = []
    n_hidden_buckets = 0
    if disclosure.shows(split, "relevant_buckets") and "n_relevant" in vectors:
        buckets, n_hidden_buckets = relevant_breakdown(n_relevant=vectors["n_relevant"], vectors=vectors,
                                                       measures=measures, min_queries=min_queries)

    def as_rows(groups: list[GroupRow]) -> list[dict]:
        return [{"label": g.label, "n": g.n_queries, "values": [fmt(g.means.get(m)) for m in measures]} for g in groups]

    recall_svg = ""
    if disclosure.shows(split, "curves") and "recall_curve" in vectors and len(vectors["recall_curve"]):
        points = recall_curve_points(vectors["recall_curve"])
        depth = len(vectors["recall_curve"])
        marks = ", ".join(f"R@{k} = {fmt(float(vectors['recall_curve'][k - 1]))}" for k in (10, 100, depth)
                          if k <= depth)
        # In the site's unit, percent (the tables beside it): 0 to 100 on the y axis.
        recall_svg = plots.line_chart(
            [plots.Series("mean R@k", [(k, 100 * r) for k, r in points])],
            title=f"Recall curve: mean R@k (percent) for k = 1 to {depth}",
            desc=f"Mean recall in percent over {len(qids)} queries as the cutoff k grows (logarithmic k axis). "
                 f"{marks}.",
            x_label="cutoff k (log scale)", y_label="mean R@k (%)", log_x=True, y_range=(0.0, 100.0),
        )
    primary = dataset.primary_measure
    histogram_svg, histogram_counts = "", []
    if disclosure.shows(split, "curves") and primary in vectors and len(qids):
        counts, edges = value_histogram(vectors[primary])
        histogram_counts = [
            {"low": edges[i], "high": edges[i + 1], "count": c} for i, c in enumerate(counts)
        ]
        percent_edges = [100 * e for e in edges]  # the site's unit on the x axis
        histogram_svg = plots.histogram(
            counts, percent_edges,
            title=f"Distribution of per-query {primary} (percent)",
            desc=f"Number of queries (of {len(qids)}) whose {primary} falls in each tenth of 0 to 100 %: "
                 + ", ".join(f"{percent_edges[i]:g}–{percent_edges[i + 1]:g}: {c}" for i, c in enumerate(counts))
                 + ".",
            x_label=f"{primary} of a query (%)", y_label="queries",
        )
    judged = vectors.get("judged_at_10") if disclosure.shows(split, "judged_at_k") else None
    data = {
        "measures": measures,
        "n_queries": len(qids),
        "intervals": interval_rows,
        "categories": as_rows(categories),
        "n_hidden_categories": n_hidden_categories,
        "buckets": as_rows(buckets),
        "n_hidden_buckets": n_hidden_buckets,
        "min_queries": min_queries,
        "recall_svg": recall_svg,
        "histogram_svg": histogram_svg,
        "histogram_counts": histogram_counts,
        "histogram_measure": primary,
        "judged_at_10": float(np.mean(judged)) if judged is not None and len(judged) else None,
    }
    cache.set(key, data, CACHE_SECONDS)
    return data


def submission_analysis(*, submission, result, vectors: dict[str, np.ndarray]) -> dict:
    """The context of ``templates/participants/submission_analysis.html`` for a submission's page.

    ``vectors`` are the result's decoded per-query arrays, whatever the split
    (only aggregates of them leave this function on a hidden split).
    Returns ``{"analysis": None}`` when there is nothing to analyse.
    """
    split = submission.split
    if result is None or not vectors or "qids" not in vectors:
        return {"analysis": None}
    if not disclosure.result_released(result, split=split):  # the Ladder did not release it: no number of its own
        return {"analysis": None}
    measures = [m for m in (split.dataset.measures or []) if m in vectors]
    data = dict(_aggregates(split=split, result=result, vectors=vectors, measures=measures))
    data["per_query_allowed"] = per_query_allowed(split)
    data["per_query_rows"] = []
    if data["per_query_allowed"]:
        fmt = split.dataset.format_value
        data["per_query_rows"] = [
            {**row, "values": [fmt(v) for v in row["values"]]}
            for row in per_query_rows(split=split, vectors=vectors, measures=measures)
        ]
    # Parts by name and link when public; a private part (the fusion's owner's own) by its number only, since
    # the fusion's page may be public and a private entry's name is its owner's.
    parts = submission.fusion_of.all().only("pk", "system_name", "visibility", "hidden_by_curator", "withdrawn_at")
    data["fusion_parts"] = [
        {"pk": p.pk, "system_name": p.system_name if p.is_public else "", "public": p.is_public}
        for p in (parts if submission.pk else [])
    ]
    data["fusion_params"] = submission.fusion_params or {}
    return {"analysis": data}
