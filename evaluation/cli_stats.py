"""The ``compare`` and ``power`` subcommands of ``python -m evaluation`` (the ones that need scipy).

``evaluation.cli`` imports this module only when one of them runs, so that
``score`` starts without paying for scipy.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

import numpy as np

from .corpus import CorpusIds
from .measures import parse_measure, parse_measures
from .power import power_analysis
from .qrels import read_qrels
from .runs import read_run
from .scoring import Evaluation, evaluate
from .stats import bootstrap_ci, holm, paired_ttest, randomization_test


def _evaluations(args: argparse.Namespace, measure_names: list[str]) -> list[Evaluation]:
    qrels = read_qrels(args.qrels, threshold=args.threshold)
    corpus = CorpusIds.read(args.corpus) if args.corpus else None
    measures = parse_measures(measure_names)
    return [evaluate(qrels, read_run(path), measures, depth=args.depth, corpus=corpus,
                     score_precision=args.score_precision, empty_queries=args.empty_queries)
            for path in args.run]


def compare(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Each run against the first: mean difference, bootstrap interval, randomization and t-test p-values."""
    if len(args.run) < 2:
        raise ValueError("compare needs at least two --run")
    evals = _evaluations(args, args.measure or ["R@100"])
    rows: list[dict[str, Any]] = []
    for m in evals[0].measures:
        base = evals[0].per_query[m.name]
        for path, ev in zip(args.run[1:], evals[1:], strict=True):
            other = ev.per_query[m.name]
            diff = other - base
            rows.append({
                "measure": m.name, "baseline": args.run[0], "run": path,
                "baseline_mean": float(base.mean()) if len(base) else 0.0,
                "run_mean": float(other.mean()) if len(other) else 0.0,
                "difference": float(diff.mean()) if len(diff) else 0.0,
                "ci95": list(bootstrap_ci(diff, n_resamples=args.resamples, seed=args.seed)),
                "p_randomization": randomization_test(other, base, n_resamples=args.resamples, seed=args.seed),
                "p_ttest": paired_ttest(other, base),
            })
    for row, adj in zip(rows, holm([r["p_randomization"] for r in rows]), strict=True):
        row["p_randomization_holm"] = adj
    if args.json:
        json.dump({"queries": len(evals[0].qids), "comparisons": rows}, out, indent=2)
        out.write("\n")
    else:
        out.write(f"{len(evals[0].qids)} queries; each run against {args.run[0]}\n")
        out.write("measure\trun\tbaseline\trun mean\tdiff\t95% CI\tp (rand.)\tp (Holm)\tp (t)\n")
        for r in rows:
            lo, hi = r["ci95"]
            out.write(f"{r['measure']}\t{r['run']}\t{r['baseline_mean']:.4f}\t{r['run_mean']:.4f}\t"
                      f"{r['difference']:+.4f}\t[{lo:+.4f}, {hi:+.4f}]\t{r['p_randomization']:.4g}\t"
                      f"{r['p_randomization_holm']:.4g}\t{r['p_ttest']:.4g}\n")
    return 0


def power(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Minimum detectable difference of the topics and topics needed for 1 and 2 points (Sakai 2016)."""
    if len(args.run) < 2:
        raise ValueError("power needs the runs of at least two scored entries (--run twice or more)")
    measure = parse_measure(args.measure)
    evals = _evaluations(args, [measure.name])
    matrix = np.vstack([ev.per_query[measure.name] for ev in evals])
    pa = power_analysis(matrix, alpha=args.alpha, power=args.power)
    if args.json:
        json.dump({"measure": measure.name, **pa.to_dict()}, out, indent=2)
        out.write("\n")
        return 0
    out.write(f"{measure.name}: {pa.n_topics} topics, {pa.n_systems} runs, "
              f"sd of a per-topic difference {pa.variance ** 0.5:.4f} (sqrt(2 V_E))\n")
    mdd = "n/a" if pa.min_detectable is None else f"{pa.min_detectable:.4f}"
    out.write(f"minimum detectable difference (paired t-test, alpha {pa.alpha:g}, power {pa.power:g}): {mdd}\n")
    for d, n in pa.topics_needed.items():
        out.write(f"topics needed to detect {d:g}: {n:,}\n")
    return 0
