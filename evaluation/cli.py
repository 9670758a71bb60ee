"""Command line: ``python -m evaluation score|compare|fuse``.

Gives a participant the leaderboard's own numbers and warnings before a
submission is spent. Exit status 0 on success, 2 on invalid input (reasons
on stderr, one ``file:line: reason`` per line).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence, TextIO


from .cli_tasks import add_subcommands as add_task_subcommands
from .corpus import CorpusIds
from .errors import InputError
from .fusion import combsum, rrf
from .measures import DEFAULT_MEASURES, parse_measures
from .qrels import read_qrels
from .runs import read_run, write_run
from .scoring import evaluate
from .stats import bootstrap_ci, holm, paired_ttest, randomization_test

EXIT_INVALID = 2


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the command line; returns the exit status."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args, out, err)
    except InputError as exc:
        print(str(exc), file=err)
        return EXIT_INVALID
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=err)
        return EXIT_INVALID


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m evaluation",
                                     description="Score, compare and fuse TREC runs the way the leaderboard does.")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--qrels", required=True, help="qrels file: qid iter docid grade (.gz accepted)")
        p.add_argument("--depth", type=int, default=1000, help="rows kept per query after sorting (default 1000)")
        p.add_argument("--threshold", type=int, default=1, help="lowest relevant grade (default 1)")
        p.add_argument("--corpus", help="file with the corpus' docids, one per line (optional)")
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")

    score = sub.add_parser("score", help="score one run")
    common(score)
    score.add_argument("--run", required=True, help="run file: qid Q0 docid rank score tag (.gz accepted)")
    score.add_argument("--measures", default=",".join(m.name for m in DEFAULT_MEASURES),
                       help="comma-separated, e.g. R@100,MAP@100,MRR@100 (default: the common ones at 10, 100, 1000)")
    score.add_argument("--per-query", action="store_true", help="also give every query's values")
    score.set_defaults(handler=_score)

    compare = sub.add_parser("compare", help="compare runs with significance tests (each against the first)")
    common(compare)
    compare.add_argument("--run", action="append", required=True, help="a run; give it twice or more")
    compare.add_argument("--measure", action="append", help="measure(s) to compare (default R@100)")
    compare.add_argument("--resamples", type=int, default=10000, help="random sign flips (default 10000)")
    compare.add_argument("--seed", type=int, default=0)
    compare.set_defaults(handler=_compare)

    fuse = sub.add_parser("fuse", help="fuse runs (RRF or CombSUM) and write the fused run to stdout")
    fuse.add_argument("runs", nargs="+", help="run files")
    fuse.add_argument("--method", choices=["rrf", "combsum"], default="rrf")
    fuse.add_argument("--k", type=int, default=60, help="RRF constant (default 60)")
    fuse.add_argument("--depth", type=int, default=1000)
    fuse.add_argument("--tag", default=None, help="run tag of the fused run")
    fuse.set_defaults(handler=_fuse)
    add_task_subcommands(sub)  # classify, aggregate (evaluation/cli_tasks.py)
    return parser


def _load_corpus(path: str | None) -> CorpusIds | None:
    if not path:
        return None
    return CorpusIds.read(path)


def _score(args, out: TextIO, err: TextIO) -> int:
    measures = parse_measures(args.measures)
    qrels = read_qrels(args.qrels, threshold=args.threshold)
    run = read_run(args.run)
    ev = evaluate(qrels, run, measures, depth=args.depth, corpus=_load_corpus(args.corpus))
    warnings = qrels.notices + ev.warnings
    if args.json:
        data = ev.to_json(per_query=args.per_query)
        data["warnings"] = [w.to_dict() for w in warnings]
        json.dump(data, out, indent=2)
        out.write("\n")
    else:
        width = max([len("queries")] + [len(m.name) for m in measures])
        out.write(f"{'measure':<{width}}  value\n")
        for m in measures:
            out.write(f"{m.name:<{width}}  {ev.means[m.name]:.4f}\n")
        out.write(f"{'queries':<{width}}  {len(ev.qids)}\n")
        if args.per_query:
            out.write("\nqid\t" + "\t".join(m.name for m in measures) + "\n")
            for i, q in enumerate(ev.qids):
                out.write(q + "\t" + "\t".join(f"{ev.per_query[m.name][i]:.4f}" for m in measures) + "\n")
        for w in warnings:
            print(f"warning: {w.message}", file=err)
    return 0


def _compare(args, out: TextIO, err: TextIO) -> int:
    if len(args.run) < 2:
        raise ValueError("compare needs at least two --run")
    measures = parse_measures(args.measure or ["R@100"])
    qrels = read_qrels(args.qrels, threshold=args.threshold)
    corpus = _load_corpus(args.corpus)
    evals = [evaluate(qrels, read_run(path), measures, depth=args.depth, corpus=corpus) for path in args.run]
    rows = []
    for m in measures:
        base = evals[0].per_query[m.name]
        for path, ev in zip(args.run[1:], evals[1:]):
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
    for row, adj in zip(rows, holm([r["p_randomization"] for r in rows])):
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


def _fuse(args, out: TextIO, err: TextIO) -> int:
    runs = [read_run(path) for path in args.runs]
    if args.method == "rrf":
        fused = rrf(runs, k=args.k, depth=args.depth)
    else:
        fused = combsum(runs, depth=args.depth)
    write_run(fused, out, tag=args.tag or (f"rrf{args.k}" if args.method == "rrf" else "combsum"))
    return 0


__all__ = ["main"]
