"""Significance markers and tiers of a 200-entry leaderboard: cost of the method and its number of sign flips.

    .venv/bin/python bench/bench_significance.py              # 200 entries × 222 queries
    .venv/bin/python bench/bench_significance.py --smoke      # 20 entries × 30 queries, a second

What is timed is ``leaderboard.significance.compute_significance``, the
function the dataset page calls on a cache miss (the first visitor after
each new score), on a board shaped like ``manage.py seed_bench``'s: entries
with means spread over 0.1–0.7 and per-query values clipped around them
(sd 0.2), 3 baselines, one measure, seed 0.

The method (see the module's docstring): markers vs the leader and the best
baseline (2 × entries − 3 comparisons), tiers in one pass (entries − 1 tests),
Bonferroni over both as one family (m = 3 × entries − 4), and
``max(10,000, ⌈10 · m / α⌉)`` sign flips capped at ``MAX_RESAMPLES``. The
script times it with the flips the page uses (capped), with the flips the
formula asks without the cap (to show why the cap is there), and with the
10,000 flips of the issue's floor (the cost of the page before the fix's
larger draws). It also checks what the fix is for: on this board the smallest
attainable p-value passes the correction (with 10,000 flips it could not:
596 / 10,001 > 0.05), and the tiers are the same when computed twice. CPU time is user +
system of this process (BLAS threads included). Results go to
var/bench-results/significance.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexboard.settings.base")

from bench.common import BASE_DIR, MACHINE_NOTE, log  # noqa: E402


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
    parser.add_argument("--repeat", type=int, default=3, help="Runs of each setting; the best is kept (default 3).")
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
    batches: list[int] = []

    def counting(a_rows, b_rows, **kw):
        batches.append(len(a_rows))
        return randomization_tests(a_rows, b_rows, **kw)

    def run(n_resamples: int | None):
        """Best of --repeat calls; the batches of the last one."""
        runs = []
        sig_module.randomization_tests = counting
        try:
            for _ in range(args.repeat):
                batches.clear()
                sig, cpu, wall = timed(lambda: sig_module.compute_significance(
                    entries=entries, measure="R@100", n_resamples=n_resamples))
                runs.append((cpu, wall))
        finally:
            sig_module.randomization_tests = randomization_tests
        cpu, wall = min(runs)
        return sig, cpu, wall, list(batches)

    page, cpu, wall, page_batches = run(None)
    m = page.family_size
    formula = max(sig_module.MIN_RESAMPLES, math.ceil(sig_module.RESOLUTION * m / sig_module.ALPHA))
    log(f"board: {args.entries} entries × {args.queries} queries; {page.n_marker_comparisons} marker comparisons, "
        f"{page.n_tier_comparisons} tier comparisons, one family of {m}; {page.n_resamples:,} flips (formula {formula:,}, "
        f"cap {sig_module.MAX_RESAMPLES:,})")
    log(f"page:   {cpu:.3f} s CPU, {wall:.3f} s wall; {sum(page_batches)} tests in {len(page_batches)} batches")
    settings = {"page": {"n_resamples": page.n_resamples, "cpu_s": cpu, "wall_s": wall,
                         "tests": sum(page_batches), "batches": len(page_batches)}}
    again = sig_module.compute_significance(entries=entries, measure="R@100")
    stable = again == page
    for name, n in (("uncapped", formula), ("floor", sig_module.MIN_RESAMPLES)):
        if n == page.n_resamples:
            continue
        sig, cpu_n, wall_n, bn = run(n)
        log(f"{name}: {n:,} flips, {cpu_n:.3f} s CPU, {wall_n:.3f} s wall")
        settings[name] = {"n_resamples": n, "cpu_s": cpu_n, "wall_s": wall_n, "tests": sum(bn), "batches": len(bn),
                          "significant_vs_leader": sum(x.significant for x in sig.vs_leader.values()),
                          "tiers": len(set(sig.tiers.values()))}

    exact = page.n_queries <= 16
    smallest = (m / (page.n_resamples + 1)) if not exact else None
    report = {
        "entries": args.entries, "queries": args.queries, "machine": MACHINE_NOTE,
        "load_average": os.getloadavg(), "when": time.strftime("%Y-%m-%d %H:%M"),
        "n_marker_comparisons": page.n_marker_comparisons, "family_size": m, "n_tier_comparisons": page.n_tier_comparisons,
        "n_resamples": page.n_resamples, "formula_n_resamples": formula, "cap": sig_module.MAX_RESAMPLES,
        "smallest_adjusted_p": smallest, "tiers": len(set(page.tiers.values())),
        "significant_vs_leader": sum(x.significant for x in page.vs_leader.values()),
        "significant_vs_baseline": sum(x.significant for x in page.vs_baseline.values()),
        "stable": stable, "settings": settings,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"| {args.entries} entries × {args.queries} queries ({page.n_marker_comparisons} marker, {page.n_tier_comparisons} tier "
          f"comparisons) | flips | CPU s | wall s |")
    print("| --- | ---: | ---: | ---: |")
    labels = {"page": f"as the page computes it ({sum(page_batches)} tests in {len(page_batches)} batches)",
              "uncapped": "the formula's flips without the cap", "floor": "the 10,000-flip floor"}
    for name, s in settings.items():
        print(f"| {labels[name]} | {s['n_resamples']:,} | {s['cpu_s']:.2f} | {s['wall_s']:.2f} |")
    print(f"tiers: {report['tiers']}; significant vs the leader: {report['significant_vs_leader']} of "
          f"{args.entries - 1}; smallest attainable adjusted p: "
          f"{'exact test' if smallest is None else f'{smallest:.4f}'}; same result twice: {stable}; "
          f"load average {os.getloadavg()[0]:.1f}")
    ok = stable and (smallest is None or smallest < sig_module.ALPHA)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
