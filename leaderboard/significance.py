"""Significance markers and tiers for a leaderboard.

With a few hundred test questions, small gaps between entries are often
noise. For one split and one measure this module marks each scored entry
(public entries and baselines, the rows everyone sees) as significantly
different or not from the leader and from the best baseline, and groups the
ranking into tiers of systems that cannot be told apart:

* test: paired two-sided randomization test on the per-query vectors
  (:func:`evaluation.stats.randomization_test`, 10,000 sign flips, seed 0,
  exact when there are few queries), computed many pairs at a time with
  :func:`evaluation.stats.randomization_tests` (same p-values: all pairs share
  the seeded flips, so they are drawn once per batch);
* multiple comparisons: Holm–Bonferroni over every comparison the page shows
  (each entry vs the leader, vs the best baseline, and vs its tier's best);
* tiers: walk down the ranking; an entry joins the current tier when it is not
  significantly different from the tier's best, else it starts a new tier.

Because the tier comparisons depend on the tiers and the Holm adjustment on
the set of comparisons, the walk is repeated until the set of comparisons no
longer changes (a few rounds; each pair's test is computed once; when the
rounds cycle without settling, whole cycles are skipped to the round the
bounded loop ends on). The pairs against the leader and the best baseline are
tested in one batch; a tier's best is tested against the next ``LOOKAHEAD``
entries at once the first time the walk needs one of them (200 entries × 222
queries: ~0.25 s of CPU instead of ~9.5 s pair by pair, `bench/bench_significance.py`).

Results are cached per (split, cache_version, current qrels, measure): a new
score bumps the version, so the markers never lag behind the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from django.core.cache import cache

from evaluation.stats import holm, randomization_tests

from .models import Split
from .selectors import leaderboard_rows, resolve_sort

ALPHA = 0.05
N_RESAMPLES = 10_000
SEED = 0
CACHE_SECONDS = 24 * 60 * 60
#: Entries below a tier's best tested with it in one batch when the walk first needs one of them.
#: Each batch streams the whole flip matrix once, so tiny batches cost more; larger ones test pairs
#: the walk never uses (200 × 222: 16 → 21 batches, 0.23 s; 4 → 0.48 s; 64 → 0.32 s).
LOOKAHEAD = 16


@dataclass
class Marker:
    """One comparison of an entry with a reference entry (the leader or the best baseline)."""

    reference_id: int
    p: float
    p_holm: float
    significant: bool
    direction: str  # "better", "worse" or "same" (mean of the entry vs the reference)

    @property
    def symbol(self) -> str:
        if not self.significant:
            return "="
        return "▲" if self.direction == "better" else "▼"

    @property
    def text(self) -> str:
        if not self.significant:
            return "not significantly different"
        return f"significantly {self.direction}"


@dataclass
class Significance:
    """Markers and tiers of one split's leaderboard on one measure."""

    measure: str
    alpha: float
    n_resamples: int
    seed: int
    n_comparisons: int
    leader_id: int | None
    baseline_id: int | None
    tiers: dict[int, int] = field(default_factory=dict)  # submission id → tier (1 = the best)
    vs_leader: dict[int, Marker] = field(default_factory=dict)
    vs_baseline: dict[int, Marker] = field(default_factory=dict)
    n_queries: int = 0

    @property
    def method(self) -> str:
        """The sentence printed under the table."""
        flips = f"{self.n_resamples:,} sign flips"
        return (
            f"Paired two-sided randomization test, {flips}, seed {self.seed}, Holm–Bonferroni over the "
            f"{self.n_comparisons} comparison{'' if self.n_comparisons == 1 else 's'} on this page, α = {self.alpha:g}"
        )

    def for_row(self, submission_id: int | None) -> dict | None:
        """What the template shows for a row: tier and the two markers (None for rows not compared)."""
        if submission_id is None or submission_id not in self.tiers:
            return None
        return {
            "tier": self.tiers[submission_id],
            "leader": self.vs_leader.get(submission_id),
            "baseline": self.vs_baseline.get(submission_id),
            "is_leader": submission_id == self.leader_id,
            "is_baseline": submission_id == self.baseline_id,
        }


def _direction(a: np.ndarray, b: np.ndarray) -> str:
    diff = float(np.mean(a) - np.mean(b)) if len(a) else 0.0
    if abs(diff) < 1e-12:
        return "same"
    return "better" if diff > 0 else "worse"


def compute_significance(*, entries: list[tuple[int, bool, np.ndarray]], measure: str, alpha: float = ALPHA,
                         n_resamples: int = N_RESAMPLES, seed: int = SEED) -> Significance:
    """Markers and tiers for ``entries`` = [(submission id, is baseline, per-query vector)] in rank order.

    Pure (no database): the vectors must be aligned on the same queries.
    """
    ids = [e[0] for e in entries]
    vectors = {e[0]: np.asarray(e[2], dtype=np.float64) for e in entries}
    leader = ids[0] if ids else None
    baseline = next((e[0] for e in entries if e[1]), None)
    p_cache: dict[tuple[int, int], float] = {}

    def compute(pairs: list[tuple[int, int]]) -> None:
        """Test every pair not tested yet, in one batch (the flips are drawn once for all of them)."""
        missing = [key for key in unique(pairs) if key not in p_cache]
        if not missing:
            return
        ps = randomization_tests(np.stack([vectors[x] for x, _ in missing]), np.stack([vectors[y] for _, y in missing]),
                                 n_resamples=n_resamples, seed=seed)
        p_cache.update(zip(missing, ps.tolist(), strict=True))

    def p_of(pair: tuple[int, int]) -> float:
        key = (min(pair), max(pair))
        if key not in p_cache:
            compute([key])
        return p_cache[key]

    fixed: list[tuple[int, int]] = []
    if leader is not None:
        fixed += [(i, leader) for i in ids if i != leader]
    if baseline is not None:
        fixed += [(i, baseline) for i in ids if i != baseline]

    def unique(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
        seen, out = set(), []
        for a, b in pairs:
            key = (min(a, b), max(a, b))
            if key not in seen:
                seen.add(key)
                out.append(key)
        return out

    def walk(adjusted: dict[tuple[int, int], float]) -> tuple[dict[int, int], list[tuple[int, int]]]:
        tiers: dict[int, int] = {}
        used: list[tuple[int, int]] = []
        tier, best = 0, None
        for pos, i in enumerate(ids):
            if best is None:
                tier, best = 1, i
            else:
                key = (min(i, best), max(i, best))
                used.append(key)
                if key not in adjusted and key not in p_cache:
                    # The walk compares this best with the entries below until one differs: test the next few at once.
                    compute([(j, best) for j in ids[pos:pos + LOOKAHEAD]])
                p = adjusted.get(key, p_of(key))  # a pair not yet in the family: its raw p, for this round
                if p < alpha:
                    tier, best = tier + 1, i
            tiers[i] = tier
        return tiers, used

    compute(fixed)
    tier_pairs: list[tuple[int, int]] = []
    adjusted: dict[tuple[int, int], float] = {}
    family: list[tuple[int, int]] = []
    tiers: dict[int, int] = {}
    rounds = len(ids) + 2
    seen: dict[frozenset[tuple[int, int]], int] = {}  # family → the last round that adjusted it
    round_ = 0
    while round_ < rounds:
        family = unique(fixed + tier_pairs)
        adjusted = dict(zip(family, holm([p_of(pair) for pair in family]), strict=True))
        tiers, used = walk(adjusted)
        if set(unique(fixed + used)) == set(family):  # the walk used exactly the adjusted comparisons
            break
        tier_pairs = used
        # A round's outcome depends only on its family (Holm gives tied p-values the same value in any
        # order). A family seen before means the rounds cycle and never settle (e.g. the tier pairs push
        # Holm past α, which removes them, which brings the tiers back): skip whole cycles and end on
        # the round the full loop would have ended on, without running ~len(ids) identical rounds.
        state = frozenset(family)
        if state in seen:
            period = round_ - seen[state]
            round_ += (rounds - 1 - round_) // period * period
        seen[state] = round_
        round_ += 1

    def marker(i: int, ref: int) -> Marker:
        key = (min(i, ref), max(i, ref))
        return Marker(reference_id=ref, p=p_of(key), p_holm=adjusted.get(key, 1.0),
                      significant=adjusted.get(key, 1.0) < alpha, direction=_direction(vectors[i], vectors[ref]))

    return Significance(
        measure=measure,
        alpha=alpha,
        n_resamples=n_resamples,
        seed=seed,
        n_comparisons=len(family),
        leader_id=leader,
        baseline_id=baseline,
        tiers=tiers,
        vs_leader={i: marker(i, leader) for i in ids if leader is not None and i != leader},
        vs_baseline={i: marker(i, baseline) for i in ids if baseline is not None and i != baseline},
        n_queries=len(next(iter(vectors.values()))) if vectors else 0,
    )


def _cache_key(split: Split, measure: str) -> str:
    return f"lexboard:sig:v1:{split.pk}:{split.cache_version}:{split.current_qrels_id}:{measure}"


def _vectors(result_ids: list[int], measure: str) -> dict[int, tuple[list[str], np.ndarray]]:
    """submission id → (qids, vector of ``measure``) from the stored results (one query)."""
    from submissions.models import Result
    from submissions.selectors import load_per_query

    out = {}
    for result in Result.objects.filter(pk__in=result_ids).only("pk", "submission_id", "per_query"):
        data = load_per_query(result)
        if measure in data and "qids" in data:
            out[result.submission_id] = ([str(q) for q in data["qids"]], np.asarray(data[measure], dtype=np.float64))
    return out


def leaderboard_significance(*, split: Split, measure: str | None = None) -> Significance | None:
    """Markers and tiers of the split's public leaderboard on ``measure`` (default: the primary one).

    The entries are the scored public rows and baselines of
    :func:`leaderboard.selectors.leaderboard_rows` seen by an anonymous
    visitor (a user's own private rows get no markers: the cache is shared).
    Returns None when fewer than two entries have per-query vectors.
    """
    from submissions.models import Result

    measure = resolve_sort(split.dataset, measure)
    key = _cache_key(split, measure)
    cached = cache.get(key)
    if cached is not None:
        return cached or None
    rows = [r for r in leaderboard_rows(split=split, user=None, sort=measure)
            if r.kind in ("scored", "baseline") and r.rank is not None and r.submission_id is not None]
    result_ids = dict(
        Result.objects.filter(submission_id__in=[r.submission_id for r in rows],
                              qrels_version_id=split.current_qrels_id).values_list("submission_id", "pk")
    )
    vectors = _vectors(list(result_ids.values()), measure)
    entries = []
    reference_qids = None
    for row in rows:
        found = vectors.get(row.submission_id)
        if found is None:
            continue
        qids, vector = found
        if reference_qids is None:
            reference_qids = qids
        if qids != reference_qids:
            continue  # not scored on the same queries (cannot happen on one qrels version); no marker
        entries.append((row.submission_id, row.kind == "baseline", vector))
    significance = compute_significance(entries=entries, measure=measure) if len(entries) >= 2 else None
    cache.set(key, significance or False, CACHE_SECONDS)
    return significance


def significance_context(*, split: Split | None, rows: list, sort: str, sig: str | None) -> dict:
    """What the dataset page needs: the significance of ``sig`` (default: the ranked-by measure), rows annotated.

    Each row gets ``row.extra["sig"]`` (tier and markers, or None) and
    ``row.extra["tier_start"]`` (first row of a tier, drawn with a rule when
    the table is ranked by the same measure as the tiers).
    """
    if split is None or split.dataset.task != split.dataset.Task.RETRIEVAL:
        return {"significance": None, "sig_measure": None}
    measures = list(split.dataset.measures or [])
    measure = sig if sig in measures else sort
    significance = leaderboard_significance(split=split, measure=measure)
    previous_tier = None
    for row in rows:
        info = significance.for_row(row.submission_id) if significance is not None else None
        row.extra = {**row.extra, "sig": info, "tier_start": False}
        if info is not None:
            row.extra["tier_start"] = measure == sort and previous_tier is not None and info["tier"] != previous_tier
            previous_tier = info["tier"]
    return {"significance": significance, "sig_measure": measure, "sig_measures": measures,
            "sig_grouped": measure == sort}
