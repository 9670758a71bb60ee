"""The ``score`` and ``fuse`` commands of ``python -m evaluation`` (imported by ``evaluation.cli`` when they run)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
from typing import TextIO

from ._process import tune_for_one_shot
from .cli_output import print_scores
from .corpus import CorpusIds
from .errors import no_shared_queries_error
from .fusion import combsum, rrf
from .measures import parse_measures
from .qrels import read_qrels
from .run_json import json_run_file_to_trec
from .runs import read_run, write_run
from .scoring import evaluate


def _load_corpus(path: str | None) -> CorpusIds | None:
    if not path:
        return None
    return CorpusIds.read(path)


def score(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Score one run with numpy: the table (or JSON) on ``out``, warnings on ``err``; 3 when ``--verify`` disagrees.

    ``cli.score`` comes here when the fast path (``fastscore``) does not take the files.
    """
    if _one_shot():
        tune_for_one_shot()
    measures = parse_measures(args.measures)
    qrels = read_qrels(args.qrels, threshold=args.threshold)
    run = read_run(args.run)
    if set(run.qids).isdisjoint(qrels.qids):  # as trec_eval: no query with both results and judgments
        raise no_shared_queries_error(args.run, len(run.qids), len(qrels.qids))
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
    names = [m.name for m in measures]
    return print_scores(args, out, err, names=names, means=ev.means, qids=ev.qids,
                        per_query={name: ev.per_query[name].tolist() for name in names}, warnings=warnings,
                        check=check)


def score_json(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Score a JSON run ``{qid: {docid: score}}``: converted by the site's reader into a temporary TREC file (the
    same lines an upload is stored as; a refusal in the site's words), then scored as any run by ``score``."""
    with tempfile.TemporaryDirectory(prefix="lexboard-json-run-") as folder:
        trec = os.path.join(folder, "run.trec")
        json_run_file_to_trec(args.run, trec)
        return score(argparse.Namespace(**{**vars(args), "run": trec}), out, err)


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
