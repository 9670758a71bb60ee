"""Significance markers of a 200-entry leaderboard: pair by pair (before) against batched (after).

    .venv/bin/python bench/bench_significance.py              # 200 entries × 222 queries, both ways
    .venv/bin/python bench/bench_significance.py --smoke      # 20 entries × 30 queries, a second

What is timed is ``leaderboard.significance.compute_significance``, the
function the dataset page calls on a cache miss (the first visitor after
each new score), on a board shaped like ``manage.py seed_bench``'s: entries
with means spread over 0.1–0.7 and per-query values clipped around them
(sd 0.2), 3 baselines, one measure, 10,000 sign flips, seed 0.

* **before**: the function as it was before batching, kept verbatim in
  ``tests/analysis/significance_before_batching.py`` (the reference of the
  equality tests), with the single-pair test as it was
  (``legacy_randomization_test`` below, verbatim: one 10,000 × n flip matrix
  drawn per pair, one matrix-vector product);
* **after**: the function as it is (``evaluation.stats.randomization_tests``:
  the seeded flips drawn once and kept, all pairs of a batch by one matrix
  product; the tier walk's cycles skipped).

The script checks that both give the same Significance (every p-value, Holm
value, marker and tier) and prints CPU time (user + system of this process,
BLAS threads included) and wall time. It also times the tests alone: the
final family's pairs pair by pair, and in one ``randomization_tests`` call.
Results go to var/bench-results/significance.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexboard.settings.base")

from bench.common import BASE_DIR, MACHINE_NOTE, log  # noqa: E402


def legacy_randomization_test(a, b, *, n_resamples=10000, seed=0):
    """``evaluation.stats.randomization_test`` as it was before the batched form (for the 'before' figure)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n = len(d)
    if n == 0 or not np.any(d):
        return 1.0
    observed = abs(d.sum())
    threshold = observed - 1e-9 * max(observed, np.abs(d).sum())
    if n <= 16:
        flips = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2 - 1
        sums = flips @ d
        return float(np.mean(np.abs(sums) >= threshold))
    rng = np.random.default_rng(seed)
    hits = 0
    block = max(1, min(n_resamples, 4_000_000 // n))
    done = 0
    while done < n_resamples:
        m = min(block, n_resamples - done)
        flips = rng.integers(0, 2, size=(m, n), dtype=np.int8) * 2 - 1
        hits += int(np.count_nonzero(np.abs(flips @ d) >= threshold))
        done += m
    return (hits + 1) / (n_resamples + 1)


def legacy_pairwise(a_rows, b_rows, *, n_resamples, seed):
    """The old way, with the batched signature: one legacy test per row."""
    return np.array([legacy_randomization_test(a, b, n_resamples=n_resamples, seed=seed)
                     for a, b in zip(a_rows, b_rows, strict=True)])


def board(*, entries: int, queries: int, seed: int = 1) -> list[tuple[int, bool, np.ndarray]]:
    """(submission id, is baseline, per-query vector) in rank order, like seed_bench's leaderboard."""
    rng = np.random.default_rng(seed)
    means = np.sort(rng.uniform(0.1, 0.7, entries))[::-1]
    baselines = set(rng.choice(entries, size=min(3, entries), replace=False).tolist())
    return [(1000 + i, i in baselines, np.clip(rng.normal(m, 0.2, queries), 0.0, 1.0)) for i, m in enumerate(means)]


def timed(fn):
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - cpu, time.perf_counter() - wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=200)
    parser.add_argument("--queries", type=int, default=222)
    parser.add_argument("--repeat", type=int, default=3, help="Runs of the batched form; the best is kept (default 3).")
    parser.add_argument("--smoke", action="store_true", help="20 entries × 30 queries, one run each.")
    parser.add_argument("--out", type=Path, help="JSON report (default var/bench-results/significance.json, "
                        "or significance-smoke.json with --smoke).")
    args = parser.parse_args(argv)
    if args.smoke:
        args.entries, args.queries, args.repeat = 20, 30, 1
    results = BASE_DIR / "var" / "bench-results"
    args.out = args.out or results / ("significance-smoke.json" if args.smoke else "significance.json")

    import django

    django.setup()
    import leaderboard.significance as sig_module
    from evaluation.stats import randomization_tests

    entries = board(entries=args.entries, queries=args.queries)
    log(f"board: {args.entries} entries × {args.queries} queries, {sig_module.N_RESAMPLES:,} flips, "
        f"seed {sig_module.SEED}")

    batches: list[int] = []

    def counting(a_rows, b_rows, **kw):
        batches.append(len(a_rows))
        return randomization_tests(a_rows, b_rows, **kw)

    # After: as the page computes it (best of --repeat), counting the batches on the last run.
    after_runs = []
    for _ in range(args.repeat):
        batches.clear()
        sig_module.randomization_tests = counting
        after, cpu, wall = timed(lambda: sig_module.compute_significance(entries=entries, measure="R@100"))
        after_runs.append((cpu, wall))
    sig_module.randomization_tests = randomization_tests
    after_cpu, after_wall = min(after_runs)
    first_cpu, first_wall = after_runs[0]  # the process's first call also draws the flips
    log(f"after:  {after_cpu:.3f} s CPU, {after_wall:.3f} s wall; {sum(batches)} tests in {len(batches)} batches")

    # Before: the old function with the old single-pair test, recording the pairs it tested.
    from tests.analysis import significance_before_batching as before_module

    tested: list[tuple[np.ndarray, np.ndarray]] = []

    def legacy_recording(a, b, **kw):
        tested.append((np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)))
        return legacy_randomization_test(a, b, **kw)

    saved_test, before_module.randomization_test = before_module.randomization_test, legacy_recording
    try:
        before, before_cpu, before_wall = timed(
            lambda: before_module.compute_significance_before_batching(entries=entries, measure="R@100"))
    finally:
        before_module.randomization_test = saved_test
    log(f"before: {before_cpu:.3f} s CPU, {before_wall:.3f} s wall")
    same = before == after
    if not same:
        log("MISMATCH: the batched markers differ from the pair-by-pair ones")

    # The tests alone: the pairs the old code tested (vs leader, vs baseline, tier comparisons), both ways.
    pairs = tested
    a_rows = np.stack([a for a, _ in pairs])
    b_rows = np.stack([b for _, b in pairs])
    kw = {"n_resamples": sig_module.N_RESAMPLES, "seed": sig_module.SEED}
    p_old, old_cpu, old_wall = timed(lambda: legacy_pairwise(a_rows, b_rows, **kw))
    p_new, new_cpu, new_wall = timed(lambda: randomization_tests(a_rows, b_rows, **kw))
    same_tests = p_old.tolist() == p_new.tolist()

    report = {
        "entries": args.entries, "queries": args.queries, "n_resamples": sig_module.N_RESAMPLES,
        "machine": MACHINE_NOTE, "load_average": os.getloadavg(), "when": time.strftime("%Y-%m-%d %H:%M"),
        "n_comparisons": after.n_comparisons, "tiers": len(set(after.tiers.values())),
        "before": {"cpu_s": before_cpu, "wall_s": before_wall},
        "after": {"cpu_s": after_cpu, "wall_s": after_wall, "tests": sum(batches), "batches": len(batches),
                  "first_call_cpu_s": first_cpu, "first_call_wall_s": first_wall},
        "same_significance": same,
        "tests_alone": {"pairs": len(pairs), "pair_by_pair_cpu_s": old_cpu, "pair_by_pair_wall_s": old_wall,
                        "batched_cpu_s": new_cpu, "batched_wall_s": new_wall, "same_p_values": same_tests},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"| {args.entries} entries × {args.queries} queries | CPU s | wall s |")
    print("| --- | ---: | ---: |")
    print(f"| compute_significance, pair by pair (before) | {before_cpu:.2f} | {before_wall:.2f} |")
    print(f"| compute_significance, batched (after; {sum(batches)} tests in {len(batches)} batches) "
          f"| {after_cpu:.2f} | {after_wall:.2f} |")
    print(f"| compute_significance, batched, first call of the process (draws the flips) "
          f"| {first_cpu:.2f} | {first_wall:.2f} |")
    print(f"| the {len(pairs)} tests alone (the pairs the old code tested), pair by pair "
          f"| {old_cpu:.2f} | {old_wall:.2f} |")
    print(f"| the same {len(pairs)} tests in one randomization_tests call | {new_cpu:.2f} | {new_wall:.2f} |")
    print(f"same markers, Holm values and tiers: {same}; same p-values: {same_tests}; "
          f"load average {os.getloadavg()[0]:.1f}")
    return 0 if same and same_tests else 1


if __name__ == "__main__":
    sys.exit(main())
