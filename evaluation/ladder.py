"""Release rules for hidden splits: the Ladder and the coverage rule.

A leaderboard on hidden labels answers every submission with numbers, so a
participant who submits many crafted runs can turn it into an oracle for the
labels: two runs that differ in one query give that query's value from the
difference of their means. Two rules, both Django-free, keep the answers
coarse (the reasoning, and what remains possible, is in docs/security.md):

* :func:`ladder_step` — the Ladder (Blum & Hardt 2015, "The Ladder: A
  Reliable Leaderboard for Machine Learning Competitions", ICML). A new
  submission's score is released only when it is a significant improvement
  over the participant's current best on the hidden topics; otherwise the
  participant sees their best again. "Significant" is a one-sided paired
  sign-flip randomization test on the per-query values at level ``alpha``
  (seeded, exact for up to 16 queries), and the displayed value must also go
  up by at least one step of the display precision. A change confined to a
  handful of queries can never pass: with k changed queries the smallest
  attainable p-value is 2^-k, so at alpha = 0.05 at least five queries must
  all move the same way, and what is released is their rounded sum. A first
  submission is compared with an empty run (0 everywhere), so a run that
  scores on one topic only is not released either.
* :func:`ladder_step_macro_f1` — the same rule for macro-F1 (classification
  and NER), which is no mean over examples: the examples where the two
  prediction sets differ are swapped between them at random
  (:func:`macro_f1_improvement`), with the same bound of 2^-k for k changed
  examples.
* :func:`near_copy_of` — the near-copy rule: a run that repeats a reference
  run (a baseline's, or one of its own identity's earlier runs) on all but a
  few of the evaluated topics (or examples) gets no verdict at all. The
  verdict on "a known run plus four relevant documents the attacker knows plus
  one guess" read the guess's judgment, one per upload; what a near-copy is
  told depends on the runs alone, never on a judgment.
* :func:`coverage_check` — a run on a hidden split must rank documents for a
  share of the split's published topics (default 90%), and optionally at least
  a number of documents for each topic it covers, or it is refused before it
  costs a slot. A one-query run is a probe, not a system.

Both take plain sequences and mappings: the server, a worker and the tests
call them alike.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from .classification import FN, FP, TP, contributions
from .noisy_margin import Margin, noisy_margin
from .stats import EXACT_MAX_N, randomization_test

#: One-sided level of the Ladder's test.
ALPHA = 0.05
#: Display precision: scores are fractions shown with 4 decimals (or percent with 2), one step = 1e-4.
DECIMALS = 4
#: Sign flips of the randomization test (all 2^n when that is fewer: exact).
N_RESAMPLES = 10_000
SEED = 0
#: Share of the split's topics a run must rank documents for.
MIN_COVERAGE = 0.9
#: Topics named in a refusal, so the message stays readable.
EXAMPLES = 5


# --- the grid of released values ---------------------------------------------------------------------
# A released mean of N topics sits on a grid no finer than one topic's share of it, so that a crafted run
# whose other topics sit on a known lattice cannot decode its probes from the mean's digits
# (``submissions.disclosure`` applies it; docs/security.md has the arithmetic).

#: The range of every retrieval measure and of macro-F1 (fractions).
MEASURE_RANGE = 1.0


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


def macro_f1_step(*, n_examples: int, supports: Iterable[int], min_predicted: int = 1) -> float:
    """The grid of a released macro-F1: no finer than what one example's label can move it.

    Macro-F1 is the mean over L labels of F1_c = 2 TP_c / (P_c + G_c) (P_c examples predicted c, G_c holding
    it). With the predictions fixed, whether one example holds the label predicted for it moves TP_c by one,
    hence F1_c by 2 / (P_c + G_c) ≤ 2 / (m + G_c), m the fewest examples a released file may predict a label
    on (:func:`label_support_needed`); a wrong answer also counts against the label the example holds. So
    one example moves the mean by at most (2 / (m + G_a) + 2 / (m + G_b)) / L, a and b the two labels of
    smallest support: about 1/L for a rare label, far more than one example's share 1/N. The step is the
    smallest nice one at least that, and at least 1/N (``supports``: each gold label's count of examples).
    """
    counts = sorted(int(s) for s in supports)
    if not counts:
        return step_for(n_examples)
    m = max(1, int(min_predicted))
    smallest = counts[:2]
    moved = sum(2 / (m + g) for g in smallest) / len(counts)
    return nice_step(max(MEASURE_RANGE / max(1, int(n_examples)), min(MEASURE_RANGE, moved)))


def on_grid(value: float, step: float) -> float:
    """``value`` to the nearest multiple of ``step`` (halves up), as a clean float."""
    decimals = max(0, -math.floor(math.log10(step))) + 1
    return round(math.floor(float(value) / step + 0.5) * step, decimals)


#: Decimals of a percentage at full precision (a public split): what every page, export and the client print.
PERCENT_DECIMALS = 2


def grid_decimals(step: float | None) -> int:
    """Decimals a percentage on ``step`` (a fraction: 0.01 is whole points) needs; :data:`PERCENT_DECIMALS` at full
    precision (``step`` None). As many as the step's points have: 0 for 1, 2 or 5 points, 1 for 0.5, 2 for 0.25."""
    if step is None:
        return PERCENT_DECIMALS
    points = 100 * step
    return next((d for d in range(6) if abs(round(points, d) - points) < 1e-9), PERCENT_DECIMALS)


def percent_text(value: float | None, step: float | None = None) -> str:
    """A score (a fraction) as the site prints it, the one formatting of a score: in percent, on ``step``'s grid
    with its decimals ("84" on a 1-point grid, "84.5" on a 0.5 grid), two decimals at full precision ("51.33");
    an en dash when missing. Pages, home cards, CSV and LaTeX exports call it (through
    ``catalogue.models.format_percent`` and ``submissions.disclosure.formatter``); the client
    (``lexboard_cli.client.percent_text``, standard library only) has a twin tested against it."""
    if value is None:
        return "–"
    if step is None:
        return f"{100 * float(value):.{PERCENT_DECIMALS}f}"
    return f"{100 * on_grid(value, step):.{grid_decimals(step)}f}"


def round_score(value: float, decimals: int = DECIMALS) -> float:
    """A score as displayed (a fraction rounded to ``decimals``): what the pages and the API release."""
    return round(float(value), decimals)


def improvement_p_value(best: Sequence[float] | np.ndarray, new: Sequence[float] | np.ndarray, *, n_resamples: int = N_RESAMPLES,
                        seed: int = SEED) -> float:
    """One-sided paired randomization test of "``new`` is better than ``best``" (higher is better).

    Per-query differences ``new - best`` have their signs flipped at random
    (the leaderboard markers' own test, :func:`evaluation.stats.randomization_test`,
    one-sided, seeded); the p-value is the share of flipped sums at least as
    large as the observed one, (1 + hits) / (1 + ``n_resamples``). Exact (all
    2^n flips) for n ≤ ``evaluation.stats.EXACT_MAX_N`` queries. 1.0 when
    nothing differs. One matrix product: a judgment costs milliseconds, which
    matters because the replay on new judgments runs every result of a split
    in one transaction.
    """
    a = np.asarray(new, dtype=np.float64)
    b = np.asarray(best, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("the Ladder compares two per-query vectors of the same length (one value per topic)")
    if len(a) == 0 or not np.any(a != b):
        return 1.0
    return randomization_test(a, b, n_resamples=n_resamples, seed=seed, alternative="greater")


@dataclass(frozen=True)
class LadderDecision:
    """What a new submission on a hidden split releases.

    ``released``: the new score becomes the participant's best and is shown.
    ``shown``: the value to display (rounded), the new one when released,
    else the current best's. ``p_value`` is for the record (logs, curators),
    never for the participant: it is a function of per-query values.
    """

    released: bool
    shown: float
    p_value: float | None
    message: str
    #: The noisy margin's pass (``evaluation.noisy_margin``) when a draw was given: then the significance condition.
    margin: Margin | None = None


def ladder_step(*, best: Sequence[float] | None, new: Sequence[float], alpha: float = ALPHA,
                decimals: int = DECIMALS, n_resamples: int = N_RESAMPLES, seed: int = SEED,
                fmt: Callable[[float], str] | None = None,
                grid: Callable[[float], float] | None = None,
                new_shown: float | None = None, best_shown: float | None = None,
                start_name: str = "", draw: float | None = None) -> LadderDecision:
    """Decide whether ``new`` (per-query values on the hidden topics) is released over ``best``.

    ``best`` is the per-query vector of the participant's current best on the
    same topics in the same order, or None for their first submission, which
    is held to the same rule against an empty run (0 on every topic): a probe
    that scores on fewer than five topics is never released, not even first.
    A run is released when its displayed (rounded) mean is higher than the
    best's and the one-sided paired randomization test gives p < ``alpha``.
    ``fmt`` formats a value for the message (default: ``decimals`` decimals). ``grid`` puts a mean where
    it is released (the server passes a hidden split's grid, ``submissions.disclosure``); by default it is
    rounded to ``decimals``. ``new_shown``/``best_shown``: the released values when the caller stored them
    (the server: each result's stored mean on its grid, the one value every page shows), so the Ladder
    compares exactly what is shown, not a mean summed again in another order. ``start_name``: what a first
    run is compared with when ``best`` is not the participant's own (the best baseline's vector), named in
    the message; without it a first run is compared with an empty run. ``draw``: the upload's uniform noise draw
    (a hidden split's server derives it from the upload's content, ``evaluation.noisy_margin``); with it the
    significance condition is the noisy margin on topics improved − worsened instead of ``p < alpha`` (the
    p-value is still returned, for the record), and the message is the same whichever condition failed.
    """
    shown = grid or (lambda v: round_score(v, decimals))
    new_values = np.asarray(new, dtype=np.float64)
    show = fmt or (lambda v: f"{v:.{decimals}f}")
    first = best is None or bool(start_name)
    best_values = np.zeros_like(new_values) if best is None else np.asarray(best, dtype=np.float64)
    if best_values.shape != new_values.shape:
        raise ValueError("the Ladder compares two per-query vectors of the same length (one value per topic)")
    if new_shown is None:
        new_shown = shown(float(new_values.mean()) if len(new_values) else 0.0)
    if best_shown is None:
        best_shown = shown(float(best_values.mean()) if len(best_values) else 0.0)
    p = improvement_p_value(best_values, new_values, n_resamples=n_resamples, seed=seed)
    margin = (noisy_margin(best=best_values.tolist(), new=new_values.tolist(), draw=draw) if draw is not None
              else None)
    return _decision(first=first, new_shown=new_shown, best_shown=best_shown, p=p, alpha=alpha, show=show,
                     margin=margin,
                     too_few=("too few topics improve on it, or the shown value does not go up a step" if start_name
                              else "it scores above 0 on too few of the split's topics"),
                     start=start_name or "an empty run")


def _decision(*, first: bool, new_shown: float, best_shown: float, p: float, alpha: float,
              show: Callable[[float], str],
              too_few: str = "it scores above 0 on too few of the split's topics",
              start: str = "an empty run", margin: Margin | None = None) -> LadderDecision:
    significant = margin.passed if margin is not None else p < alpha
    if new_shown > best_shown and significant:
        message = (f"Released: your first score here, {show(new_shown)}." if first else
                   f"Released: a significant improvement over your best ({show(best_shown)}), now {show(new_shown)}.")
        return LadderDecision(True, new_shown, p, message, margin)
    if first:
        return LadderDecision(False, best_shown, p, "Not released: this run is not a significant improvement over "
                                                    f"{start} ({too_few}).", margin)
    return LadderDecision(False, best_shown, p, f"Not a significant improvement over your best "
                                                f"({show(best_shown)}); your best stays on the leaderboard.", margin)


# --- corpus-level measures: macro-F1 ---------------------------------------------------------------

#: Values of a block of swaps (rows × max(differing examples, moved counts)): about 8 MB per array of it.
_SWAP_BLOCK_VALUES = 1_000_000


def _f1_sum_present(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of per-label counts (… × labels × (TP, FP, FN)): the sum of the labels' F1 and how many labels
    count (any count at all), as ``scores_from_counts`` averages them."""
    tp, fp, fn = counts[..., TP], counts[..., FP], counts[..., FN]
    denominator = 2 * tp + fp + fn
    f1 = np.divide(2 * tp, denominator, out=np.zeros_like(denominator, dtype=np.float64), where=tp > 0)
    return f1.sum(axis=-1), (denominator > 0).sum(axis=-1)


def _macro(f1_sum: np.ndarray, present: np.ndarray) -> np.ndarray:
    macro: np.ndarray = np.divide(f1_sum, present, out=np.zeros(np.shape(f1_sum)), where=present > 0)
    return macro


def macro_f1_improvement(*, task: str, gold: Sequence[object], best: Sequence[object] | None, new: Sequence[object],
                         n_resamples: int = N_RESAMPLES, seed: int = SEED) -> tuple[float, float, float]:
    """(p, best's macro-F1, new's) of the one-sided paired test of "``new`` predicts better than ``best``".

    Macro-F1 is no mean over examples, so the Ladder's sign flips become swaps
    (approximate randomization, Noreen 1989; Yeh 2000): under the null
    hypothesis each example's two predictions are exchangeable, so the
    examples where they differ are swapped between the two systems at random
    and the difference of the two macro-F1 recomputed; p is the share at least
    as large as the observed one. Exact (all 2^k swaps) for k ≤
    ``evaluation.stats.EXACT_MAX_N`` differing examples, else ``n_resamples``
    seeded random swaps, (1 + hits) / (1 + n_resamples). As with the sign
    flips, a change confined to k examples can reach no p below 2^-k: at
    alpha = 0.05 five examples must all help. ``best`` None is no prediction
    at all (a first run against an empty one). Each example's counts come from
    :func:`evaluation.classification.contributions`; a swap moves them from
    one system's totals to the other's.
    """
    if len(gold) != len(new) or (best is not None and len(best) != len(new)):
        raise ValueError("the Ladder compares two prediction sets answering the same examples")
    index: dict[str, int] = {}
    rows_best: list[list[tuple[int, int]]] = []
    rows_new: list[list[tuple[int, int]]] = []
    for i, g in enumerate(gold):
        b = best[i] if best is not None else None
        rows_best.append([(index.setdefault(label, len(index)), column) for label, column in contributions(task, g, b)])
        rows_new.append([(index.setdefault(label, len(index)), column) for label, column in contributions(task, g, new[i])])
    n_labels = len(index)

    def total_of(rows: list[list[tuple[int, int]]]) -> np.ndarray:
        out = np.zeros((n_labels, 3), dtype=np.int64)
        for row in rows:
            for label, column in row:
                out[label, column] += 1
        return out

    total_best, total_new = total_of(rows_best), total_of(rows_new)
    f1_best, f1_new = (float(v) for v in _macro(*_f1_sum_present(np.stack([total_best, total_new]))))
    # A swap of example i gives new its best-side counts: new + (b_i - n_i), best - (b_i - n_i). Each example
    # moves a few counts only, so the moves are kept per count (label, column): the examples and amounts.
    moves: dict[int, dict[int, int]] = {}
    k = 0
    for i in range(len(gold)):
        change: Counter[int] = Counter(label * 3 + column for label, column in rows_best[i])
        change.subtract(label * 3 + column for label, column in rows_new[i])
        if not any(change.values()):
            continue
        for flat, amount in change.items():
            if amount:
                moves.setdefault(flat, {})[k] = amount
        k += 1
    if k == 0:
        return 1.0, f1_best, f1_new
    # Only the labels some swap moves are scored per swap; the others' F1 is the same in every swap.
    moved_labels = sorted({flat // 3 for flat in moves})
    slot = {label: j for j, label in enumerate(moved_labels)}
    by_count = [(3 * slot[flat // 3] + flat % 3, np.fromiter(m.keys(), dtype=np.int64),
                 np.fromiter(m.values(), dtype=np.float64)) for flat, m in moves.items()]
    still = np.ones(n_labels, dtype=bool)
    still[moved_labels] = False
    fixed_new, fixed_best = _f1_sum_present(total_new[still]), _f1_sum_present(total_best[still])
    base_new, base_best = total_new[moved_labels], total_best[moved_labels]
    observed = f1_new - f1_best
    threshold = observed - 1e-12
    per_block = max(1, _SWAP_BLOCK_VALUES // max(k, 3 * len(moved_labels)))
    exact = k <= EXACT_MAX_N
    total_rows = 2 ** k if exact else n_resamples
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, total_rows, per_block):
        rows = min(per_block, total_rows - start)
        if exact:
            block = ((np.arange(start, start + rows)[:, None] >> np.arange(k)) & 1).astype(np.int8)
        else:
            block = rng.integers(0, 2, size=(rows, k), dtype=np.int8)
        moved = np.zeros((rows, 3 * len(moved_labels)))
        for column, examples, amounts in by_count:
            moved[:, column] = block[:, examples] @ amounts
        moved3 = moved.reshape(rows, len(moved_labels), 3)
        sum_new, present_new = _f1_sum_present(base_new + moved3)
        sum_best, present_best = _f1_sum_present(base_best - moved3)
        stats = (_macro(sum_new + fixed_new[0], present_new + fixed_new[1])
                 - _macro(sum_best + fixed_best[0], present_best + fixed_best[1]))
        hits += int(np.count_nonzero(stats >= threshold))
    p = hits / total_rows if k <= EXACT_MAX_N else (1 + hits) / (1 + total_rows)
    return float(p), f1_best, f1_new


def ladder_step_macro_f1(*, task: str, gold: Sequence[object], best: Sequence[object] | None, new: Sequence[object],
                         alpha: float = ALPHA, decimals: int = DECIMALS, n_resamples: int = N_RESAMPLES,
                         seed: int = SEED, fmt: Callable[[float], str] | None = None,
                         start: Sequence[object] | None = None, start_name: str = "",
                         grid: Callable[[float], float] | None = None,
                         new_shown: float | None = None, best_shown: float | None = None,
                         draw: float | None = None) -> LadderDecision:
    """:func:`ladder_step` for macro-F1 (classification and NER): the swap test of :func:`macro_f1_improvement`.

    ``best``/``new``: the answers of the two prediction sets in the order of ``gold``; ``best`` None for a first
    run, which is held to the same rule against ``start`` (named ``start_name`` in the message, its value never
    shown) or, without one, against no prediction at all. ``new_shown``/``best_shown``: the stored released
    values, as in :func:`ladder_step`. ``draw``: the noisy margin's, as in :func:`ladder_step`, on examples
    improved − worsened (:func:`example_scores`).
    """
    first = best is None
    against = best if best is not None else start
    p, f1_best, f1_new = macro_f1_improvement(task=task, gold=gold, best=against, new=new, n_resamples=n_resamples,
                                              seed=seed)
    show = fmt or (lambda v: f"{v:.{decimals}f}")
    shown = grid or (lambda v: round_score(v, decimals))
    margin = (noisy_margin(best=example_scores(task=task, gold=gold, answers=against),
                           new=example_scores(task=task, gold=gold, answers=new), draw=draw)
              if draw is not None else None)
    return _decision(first=first, new_shown=shown(f1_new) if new_shown is None else new_shown,
                     best_shown=shown(f1_best) if best_shown is None else best_shown, p=p, alpha=alpha, show=show,
                     margin=margin,
                     too_few=("it predicts too few of the split's examples better" if start is not None and first
                              else "it answers too few of the split's examples right"),
                     start=start_name if start is not None and first else "an empty run")


def example_scores(*, task: str, gold: Sequence[object], answers: Sequence[object] | None) -> list[float]:
    """Per example, true positives − false positives − false negatives of ``answers`` (None: no prediction at
    all): higher is better, so the noisy margin counts the examples a file answers better or worse."""
    rows = [None] * len(gold) if answers is None else answers
    scores = []
    for g, a in zip(gold, rows, strict=True):
        counts = Counter(column for _, column in contributions(task, g, a))
        scores.append(float(counts[TP] - counts[FP] - counts[FN]))
    return scores


def majority_start(gold: Sequence[object]) -> list[object] | None:
    """The first run's reference on a hidden split without a baseline: the most frequent gold answer everywhere.

    A prediction file that every participant gets for free. Against it, a constant file is no improvement,
    and neither is "the most frequent label everywhere but a few chosen examples" unless at least five of
    them move the right way (the swap test's floor of 2^-k). For single- and multi-label answers (a label, a
    tuple of labels); None when there is none. NER has its own free file, the empty prediction (no entity).
    """
    try:
        counts = Counter(gold)
    except TypeError:
        return None
    if not counts:
        return None
    top = max(counts.items(), key=lambda kv: (kv[1], str(kv[0])))[0]
    return [top] * len(gold)


#: A label a file predicts on a hidden split must be predicted for at least this many examples.
MIN_LABEL_SUPPORT = 5
#: How many labels a support refusal names, and the longest label name it quotes (cut there): it fits the field.
LABELS_NAMED, LABEL_NAMED_MAX = 3, 20


def label_support_needed(*, n_examples: int, n_labels: int, min_support: int = MIN_LABEL_SUPPORT) -> int:
    """The fewest examples a released file may predict a label on: ``min_support``, scaled down on tiny splits
    to a half of an even share (examples / (2 × labels)), so that a fair system can always pass it there."""
    return max(1, min(min_support, n_examples // max(1, 2 * n_labels)))


def label_support_refusal(*, answers: Sequence[object], n_labels: int, min_support: int = MIN_LABEL_SUPPORT
                          ) -> str | None:
    """Why a prediction file is not released on a hidden split for predicting a label on too few examples.

    Macro-F1 weighs every label alike, so a label predicted on k examples moves the released value by
    about 2 / (labels × (k + its gold count)) per right answer among them: a file that predicts a label on a
    handful of chosen examples reads how many of them hold it, from one released value. Every label a file
    predicts must therefore be predicted for at least ``min_support`` examples, scaled down on tiny splits
    to a half of an even share (examples / (2 × labels)), so that a fair system can always pass it there.
    ``answers``: one label (single-label) or a sequence of labels (multi-label) per example.
    """
    counts: Counter[str] = Counter()
    for answer in answers:
        if isinstance(answer, str | int):
            counts[str(answer)] += 1
        elif answer is not None:
            counts.update(str(label) for label in cast("Iterable[object]", answer))
    needed = label_support_needed(n_examples=len(answers), n_labels=n_labels, min_support=min_support)
    thin = sorted((label, n) for label, n in counts.items() if n < needed)
    if not thin:
        return None
    # Short, and each label name cut, so that the message fits the stored field (``Result.ladder_message``, 300).
    named = ", ".join(f"{label[:LABEL_NAMED_MAX]!r} on {n}" for label, n in thin[:LABELS_NAMED])
    more = f" and {len(thin) - LABELS_NAMED:,} more" if len(thin) > LABELS_NAMED else ""
    return (f"Not released: on this hidden split a predicted label needs at least {needed} examples (fewer would tell "
            f"how many of them hold it); this file predicts {named}{more}. Predict it on more examples, or not at all.")


# --- coverage ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Coverage:
    """How much of a split a run covers; ``refusal`` is None when the run may be scored."""

    n_topics: int
    n_covered: int
    thin: tuple[str, ...]  # covered topics with fewer documents than asked, in the split's order
    refusal: str | None

    @property
    def share(self) -> float:
        return self.n_covered / self.n_topics if self.n_topics else 1.0


def _examples(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:EXAMPLES])
    return shown + (f" and {len(ids) - EXAMPLES:,} more" if len(ids) > EXAMPLES else "")


def coverage_check(*, topic_ids: Iterable[str], docs_per_topic: Mapping[str, int], min_share: float = MIN_COVERAGE,
                   min_docs: int = 0) -> Coverage:
    """Check that a run covers enough of a split's published topics to be scored on a hidden split.

    ``topic_ids``: the split's published topics (never the qrels: which
    topics have relevant documents is itself hidden). ``docs_per_topic``: the
    documents the whole run ranks per topic (topics outside the split are
    ignored). Refused when fewer than ``min_share`` of the topics have at
    least one document, or, with ``min_docs`` > 0, when a covered topic has
    fewer than ``min_docs``. The refusal names the rule, the counts and
    examples of the topics to add, so the participant can fix the file.
    """
    topics = list(dict.fromkeys(str(t) for t in topic_ids))
    counts = {str(q): int(n) for q, n in docs_per_topic.items()}
    covered = [t for t in topics if counts.get(t, 0) > 0]
    missing = [t for t in topics if counts.get(t, 0) <= 0]
    thin = tuple(t for t in covered if min_docs > 0 and counts[t] < min_docs)
    n, k = len(topics), len(covered)
    needed = int(np.ceil(min_share * n - 1e-9))
    refusal = None
    if k < needed:
        refusal = (
            f"This run ranks documents for {k:,} of the split's {n:,} topics ({100 * k / n:.0f}%); runs on a "
            f"hidden split must cover at least {100 * min_share:.0f}% of them ({needed:,} topics). Add rankings "
            f"for the missing topics ({_examples(missing)}): scores are only released for runs over the whole "
            "split, so that no submission can probe single questions."
        )
    elif thin:
        refusal = (
            f"{len(thin):,} of the {k:,} topics this run covers have fewer than {min_docs:,} documents "
            f"({_examples([f'{t}: {counts[t]:,}' for t in thin])}); this split asks for at least {min_docs:,} "
            "ranked documents per topic. Return a longer ranking for them."
        )
    return Coverage(n_topics=n, n_covered=k, thin=thin, refusal=refusal)


# --- the near-copy rule -------------------------------------------------------------------------------
# The Ladder's verdict is itself an answer: a known run (a baseline's ranking, or the participant's own earlier
# run) plus k - 1 topics improved with documents the attacker knows to be relevant plus one guessed document on a
# k-th topic is released exactly when the guess is relevant (k = 5 at alpha 0.05). A run that changes fewer than
# ``near_copy_needed`` of the evaluated topics (examples) of every reference gets no verdict: neither released
# nor "not an improvement", but told it is a near-copy, which the runs alone decide (docs/security.md).

#: A verdict needs at least this many changed topics (examples) from every reference run ...
NEAR_COPY_MIN = 10
#: ... and at least this share of the evaluated ones (never more than all of them).
NEAR_COPY_SHARE = 0.1


def near_copy_needed(n_units: int) -> int:
    """How many of ``n_units`` evaluated topics (examples) a run must change from every reference to be judged."""
    return min(int(n_units), max(NEAR_COPY_MIN, math.ceil(NEAR_COPY_SHARE * n_units)))


def topk_fingerprints(ranked: Mapping[str, Sequence[str]], k: int) -> dict[str, str]:
    """Per topic, a digest of the set of its first ``k`` documents (``ranked``: docids best first).

    A set, not a list: reordering a topic's top ``k`` is no change (a reorder of non-relevant documents would
    otherwise be a free way out of the rule). ``k``: the primary measure's cutoff.
    """
    return {qid: hashlib.sha256("\n".join(sorted(set(docids[:k]))).encode()).hexdigest()[:16]
            for qid, docids in ranked.items()}


def answer_fingerprints(ids: Sequence[str], answers: Sequence[object]) -> dict[str, str]:
    """Per example, its answer as a comparable string (a label, a set of labels, a tag sequence)."""
    return {i: json.dumps(a if isinstance(a, str | int | float) or a is None else sorted(a, key=str)
                          if isinstance(a, set | frozenset) else list(cast("Iterable[object]", a)), default=str)
            for i, a in zip(ids, answers, strict=True)}


@dataclass(frozen=True)
class NearCopy:
    """A run that repeats ``reference`` on all but ``changed`` of the evaluated ``unit`` (``needed`` to be judged)."""

    reference: str
    changed: int
    needed: int
    unit: str = "topics"

    def message(self) -> str:
        return (f"No verdict: this run repeats {self.reference} on all but {self.changed} of the evaluated "
                f"{self.unit}, and the Ladder judges a run only when it changes at least {self.needed} of them "
                f"(its top documents, or its answers). A verdict on a few changed {self.unit} would tell their "
                f"hidden judgments; this answer depends on the runs alone. The run counts against your quota; your "
                f"best stays on the leaderboard.")


def near_copy_of(*, new: Mapping[str, str], references: Mapping[str, Mapping[str, str]], units: Sequence[str],
                 unit: str = "topics") -> NearCopy | None:
    """The reference ``new`` repeats most closely when it changes fewer than ``near_copy_needed`` of ``units``.

    ``new`` and each reference map a unit (topic id, example id) to its fingerprint (:func:`topk_fingerprints`,
    :func:`answer_fingerprints`); a unit missing from one side counts as changed when the other has it.
    ``references``: named reference runs (the name goes into the message). None: judge it.
    """
    needed = near_copy_needed(len(units))
    closest: NearCopy | None = None
    for name, reference in references.items():
        changed = sum(1 for u in units if new.get(u) != reference.get(u))
        if changed < needed and (closest is None or changed < closest.changed):
            closest = NearCopy(name, changed, needed, unit)
    return closest
