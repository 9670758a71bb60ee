"""The Ladder's cost per judgment: macro-F1's swap test beside its peers, measured in the same run.

    .venv/bin/python bench/bench_ladder.py            # 2,000 and 20,000 examples
    .venv/bin/python bench/bench_ladder.py --smoke    # 300 examples, a second

A hidden classification or NER split's Ladder tests "the new prediction set
is better than the participant's best" by swapping the differing examples
between the two (``evaluation.ladder.macro_f1_improvement``, 10,000 seeded
swaps). It runs in the worker, in the transaction that stores the score, and
for every result again when new judgments become current, so it is timed
against two peers on the same data: scoring the prediction set once
(``single_label_f1``, what the worker does anyway) and the retrieval Ladder's
sign-flip step on a per-query vector of the same length. Cases: an
improvement (30% of predictions changed) and a first run (tested against no
prediction: every example differs). CPU time of this process; the median of
``--repeat`` runs. Results go to var/bench-results/ladder.json. The metric
core only: no Django, no database.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BASE_DIR, MACHINE_NOTE, markdown_table  # noqa: E402
from evaluation.classification import single_label_f1  # noqa: E402
from evaluation.ladder import ladder_step, ladder_step_macro_f1  # noqa: E402


def cpu(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def case(n: int, n_labels: int, *, seed: int = 1) -> tuple[list[str], list[str], list[str]]:
    """Gold, a best prediction set right on about 60%, and a new one right on about 70% (30% of it changed)."""
    rng = np.random.default_rng(seed)
    labels = [f"label-{i}" for i in range(n_labels)]
    gold = [labels[i] for i in rng.integers(0, n_labels, n)]
    best = [g if rng.random() < 0.6 else labels[rng.integers(0, n_labels)] for g in gold]
    new = [g if rng.random() < 0.7 else b for g, b in zip(gold, best, strict=True)]
    return gold, best, new


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="one small case, one repeat")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = [(300, 5)] if args.smoke else [(2_000, 10), (20_000, 100)]
    repeat = 1 if args.smoke else args.repeat
    rows, records = [], []
    for n, n_labels in sizes:
        gold, best, new = case(n, n_labels)
        vector_best = np.array([float(g == b) for g, b in zip(gold, best, strict=True)])
        vector_new = np.array([float(g == p) for g, p in zip(gold, new, strict=True)])
        scoring = cpu(lambda: single_label_f1(gold, new), repeat)  # noqa: B023
        sign_flips = cpu(lambda: ladder_step(best=vector_best, new=vector_new), repeat)  # noqa: B023
        improvement = cpu(lambda: ladder_step_macro_f1(task="single", gold=gold, best=best, new=new), repeat)  # noqa: B023
        first = cpu(lambda: ladder_step_macro_f1(task="single", gold=gold, best=None, new=new), repeat)  # noqa: B023
        changed = sum(b != p for b, p in zip(best, new, strict=True))
        record = {"examples": n, "labels": n_labels, "changed": changed, "scoring_s": scoring,
                  "sign_flip_step_s": sign_flips, "swap_step_s": improvement, "swap_first_run_s": first}
        records.append(record)
        rows.append([f"{n:,}", n_labels, f"{changed:,}", f"{1000 * scoring:.1f}", f"{1000 * sign_flips:.1f}",
                     f"{1000 * improvement:.0f}", f"{1000 * first:.0f}",
                     f"{improvement / scoring:.1f}×", f"{improvement / sign_flips:.1f}×"])
    print(markdown_table(["examples", "labels", "changed", "scoring (ms)", "sign-flip step (ms)",
                          "swap step (ms)", "swap, first run (ms)", "swap / scoring", "swap / sign flips"], rows))
    print(MACHINE_NOTE)
    out = BASE_DIR / "var" / "bench-results" / ("ladder-smoke.json" if args.smoke else "ladder.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(records, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
