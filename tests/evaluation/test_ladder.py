"""The Ladder and the coverage rule of hidden splits, on hand-made vectors (evaluation/ladder.py)."""

from __future__ import annotations

import itertools
import time
import tracemalloc

import numpy as np
import pytest

from evaluation.classification import multi_label_f1, ner_f1, single_label_f1
from evaluation.ladder import (
    coverage_check,
    improvement_p_value,
    label_support_needed,
    ladder_step,
    ladder_step_macro_f1,
    macro_f1_improvement,
    macro_f1_step,
    round_score,
)


def test_it_releases_a_first_submission_rounded():
    decision = ladder_step(best=None, new=[0.5, 0.25, 0.123456, 0.1, 0.2, 0.3])
    assert decision.released
    assert decision.shown == 0.2456  # mean 0.245576 shown with 4 decimals
    assert decision.p_value == pytest.approx(1 / 64)  # exact: 6 positive values against an empty run
    assert decision.message == "Released: your first score here, 0.2456."


def test_it_does_not_release_a_first_submission_that_scores_on_one_topic():
    """The single-query probe as a first submission: told apart from an empty run by one topic only."""
    new = np.zeros(50)
    new[3] = 1.0
    decision = ladder_step(best=None, new=new)
    assert not decision.released and decision.shown == 0.0
    assert decision.message.startswith("Not released: this run is not a significant improvement over an empty run")


def test_it_releases_a_clear_improvement():
    best = [0.2] * 20
    new = [0.6] * 20
    decision = ladder_step(best=best, new=new)
    assert decision.released
    assert decision.shown == 0.6
    assert decision.p_value < 0.05
    assert "significant improvement over your best (0.2000)" in decision.message


def test_it_refuses_a_change_in_one_query_however_large():
    """The differencing probe: the same run with one query changed is never released, in either direction."""
    rng = np.random.default_rng(3)
    best = rng.random(40)
    for value in (0.0, 1.0):
        new = best.copy()
        new[7] = value
        decision = ladder_step(best=best, new=new)
        assert not decision.released
        assert decision.shown == round_score(best.mean())  # the participant sees their best again
        assert decision.message == f"Not a significant improvement over your best ({best.mean():.4f}); " \
                                   "your best stays on the leaderboard."


def test_it_needs_five_queries_moving_the_same_way():
    """With k changed queries the smallest one-sided p is 2^-k: four cannot pass alpha = 0.05, five can."""
    best = np.zeros(30)
    four = best.copy()
    four[:4] = 1.0
    five = best.copy()
    five[:5] = 1.0
    assert improvement_p_value(best, four) == pytest.approx(1 / 16, abs=0.01)
    assert not ladder_step(best=best, new=four).released
    assert improvement_p_value(best, five) == pytest.approx(1 / 32, abs=0.01)
    assert ladder_step(best=best, new=five).released


def test_it_is_exact_for_few_queries():
    # 3 queries, all up: 1 of the 2^3 sign patterns is as large -> p = 1/8 exactly.
    assert improvement_p_value([0.1, 0.2, 0.3], [0.2, 0.3, 0.4]) == pytest.approx(1 / 8)


def test_it_counts_every_sign_pattern_at_least_as_good_for_up_to_16_queries():
    rng = np.random.default_rng(4)
    for n in (6, 11, 16):
        best, new = rng.random(n), rng.random(n)
        d = new - best
        patterns = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2 - 1
        expected = np.count_nonzero(patterns @ d >= d.sum() - 1e-12) / 2 ** n
        assert improvement_p_value(best, new) == pytest.approx(expected, abs=1e-12)


def test_a_judgment_is_cheap_on_a_large_split():
    """The replay on new judgments runs every result of a split in one transaction, under the split's lock:
    a judgment must cost milliseconds, not seconds (scipy's generic permutation test took 2.3 s on 886 topics)."""
    rng = np.random.default_rng(5)
    best = rng.random(886)
    new = np.clip(best + rng.normal(0.01, 0.05, 886), 0, 1)
    started = time.perf_counter()
    for _ in range(3):
        ladder_step(best=best, new=new)
    assert time.perf_counter() - started < 3.0


def test_it_refuses_an_improvement_too_small_to_show():
    """Significant but invisible at the display precision: not released (the shown value must move)."""
    best = np.full(200, 0.5)
    new = best + 1e-6
    assert improvement_p_value(best, new) < 0.05
    decision = ladder_step(best=best, new=new)
    assert not decision.released
    assert decision.shown == 0.5


def test_it_refuses_a_worse_run():
    decision = ladder_step(best=[0.9] * 10, new=[0.1] * 10)
    assert not decision.released and decision.shown == 0.9


def test_it_is_deterministic():
    rng = np.random.default_rng(0)
    best, new = rng.random(300), rng.random(300)
    assert improvement_p_value(best, new) == improvement_p_value(best, new)


def test_it_refuses_vectors_of_different_lengths():
    with pytest.raises(ValueError, match="same length"):
        ladder_step(best=[0.1, 0.2], new=[0.1])


def test_it_formats_the_message_as_the_dataset_shows_values():
    decision = ladder_step(best=[0.5] * 10, new=[0.5] * 10, fmt=lambda v: f"{100 * v:.2f}")
    assert "(50.00)" in decision.message


# --- coverage ------------------------------------------------------------------------------


TOPICS = [f"q{i}" for i in range(1, 21)]


def test_it_accepts_a_run_over_the_whole_split():
    coverage = coverage_check(topic_ids=TOPICS, docs_per_topic={t: 100 for t in TOPICS})
    assert coverage.refusal is None and coverage.share == 1.0


def test_it_refuses_a_one_query_run_naming_what_to_add():
    coverage = coverage_check(topic_ids=TOPICS, docs_per_topic={"q3": 1000, "unknown": 50})
    assert coverage.n_covered == 1
    assert coverage.refusal.startswith("This run ranks documents for 1 of the split's 20 topics (5%)")
    assert "at least 90% of them (18 topics)" in coverage.refusal
    assert "(q1, q2, q4, q5, q6 and 14 more)" in coverage.refusal


def test_it_accepts_exactly_the_share():
    counts = {t: 10 for t in TOPICS[:18]}
    assert coverage_check(topic_ids=TOPICS, docs_per_topic=counts).refusal is None
    del counts["q18"]
    assert coverage_check(topic_ids=TOPICS, docs_per_topic=counts).refusal is not None


def test_it_checks_documents_per_topic_only_when_asked():
    counts = {t: 100 for t in TOPICS}
    counts["q5"] = 19
    assert coverage_check(topic_ids=TOPICS, docs_per_topic=counts).refusal is None
    coverage = coverage_check(topic_ids=TOPICS, docs_per_topic=counts, min_docs=20)
    assert coverage.thin == ("q5",)
    assert coverage.refusal == ("1 of the 20 topics this run covers have fewer than 20 documents (q5: 19); this "
                                "split asks for at least 20 ranked documents per topic. Return a longer ranking "
                                "for them.")


def test_it_takes_a_lower_share():
    counts = {t: 1 for t in TOPICS[:10]}
    assert coverage_check(topic_ids=TOPICS, docs_per_topic=counts, min_share=0.5).refusal is None


# --- macro-F1 (classification and NER): swaps instead of sign flips ----------------------------------

LABELS = ["civil", "tax", "criminal", "labour"]


def _swap_p_by_hand(task, gold, best, new):
    """The swap test's exact p-value from the task's own macro-F1 over every swap of the differing examples."""
    measure = {"single": single_label_f1, "multi": multi_label_f1, "ner": ner_f1}[task]
    differ = [i for i in range(len(gold)) if best[i] != new[i]]
    observed = measure(gold, new)[0] - measure(gold, best)[0]
    hits = 0
    for mask in itertools.product([False, True], repeat=len(differ)):
        a, b = list(new), list(best)
        for i, swap in zip(differ, mask, strict=True):
            if swap:
                a[i], b[i] = best[i], new[i]
        hits += measure(gold, a)[0] - measure(gold, b)[0] >= observed - 1e-12
    return hits / 2 ** len(differ)


def test_one_changed_prediction_is_never_released_however_it_helps():
    gold = [LABELS[i % 4] for i in range(40)]
    best = ["civil"] * 40
    new = list(best)
    new[1] = gold[1]  # right now, and the only right "tax": that label's F1 goes from 0 up
    decision = ladder_step_macro_f1(task="single", gold=gold, best=best, new=new)
    assert not decision.released and decision.p_value == 0.5
    assert decision.shown == round_score(single_label_f1(gold, best)[0])


def test_five_changed_predictions_that_all_help_are_released():
    gold = [LABELS[i % 4] for i in range(40)]
    best = ["civil"] * 40
    new = list(best)
    for i in (1, 2, 3, 5, 6):
        new[i] = gold[i]
    decision = ladder_step_macro_f1(task="single", gold=gold, best=best, new=new)
    assert decision.released and decision.p_value == 1 / 32


@pytest.mark.parametrize("task", ["single", "multi", "ner"])
@pytest.mark.parametrize("seed", range(6))
def test_the_swap_test_equals_every_swap_scored_by_the_tasks_own_measure(task, seed):
    rng = np.random.default_rng(seed)
    n = 12

    def answer():
        if task == "single":
            return LABELS[rng.integers(0, 4)]
        if task == "multi":
            return sorted({LABELS[j] for j in rng.integers(0, 4, size=rng.integers(0, 3))})
        return [["O", "B-PER", "I-PER", "B-ORG"][j] for j in rng.integers(0, 4, size=4)]

    gold = [answer() for _ in range(n)]
    best = [answer() for _ in range(n)]
    new = [g if rng.random() < 0.5 else b for g, b in zip(gold, best, strict=True)]
    for i in rng.integers(0, n, size=3):
        new[i] = answer()
    p, f1_best, f1_new = macro_f1_improvement(task=task, gold=gold, best=best, new=new)
    measure = {"single": single_label_f1, "multi": multi_label_f1, "ner": ner_f1}[task]
    assert f1_best == pytest.approx(measure(gold, best)[0], abs=1e-12)
    assert f1_new == pytest.approx(measure(gold, new)[0], abs=1e-12)
    assert p == pytest.approx(_swap_p_by_hand(task, gold, best, new), abs=1e-12)


def test_a_first_prediction_set_is_tested_against_no_prediction_at_all():
    gold = [LABELS[i % 4] for i in range(40)]
    probe = ["labour"] * 40  # right on the ten "labour" examples only: a label's worth of examples, released
    assert ladder_step_macro_f1(task="single", gold=gold, best=None, new=probe).released
    one = ["none-of-these"] * 40
    one[0] = gold[0]
    decision = ladder_step_macro_f1(task="single", gold=gold, best=None, new=one)
    assert not decision.released and "too few of the split's examples" in decision.message


def test_the_swap_test_is_seeded_beyond_sixteen_differences():
    rng = np.random.default_rng(3)
    gold = [LABELS[i] for i in rng.integers(0, 4, size=300)]
    best = [LABELS[i] for i in rng.integers(0, 4, size=300)]
    new = [g if rng.random() < 0.4 else b for g, b in zip(gold, best, strict=True)]
    first = macro_f1_improvement(task="single", gold=gold, best=best, new=new)
    assert first == macro_f1_improvement(task="single", gold=gold, best=best, new=new)
    assert first[0] == pytest.approx(1 / 10_001)


def test_the_swap_test_holds_little_memory_with_many_labels():
    """Exact over 2^16 swaps of 16 changed predictions among 2,000 labels: the swaps go in blocks, and only the
    labels they move are scored per swap (the whole label set per swap row held about 1 GB)."""
    labels = [f"label-{i}" for i in range(2000)]
    rng = np.random.default_rng(2)
    gold = [labels[i] for i in rng.integers(0, len(labels), 5000)]
    new = list(gold)
    for i in range(16):
        new[i] = labels[(labels.index(gold[i]) + 1) % len(labels)]
    tracemalloc.start()
    try:
        p, _, _ = macro_f1_improvement(task="single", gold=gold, best=gold, new=new)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert p == 1.0  # sixteen changes for the worse
    assert peak < 60e6, f"{peak / 1e6:.0f} MB"


# --- the grid of a released macro-F1 ---------------------------------------------------------------


def _respects_support(pred: list[str], m: int) -> bool:
    counts: dict[str, int] = {}
    for label in pred:
        counts[label] = counts.get(label, 0) + 1
    return all(n >= m for n in counts.values())


@pytest.mark.parametrize("seed", range(40))
def test_one_examples_label_moves_macro_f1_by_at_most_the_grid_step(seed):
    """The grid of a classification split is no finer than what one example's label moves macro-F1: a file whose
    other examples are known cannot read one example's label from the released value (rounding to a step at
    least that move), where 1/N (the old grid) was finer than one example's move for a rare label."""
    rng = np.random.default_rng(seed)
    n, labels = int(rng.integers(12, 60)), [f"l{i}" for i in range(int(rng.integers(2, 6)))]
    gold = [labels[i % len(labels)] for i in range(len(labels))] + rng.choice(labels, size=n - len(labels)).tolist()
    supports = [gold.count(label) for label in labels]
    m = label_support_needed(n_examples=n, n_labels=len(labels))
    step = macro_f1_step(n_examples=n, supports=supports, min_predicted=m)
    assert step >= 1 / n
    pred = rng.choice(labels, size=n).tolist()
    while not _respects_support(pred, m):
        pred = rng.choice(labels, size=n).tolist()
    base = single_label_f1(gold, pred)[0]
    for i, label in itertools.product(range(n), labels):
        # One example's truth changed (the attacker's unknown), or one prediction changed (two crafted files).
        other_gold = gold[:i] + [label] + gold[i + 1:]
        if sorted(set(other_gold)) == sorted(set(gold)):
            assert abs(single_label_f1(other_gold, pred)[0] - base) <= step + 1e-12
        other_pred = pred[:i] + [label] + pred[i + 1:]
        if _respects_support(other_pred, m):
            assert abs(single_label_f1(gold, other_pred)[0] - base) <= step + 1e-12


def test_a_rare_labels_split_gets_a_coarser_grid_than_one_example():
    # 100 examples, 5 labels, the rarest held by 2: one example moves macro-F1 by up to (2/7 + 2/8) / 5 ≈ 0.107.
    step = macro_f1_step(n_examples=100, supports=[2, 3, 30, 30, 35], min_predicted=5)
    assert step == 0.2 and macro_f1_step(n_examples=100, supports=[]) == 0.01


# --- the near-copy rule ------------------------------------------------------------------------------------------

def test_a_verdict_needs_ten_changed_topics_or_a_tenth_of_them_never_more_than_all():
    from evaluation.ladder import near_copy_needed

    assert [near_copy_needed(n) for n in (5, 12, 20, 100, 222, 1000)] == [5, 10, 10, 10, 23, 100]


def test_fingerprints_are_of_the_top_k_set_so_a_reorder_is_no_change():
    from evaluation.ladder import topk_fingerprints

    a = topk_fingerprints({"q1": ["d1", "d2", "d3", "d9"]}, 3)
    assert a == topk_fingerprints({"q1": ["d3", "d1", "d2", "d8"]}, 3)  # same top 3, another 4th
    assert a != topk_fingerprints({"q1": ["d1", "d2", "d4"]}, 3)


def test_the_known_run_plus_five_changed_topics_is_a_near_copy_and_broad_changes_are_judged():
    """The recipe that read one judgment per upload: a baseline's ranking, four known relevant documents on four
    topics and one guess on a fifth. It changes 5 of 20 topics: no verdict, whatever the judgments."""
    from evaluation.ladder import near_copy_of, topk_fingerprints

    qids = [f"q{i}" for i in range(20)]
    baseline = {q: [f"{q}-d{j}" for j in range(100)] for q in qids}
    probe = {q: docs[:99] + ([f"{q}-known"] if i < 5 else [docs[99]]) for i, (q, docs) in enumerate(baseline.items())}
    broad = {q: docs[:99] + [f"{q}-new"] for q, docs in baseline.items()}
    refs = {"the baseline BM25": topk_fingerprints(baseline, 100)}
    copy = near_copy_of(new=topk_fingerprints(probe, 100), references=refs, units=qids)
    assert copy is not None and (copy.reference, copy.changed, copy.needed) == ("the baseline BM25", 5, 10)
    assert copy.message().startswith("No verdict: this run repeats the baseline BM25 on all but 5 of the evaluated "
                                      "topics") and "counts against your quota" in copy.message()
    assert near_copy_of(new=topk_fingerprints(broad, 100), references=refs, units=qids) is None
    # Topics the run leaves out count as changed only where the reference has them.
    assert near_copy_of(new={}, references=refs, units=qids) is None


def test_answers_are_compared_example_by_example():
    from evaluation.ladder import answer_fingerprints, near_copy_of

    ids = [f"e{i}" for i in range(30)]
    public = answer_fingerprints(ids, ["civil"] * 30)
    probe = answer_fingerprints(ids, ["tax"] * 5 + ["civil"] * 25)
    copy = near_copy_of(new=probe, references={"the baseline TF-IDF": public}, units=ids, unit="examples")
    assert copy is not None and copy.changed == 5 and "evaluated examples" in copy.message()
    assert answer_fingerprints(["e1"], [{"b", "a"}]) == answer_fingerprints(["e1"], [["a", "b"]])
