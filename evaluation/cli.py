"""Command line: ``python -m evaluation score|compare|power|fuse``.

Gives a participant the leaderboard's own numbers and warnings before a
submission is spent. Exit status 0 on success, 2 on invalid input (reasons
on stderr, one ``file:line: reason`` per kind of problem, with how many lines have it), 3 when ``score --verify``
finds the two implementations disagreeing.

This module only parses the arguments: each command's handler is imported
when it runs (``_command``). ``score`` first offers plain files to the
compiled scorer (``evaluation.fastscore``, no numpy); otherwise ``score`` and
``fuse`` import the metric core and numpy (``evaluation.cli_score``); scipy takes longer to import than a
BSARD-sized run takes to score, so only ``compare`` and ``power`` load it
(``evaluation.cli_stats``); ``--help`` imports neither.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from .cli_output import print_scores
from .cli_tasks import add_subcommands as add_task_subcommands
from .conventions import (
    DEFAULT_EMPTY_QUERIES,
    DEFAULT_MEASURE_NAMES,
    DEFAULT_SCORE_PRECISION,
    EMPTY_QUERIES,
    EXIT_INVALID,
    SCORE_PRECISIONS,
)
from .errors import InputError
from .fastscore import score_plain
from .run_json import is_json_run_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the command line; returns the exit status."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.handler(args, out, err)
        return status
    except InputError as exc:
        print(exc.grouped(), file=err)
        return EXIT_INVALID
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=err)
        return EXIT_INVALID


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m evaluation",
                                     description="Score, compare and fuse TREC runs the way the leaderboard does.")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, *, paired: bool = False) -> None:
        """The options every scoring command shares; ``paired`` commands compare runs query by query."""
        p.add_argument("--qrels", required=True, help="qrels file: qid iter docid grade (.gz accepted)")
        p.add_argument("--depth", type=int, default=1000, help="rows kept per query after sorting (default 1000)")
        p.add_argument("--threshold", type=int, default=1, help="lowest relevant grade (default 1)")
        p.add_argument("--corpus", help="file with the corpus' docids, one per line (optional)")
        p.add_argument("--score-precision", choices=SCORE_PRECISIONS, default=DEFAULT_SCORE_PRECISION,
                       help="precision scores are compared in: float32 as trec_eval 9.x and pytrec_eval "
                            "(default), float64 as trec_eval 10")
        if paired:  # every run on the same queries: "trec_eval" would let each run choose its own
            p.add_argument("--empty-queries", choices=[c for c in EMPTY_QUERIES if c != "trec_eval"],
                           default=DEFAULT_EMPTY_QUERIES,
                           help="which queries the runs are compared on: omit = the qrels queries with a relevant "
                                "document (default), count = every qrels query (trec_eval -c); a query a run lacks "
                                "scores 0")
        else:
            p.add_argument("--empty-queries", choices=EMPTY_QUERIES, default=DEFAULT_EMPTY_QUERIES,
                           help="which queries every mean is over: omit = the qrels queries with a relevant "
                                "document (default; a query the run lacks scores 0), count = every qrels query "
                                "(trec_eval -c), trec_eval = the qrels queries the run has (plain trec_eval, "
                                "without -c)")
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")

    score = sub.add_parser("score", help="score one run")
    common(score)
    score.add_argument("--run", required=True, help="run file: qid Q0 docid rank score tag, or a JSON run "
                                                    "{qid: {docid: score}} as the site takes it (.gz accepted)")
    score.add_argument("--measures", default=DEFAULT_MEASURE_NAMES,
                       help="comma-separated, e.g. R@100,MAP@100,MRR@100 (default: the common ones at 10, 100, 1000)")
    score.add_argument("--per-query", action="store_true", help="also give every query's values")
    score.add_argument("--verify", action="store_true",
                       help="compute every per-query value a second time, independently (pytrec_eval for "
                            "float32, a plain implementation for float64), and exit 3 if they disagree")
    score.set_defaults(handler=_score)

    compare = sub.add_parser("compare", help="compare runs with significance tests (each against the first)")
    common(compare, paired=True)
    compare.add_argument("--run", action="append", required=True, help="a run; give it twice or more")
    compare.add_argument("--measure", action="append", help="measure(s) to compare (default R@100)")
    compare.add_argument("--resamples", type=int, default=10000, help="random sign flips (default 10000)")
    compare.add_argument("--seed", type=int, default=0)
    compare.set_defaults(handler=_command("evaluation.cli_stats", "compare"))

    power = sub.add_parser("power", help="smallest difference the topics can detect, and topics needed "
                                         "(paired t-test, topic-set-size design)")
    common(power, paired=True)
    power.add_argument("--run", action="append", required=True, help="a scored entry's run; give two or more")
    power.add_argument("--measure", default="R@100", help="measure (default R@100)")
    power.add_argument("--alpha", type=float, default=0.05)
    power.add_argument("--power", type=float, default=0.8)
    power.set_defaults(handler=_command("evaluation.cli_stats", "power"))

    fuse = sub.add_parser("fuse", help="fuse runs (RRF or CombSUM) and write the fused run to stdout")
    fuse.add_argument("runs", nargs="+", help="run files")
    fuse.add_argument("--method", choices=["rrf", "combsum"], default="rrf")
    fuse.add_argument("--k", type=int, default=60, help="RRF constant (default 60)")
    fuse.add_argument("--depth", type=int, default=1000)
    fuse.add_argument("--tag", default=None, help="run tag of the fused run")
    fuse.add_argument("--score-precision", choices=SCORE_PRECISIONS, default=DEFAULT_SCORE_PRECISION,
                      help="precision scores are compared in (default float32, as trec_eval 9.x)")
    fuse.set_defaults(handler=_command("evaluation.cli_score", "fuse"))
    add_task_subcommands(sub)  # classify, aggregate (evaluation/cli_tasks.py, run by evaluation/cli_classify.py)
    return parser


def _score(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``score``: the compiled fast path when it takes the files (``evaluation.fastscore``), else numpy's.

    The fast path scores plain runs without importing numpy (what a BSARD-sized run costs is mostly starting
    up); ``--verify`` and ``--corpus`` always take the numpy path, which holds those rules, and so does a JSON
    run (a file, plain or gzip), converted first by the site's reader (``evaluation.run_json``).
    """
    if is_json_run_file(args.run):  # {qid: {docid: score}} (MTEB, ranx): scored as the TREC run the site makes of it
        return _command("evaluation.cli_score", "score_json")(args, out, err)
    if not args.verify and not args.corpus:
        plain = score_plain(run=args.run, qrels=args.qrels, measures=args.measures, depth=args.depth,
                            threshold=args.threshold, score_precision=args.score_precision,
                            empty_queries=args.empty_queries)
        if plain is not None:
            return print_scores(args, out, err, names=plain.names, means=plain.means, qids=plain.qids,
                                per_query=plain.per_query, warnings=plain.warnings)
    return _command("evaluation.cli_score", "score")(args, out, err)


def _command(module: str, name: str) -> Callable[[argparse.Namespace, TextIO, TextIO], int]:
    """The handler ``name`` of ``module``, imported when the command runs: each command loads only what it needs.

    ``score`` and ``fuse`` need numpy and the scorer (``evaluation.cli_score``), ``compare`` and ``power``
    scipy as well (``evaluation.cli_stats``); ``--help`` needs none of them.
    """
    def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        handler: Callable[[argparse.Namespace, TextIO, TextIO], int] = getattr(importlib.import_module(module), name)
        return handler(args, out, err)
    return run


__all__ = ["main"]
