"""The ``score`` and ``fuse`` commands of ``python -m evaluation`` (imported by ``evaluation.cli`` when they run)."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import TextIO

from ._process import tune_for_one_shot
from .conventions import EXIT_DISAGREE
from .corpus import CorpusIds
from .fusion import combsum, rrf
from .measures import parse_measures
from .qrels import read_qrels
from .runs import read_run, write_run
from .scoring import evaluate


def _load_corpus(path: str | None) -> CorpusIds | None:
    if not path:
        return None
    return CorpusIds.read(path)


def score(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Score one run: the table (or JSON) on ``out``, warnings on ``err``; 3 when ``--verify`` disagrees."""
    if _one_shot():
        tune_for_one_shot()
    measures = parse_measures(args.measures)
    qrels = read_qrels(args.qrels, threshold=args.threshold)
    run = read_run(args.run)
    corpus = _load_corpus(args.corpus)
    ev = evaluate(qrels, run, measures, depth=args.depth, corpus=corpus, score_precision=args.score_precision,
                  empty_queries=args.empty_queries)
    warnings = [n for n in qrels.notices if not (n.code == "no_relevant" and args.empty_queries != "omit")]
    warnings += ev.warnings
    check = None
    if args.verify:
        # Loaded for --verify only (pytrec_eval and the plain reader): plain scoring starts without them.
        verify = importlib.import_module("evaluation.verify").verify
        check = verify(qrels, args.run, ev, depth=args.depth, score_precision=args.score_precision,
                       empty_queries=args.empty_queries, corpus=corpus)
    if args.json:
        data = ev.to_json(per_query=args.per_query)
        data["warnings"] = [w.to_dict() for w in warnings]
        data["score_precision"] = args.score_precision
        data["empty_queries"] = args.empty_queries
        if check is not None:
            data["verification"] = {"method": check.method, "values": check.n_values, "agree": check.ok,
                                    "first_disagreement": str(check.disagreement) if check.disagreement else None}
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
    if check is not None:
        if check.disagreement is not None:
            print(f"error: the two implementations disagree ({check.method}): {check.disagreement}", file=err)
            return EXIT_DISAGREE
        if not args.json:
            print(f"verified: {check.n_values:,} per-query values agree with {check.method} within 1e-9", file=err)
    return 0


def fuse(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Fuse runs (RRF or CombSUM) and write the fused run on ``out``."""
    if _one_shot():
        tune_for_one_shot()
    runs = [read_run(path) for path in args.runs]
    if args.method == "rrf":
        fused = rrf(runs, k=args.k, depth=args.depth, score_precision=args.score_precision)
    else:
        fused = combsum(runs, depth=args.depth, score_precision=args.score_precision)
    write_run(fused, out, tag=args.tag or (f"rrf{args.k}" if args.method == "rrf" else "combsum"),
              score_precision=args.score_precision)
    return 0




def _one_shot() -> bool:
    """Whether this process is ``python -m evaluation`` itself, which scores once and exits (not a caller of main)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return spec is not None and spec.name == "evaluation.__main__"
