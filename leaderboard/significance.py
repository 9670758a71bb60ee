"""Significance markers and tiers for a leaderboard.

With a few hundred test questions, small gaps between entries are often
noise. For one split and one measure this module marks each scored entry
(public entries and baselines, the rows everyone sees) as significantly
different or not from the leader and from the best baseline, and groups the
ranking into tiers of systems that cannot be told apart. The method, in the
paragraph printed under the table:

* test: paired two-sided randomization test on the per-query values
  (:func:`evaluation.stats.randomization_tests`, seed 0, exact over all 2^n
  sign flips when there are 16 queries or fewer);
* markers: each entry vs the leader and vs the best baseline (the unique
  pairs: 2 × entries − 3 with a baseline below the leader);
* tiers: one pass down the ranking; an entry joins the current tier unless it
  is significantly worse than the tier's best (its first entry), in which case
  it starts a new tier. Every entry but the first is tested once, so there are
  entries − 1 tier tests, known in advance. Nothing is iterated and the
  outcome of one test never changes the correction of another, so the tiers
  are stable;
* one family-wise procedure for both: Bonferroni over the marker comparisons
  and the tier tests together (m = markers + tiers, fixed before any test; a
  comparison is significant when p × m < α). A pair tested for a marker and
  for a tier (every entry of the first tier is tested against the leader for
  both) therefore gets one verdict: a row can never show tier 1 ("not
  significantly worse than the leader") beside ▼ ("significantly worse than
  the leader"), which Holm for the markers and Bonferroni over the tiers alone
  allowed. Holm's step-down needs the whole family's p-values before any
  decision, and the tier walk decides which pairs it tests as it goes, so it
  cannot share Holm's family;
* number of sign flips: the smallest p-value a sign-flip test can give is
  1 / (flips + 1), and a correction multiplies it by up to the family size m.
  ``max(10,000, ⌈10 · m / α⌉)`` flips let the smallest p pass with room for
  nine more extreme flips, capped at ``MAX_RESAMPLES`` = 50,000 for time: the
  cap binds from 85 entries on (a 200-entry board has m = 397 + 199 = 596 and
  would need 119,200 flips; with 50,000 its smallest adjusted p is
  596 / 50,001 ≈ α / 4.2; bench/bench_significance.py).

The tier walk needs the test of an entry against a head that depends on the
earlier outcomes. Each call of the batched test draws its flips again (over
4 MB of flips they are not kept), so the walk is first predicted with the
normal approximation of the sign-flip distribution, and the predicted pairs
are tested in the same batch as the markers; the exact walk then uses only
exact p-values, and a pair the prediction missed is tested with a new
prediction from there (usually none or one extra batch). The prediction only
decides when a pair is tested, never its p-value or the tiers.

Results are cached per (split, cache_version, current qrels, measure): a new
score bumps the version, so the markers never lag behind the table. Each
p-value is also remembered on its own, by a digest of its differences, the
number of flips and the seed (:func:`p_value_name`): on a board large enough
for the flip cap, a new score costs the tests of the pairs it changed, not
all of them again (the first render after a score landed went from ~0.45 s
of tests to a few ms; docs/performance.md). Only the two arrays needed (query
ids and the measure) are decoded from each entry's stored vectors.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from django.core.cache import cache
from scipy.special import erfc

from catalogue.models import Split
from catalogue.page_generation import CacheKey, CacheKind, cache_key
from evaluation.power import PowerAnalysis, power_analysis
from evaluation.stats import EXACT_MAX_N, randomization_tests
from submissions import disclosure
from submissions.models import Result
from submissions.selectors import load_per_query, partition_in_use

from .selectors import leaderboard_rows, resolve_sort

ALPHA = 0.05
SEED = 0
#: Never fewer sign flips than the issue's floor.
MIN_RESAMPLES = 10_000
#: k in flips = ⌈k · m / α⌉: the smallest attainable p (1 / (flips + 1)) times the family size m is α / k.
RESOLUTION = 10
#: Time cap. A 200-entry × 222-query board (397 marker pairs, ~590 pairs tested in all) costs ~0.75 s of CPU
#: with 50,000 flips (bench/bench_significance.py). The cap binds from 85 entries on (m = 3 × 85 − 4 = 251 >
#: 50,000 × α / 10); the smallest attainable adjusted p is then m / 50,001, still below α up to 2,500
#: comparisons (834 entries).
MAX_RESAMPLES = 50_000
CACHE_SECONDS = 24 * 60 * 60
#: Pairs tested past each predicted tier boundary, in case the exact test keeps the entry in the tier.
MARGIN = 2
#: The walk's prediction divides the normal approximation's p by this (it overstates tail p-values; the prediction
#: only decides which pairs are tested in the first batch, never a p-value or a tier).
UNSURE = 2


def resamples_for(family_size: int, *, alpha: float = ALPHA) -> int:
    """Sign flips for a family of ``family_size`` comparisons: ⌈k · m / α⌉, at least 10,000, at most the cap.

    With fewer, a clearly better entry could never be marked: its p-value is
    at least 1 / (flips + 1), and the correction multiplies it by m.
    """
    return min(MAX_RESAMPLES, max(MIN_RESAMPLES, math.ceil(RESOLUTION * family_size / alpha)))


@dataclass
class Marker:
    """One comparison of an entry with a reference entry (the leader or the best baseline)."""

    reference_id: int
    p: float
    p_adjusted: float  # min(1, p × the family size): Bonferroni over the markers and the tier tests together
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
class TierTest:
    """An entry tested against its tier's best (the head it was compared with in the pass down the ranking)."""

    head_id: int
    p: float
    p_adjusted: float  # min(1, p × the family size), the same adjustment as the markers'
    new_tier: bool  # significantly worse than the head: the entry starts the next tier


@dataclass
class Significance:
    """Markers and tiers of one split's leaderboard on one measure."""

    measure: str
    alpha: float
    n_resamples: int
    seed: int
    n_marker_comparisons: int  # the unique (entry, leader) and (entry, best baseline) pairs
    n_tier_comparisons: int  # entries − 1
    leader_id: int | None
    baseline_id: int | None
    tiers: dict[int, int] = field(default_factory=dict)  # submission id → tier (1 = the best)
    tier_tests: dict[int, TierTest] = field(default_factory=dict)  # every entry but the first
    vs_leader: dict[int, Marker] = field(default_factory=dict)
    vs_baseline: dict[int, Marker] = field(default_factory=dict)
    n_queries: int = 0

    @property
    def family_size(self) -> int:
        """Bonferroni's m: the marker comparisons and the tier tests, one family."""
        return self.n_marker_comparisons + self.n_tier_comparisons

    @property
    def exact(self) -> bool:
        """Few queries: every sign flip is enumerated (``n_resamples`` is not used)."""
        return self.n_queries <= EXACT_MAX_N

    @property
    def flips(self) -> str:
        """How the p-values were computed, for the legend."""
        if self.exact:
            return f"exact: all 2^{self.n_queries} = {2 ** self.n_queries:,} sign flips"
        return f"{self.n_resamples:,} random sign flips, seed {self.seed}"

    @property
    def method(self) -> str:
        """The paragraph printed under the table (the legend adds the marker symbols)."""
        m, t = self.n_marker_comparisons, self.n_tier_comparisons
        return (
            f"Paired two-sided randomization test on the per-query {self.measure} values ({self.flips}), "
            f"α = {self.alpha:g}. Markers compare each entry with the leader and with the best baseline "
            f"({m} comparison{'' if m == 1 else 's'}). Tiers: going down the ranking, an entry starts a new tier "
            f"when it is significantly worse than its tier's best (the tier's first entry), otherwise it joins that "
            f"tier ({t} comparison{'' if t == 1 else 's'}). Markers and tiers are one family: Bonferroni over all "
            f"{self.family_size} (significant when p × {self.family_size} < {self.alpha:g}), so a pair compared for "
            "both gets one verdict."
        )

    def for_row(self, submission_id: int | None) -> dict | None:
        """What the template shows for a row: tier, its tier test and the two markers (None for rows not compared)."""
        if submission_id is None or submission_id not in self.tiers:
            return None
        return {
            "tier": self.tiers[submission_id],
            "tier_test": self.tier_tests.get(submission_id),
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


def _pair(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


def _approx_p(d: np.ndarray) -> float:
    """Normal approximation of the two-sided sign-flip p-value of differences ``d`` (to predict the walk only).

    Under random signs the sum of d has mean 0 and variance Σ d².
    """
    scale = math.sqrt(float(np.dot(d, d)))
    return float(erfc(abs(float(d.sum())) / (scale * math.sqrt(2)))) if scale > 0 else 1.0


def compute_significance(*, entries: list[tuple[int, bool, np.ndarray]], measure: str, alpha: float = ALPHA,
                         n_resamples: int | None = None, seed: int = SEED,
                         p_store: PValueStore | None = None) -> Significance:
    """Markers and tiers for ``entries`` = [(submission id, is baseline, per-query vector)] in rank order.

    No database: the vectors must be aligned on the same queries.
    ``n_resamples`` defaults to :func:`resamples_for` the larger family.
    ``p_store`` (a cache) remembers p-values by what they are a function of
    (:func:`p_value_name`), so a new entry on a large board costs the tests of
    its own pairs, not of every pair again; the outcome is the same with or
    without it.
    """
    ids = [e[0] for e in entries]
    vectors = {e[0]: np.asarray(e[2], dtype=np.float64) for e in entries}
    means = {i: float(v.mean()) if len(v) else 0.0 for i, v in vectors.items()}
    leader = ids[0] if ids else None
    baseline = next((e[0] for e in entries if e[1]), None)

    # The marker family, fixed before any test: unique pairs, in page order.
    marker_pairs: list[tuple[int, int]] = []
    for ref in (leader, baseline):
        if ref is not None:
            marker_pairs += [_pair(i, ref) for i in ids if i != ref]
    marker_pairs = list(dict.fromkeys(marker_pairs))
    n_tier = max(len(ids) - 1, 0)
    # One family for the markers and the tiers (the module docstring): one threshold, so one verdict per pair.
    family = len(marker_pairs) + n_tier
    if n_resamples is None:
        n_resamples = resamples_for(family, alpha=alpha)

    def adjusted(p: float) -> float:
        return min(1.0, p * family)

    def significant(p: float) -> bool:
        return p * family < alpha

    def starts_tier(p: float, i: int, head: int) -> bool:
        return significant(p) and means[i] < means[head]

    def predicted_walk(pos: int, head: int) -> list[tuple[int, int]]:
        """The tier pairs from ``ids[pos]`` on when ``head`` heads its tier, by the normal approximation."""
        pairs = []
        for q in range(pos, len(ids)):
            j = ids[q]
            pairs.append(_pair(head, j))
            # The normal approximation overstates p-values in the far tail, where the family's α / m lies:
            # predict a tier start from a p UNSURE times smaller, and test the pairs of the other branch too.
            if starts_tier(_approx_p(vectors[j] - vectors[head]) / UNSURE, j, head):
                pairs += [_pair(head, k) for k in ids[q + 1:q + 1 + MARGIN]]
                head = j
        return pairs

    p_cache: dict[tuple[int, int], float] = {}

    def test(pairs: list[tuple[int, int]]) -> None:
        """Test every pair not tested yet in one batch (each pair's p-value does not depend on the batch)."""
        missing = [key for key in dict.fromkeys(pairs) if key not in p_cache]
        if not missing:
            return
        names: dict[tuple[int, int], CacheKey] = {}
        if p_store is not None:
            names = {key: p_value_name(vectors[key[0]] - vectors[key[1]], n_resamples=n_resamples, seed=seed)
                     for key in missing}
            known = p_store.get_many(list(names.values()))
            p_cache.update({key: float(known[names[key]]) for key in missing if names[key] in known})
            missing = [key for key in missing if key not in p_cache]
            if not missing:
                return
        ps = randomization_tests(np.stack([vectors[a] for a, _ in missing]),
                                 np.stack([vectors[b] for _, b in missing]), n_resamples=n_resamples, seed=seed)
        p_cache.update(zip(missing, ps.tolist(), strict=True))
        if p_store is not None:
            p_store.set_many({names[key]: p for key, p in zip(missing, ps.tolist(), strict=True)}, CACHE_SECONDS)

    test(marker_pairs + (predicted_walk(1, leader) if leader is not None else []))

    # The pass down the ranking, on exact p-values only.
    tiers: dict[int, int] = {}
    tier_tests: dict[int, TierTest] = {}
    if ids:
        head, tier = ids[0], 1
        tiers[head] = tier
        for pos in range(1, len(ids)):
            i = ids[pos]
            key = _pair(i, head)
            if key not in p_cache:
                test([key] + predicted_walk(pos, head))
            p = p_cache[key]
            new_tier = starts_tier(p, i, head)
            tier_tests[i] = TierTest(head_id=head, p=p, p_adjusted=adjusted(p), new_tier=new_tier)
            if new_tier:
                head, tier = i, tier + 1
            tiers[i] = tier

    def marker(i: int, ref: int) -> Marker:
        p = p_cache[_pair(i, ref)]
        return Marker(reference_id=ref, p=p, p_adjusted=adjusted(p), significant=significant(p),
                      direction=_direction(vectors[i], vectors[ref]))

    return Significance(
        measure=measure,
        alpha=alpha,
        n_resamples=n_resamples,
        seed=seed,
        n_marker_comparisons=len(marker_pairs),
        n_tier_comparisons=n_tier,
        leader_id=leader,
        baseline_id=baseline,
        tiers=tiers,
        tier_tests=tier_tests,
        vs_leader={i: marker(i, leader) for i in ids if leader is not None and i != leader},
        vs_baseline={i: marker(i, baseline) for i in ids if baseline is not None and i != baseline},
        n_queries=len(next(iter(vectors.values()))) if vectors else 0,
    )


class PValueStore(Protocol):
    """Where p-values are remembered between renders: Django's cache has these two methods."""

    def get_many(self, keys: list[CacheKey]) -> dict[str, Any]: ...

    def set_many(self, data: dict[CacheKey, Any], timeout: int | None = ...) -> list[str]: ...


def p_value_name(d: np.ndarray, *, n_resamples: int, seed: int) -> CacheKey:
    """The cache name of a sign-flip p-value: it is a function of the differences, the flips and the seed only.

    (Not of the entries' ids, their rank or the batch they were tested in:
    ``evaluation.stats.randomization_tests``. A result rewritten in place gives
    other differences, so a name never points at a stale value.)
    """
    digest = hashlib.blake2b(np.ascontiguousarray(d, dtype=np.float64).tobytes(), digest_size=16).hexdigest()
    return cache_key(CacheKind.P_VALUE, n_resamples, seed, digest)


def _vectors(result_ids: list[int], measure: str) -> dict[int, tuple[list[str], np.ndarray]]:
    """submission id → (qids, vector of ``measure``) from the stored results (one query)."""
    out = {}
    for result in Result.objects.filter(pk__in=result_ids).only("pk", "submission_id", "per_query"):
        data = load_per_query(result, ("qids", measure))
        if measure in data and "qids" in data:
            out[result.submission_id] = ([str(q) for q in data["qids"]], np.asarray(data[measure], dtype=np.float64))
    return out


def leaderboard_significance(*, split: Split, measure: str | None = None,
                             board: PublicBoard | None = None) -> Significance | None:
    """Markers and tiers of the split's public leaderboard on ``measure`` (default: the primary one).

    The entries are the scored public rows and baselines of
    :func:`catalogue.selectors.leaderboard_rows` seen by an anonymous
    visitor (a user's own private rows get no markers: the cache is shared).
    Returns None when fewer than two entries have per-query vectors.
    """
    measure = resolve_sort(split.dataset, measure)
    key = cache_key(CacheKind.SIGNIFICANCE, measure, split=split)
    cached = cache.get(key)
    if cached is not None:
        return cached or None
    entries = (board or PublicBoard(split)).entries(measure)
    significance = (compute_significance(entries=entries, measure=measure, p_store=cache)
                    if len(entries) >= 2 else None)
    cache.set(key, significance or False, CACHE_SECONDS)
    return significance


class PublicBoard:
    """The split's public board as per-query vectors, read at most once per measure for one page.

    The markers and the power analysis both start from it: a page that
    computes both (after a new score, neither is cached) reads the stored
    results once.
    """

    def __init__(self, split: Split):
        self.split = split
        self._read: dict[str, list[tuple[int, bool, np.ndarray]]] = {}

    def entries(self, measure: str) -> list[tuple[int, bool, np.ndarray]]:
        if measure not in self._read:
            self._read[measure] = _public_entries(self.split, measure)
        return self._read[measure]


def _public_entries(split: Split, measure: str) -> list[tuple[int, bool, np.ndarray]]:
    """[(submission id, is baseline, per-query vector of ``measure``)] of the public board, in rank order.

    The scored public rows and baselines an anonymous visitor sees, aligned on
    the same queries (the current qrels version).
    """
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
        submission_id = row.submission_id
        assert submission_id is not None  # rows without a submission were left out above
        found = vectors.get(submission_id)
        if found is None:
            continue
        qids, vector = found
        if reference_qids is None:
            reference_qids = qids
        if qids != reference_qids:
            continue  # not scored on the same queries (cannot happen on one qrels version); no marker
        entries.append((submission_id, row.kind == "baseline", vector))
    return entries


def leaderboard_power(*, split: Split, board: PublicBoard | None = None) -> PowerAnalysis | None:
    """Statistical power of the split on its primary measure, from the per-query values of the public board.

    Topic-set-size design (Sakai 2016, :mod:`evaluation.power`): the minimum
    difference the paired t-test detects at α = 0.05 with power 0.8 on the
    split's topics, and the topics needed for 1 and 2 points. Cached like the
    markers (a new score bumps ``cache_version``). None with fewer than two
    entries or two topics.

    On a hidden split the variance comes from the **baselines** only (the
    curators' reference runs): estimated over every entry, it moved with each
    released entry (≈0.9 bit per entry on a 5-entry board), a channel from
    the attacker's own per-query values; from the baselines it changes only
    when a curator adds one.
    """
    measure = split.dataset.primary_measure
    hidden = disclosure.hidden(split)
    key = cache_key(CacheKind.POWER, measure, split=split)
    cached = cache.get(key)
    if cached is not None:
        return cached or None
    entries = (board or PublicBoard(split)).entries(measure)
    if hidden:
        entries = [e for e in entries if e[1]]
    analysis = None
    if len(entries) >= 2 and len(entries[0][2]) >= 2:
        analysis = power_analysis(np.stack([vector for _, _, vector in entries]))
    cache.set(key, analysis or False, CACHE_SECONDS)
    return analysis


def power_context(*, split: Split | None, board: PublicBoard | None = None) -> dict:
    """What the dataset page shows about the split's power (``power`` is None when it cannot be computed)."""
    if split is None or split.dataset.task != split.dataset.Task.RETRIEVAL or split.current_qrels_id is None:
        return {"power": None}
    analysis = leaderboard_power(split=split, board=board)
    if analysis is None:
        return {"power": None}
    dataset = split.dataset
    smallest, needed = analysis.min_detectable, analysis.topics_needed
    step = disclosure.rounding_step(split)
    if step is not None:
        # Coarse on a hidden split (docs/metrics.md): the released values' grid, topics to 2 significant digits.
        assert smallest is not None  # leaderboard_power needs two topics or more
        smallest = max(step, disclosure.on_grid(smallest, step))
        needed = {d: _two_digits(n) for d, n in needed.items()}
    return {"power": {
        "analysis": analysis,
        # The evaluated topics: none named while a shared task partitions the hidden split (the baselines' public
        # part; beside the split's topics it gives how many private topics have no judgment).
        "n_topics": disclosure.topic_count_shown(analysis.n_topics, split=split,
                                                 partitioned=partition_in_use(split_id=split.pk)),
        "measure": dataset.primary_measure,
        "from_baselines": step is not None,
        # In percent as every page prints it: two decimals, on a hidden split its grid's ("8 points", not "8.00").
        "min_detectable": _points_text(disclosure.formatter(split)(smallest)),
        "needed": [(f"{round(100 * d):g} point{'s' if round(100 * d) != 1 else ''}", f"{n:,}")
                   for d, n in needed.items()],
    }}


def _points_text(text: str) -> str:
    """A printed percentage as a difference in points ("8.02 points", "1 point")."""
    return f"{text} point{'' if text == '1' else 's'}"


def _two_digits(n: int) -> int:
    """``n`` rounded to two significant digits (6,544 → 6,500)."""
    scale = 10 ** max(len(str(n)) - 2, 0)
    return int(round(n / scale) * scale)


def significance_context(*, split: Split | None, rows: list, sort: str, sig: str | None,
                         board: PublicBoard | None = None) -> dict:
    """What the dataset page needs: the significance of ``sig`` (default: the ranked-by measure), rows annotated.

    Each row gets ``row.extra["sig"]`` (tier and markers, or None) and
    ``row.extra["tier_start"]`` (first row of a tier, drawn with a rule when
    the table is ranked by the same measure as the tiers).
    """
    if split is None or split.dataset.task != split.dataset.Task.RETRIEVAL:
        return {"significance": None, "sig_measure": None}
    # A hidden split: the primary measure only. Markers on a measure the Ladder never judged would be one more
    # bit per pair on numbers the hidden split does not release (docs/security.md).
    measures = disclosure.released_measures(split)
    measure = sig if sig in measures else (measures[0] if disclosure.hidden(split) else sort)
    significance = leaderboard_significance(split=split, measure=measure, board=board)
    # The markers are bands (significant or not); the p-values behind them are shown where disclosure allows,
    # and never reach the template where it does not.
    p_values = disclosure.shows(split, "p_values")
    previous_tier = None
    for row in rows:
        info = significance.for_row(row.submission_id) if significance is not None else None
        if info is not None and not p_values:
            info = _without_p_values(info)
        row.extra = {**row.extra, "sig": info, "tier_start": False}
        if info is not None:
            row.extra["tier_start"] = measure == sort and previous_tier is not None and info["tier"] != previous_tier
            previous_tier = info["tier"]
    return {"significance": significance, "sig_measure": measure, "sig_measures": measures,
            "sig_grouped": measure == sort, "sig_p_values": p_values}


def _without_p_values(info: dict) -> dict:
    """A row's significance without the p-values of its tests: their verdicts, directions and texts only."""
    def bare(test: Marker | TierTest | None) -> dict | None:
        if isinstance(test, Marker):
            return {"significant": test.significant, "direction": test.direction, "symbol": test.symbol,
                    "text": test.text}
        if isinstance(test, TierTest):
            return {"new_tier": test.new_tier}
        return None

    return {**info, "tier_test": bare(info["tier_test"]), "leader": bare(info["leader"]),
            "baseline": bare(info["baseline"])}
