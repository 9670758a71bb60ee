"""The ``classify`` and ``aggregate`` subcommands of ``python -m evaluation``.

Kept apart from the retrieval command line so each half can change alone;
their arguments are declared in ``evaluation.cli_tasks`` (which ``evaluation.cli``
registers without importing this module: scoring a run does not load the
classification code); this module runs them and imports nothing of the command
line (``python -m evaluation classify ...`` is the way in). Exit
codes as the rest of the command line: 0 ok, 2 invalid input (the reasons,
with file and line, on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from evaluation.aggregate import LOWER_IS_BETTER, ScoresFormatError, aggregate_table
from evaluation.classification import score_files
from evaluation.errors import InputError, Problem

EXIT_OK = 0
EXIT_INVALID = 2


def run_classify(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Score ``--pred`` against ``--gold``; print a report, or JSON with ``--json``."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    labels = [x.strip() for x in args.labels.split(",") if x.strip()] if args.labels else None
    try:
        result = score_files(args.gold, args.pred, task=args.task, labels=labels)
    except InputError as exc:
        print(exc.grouped(), file=stderr)
        return EXIT_INVALID
    if args.json:
        json.dump(result.to_dict(), stdout, indent=2)
        stdout.write("\n")
        return EXIT_OK
    what = "entity type" if args.task == "ner" else "label"
    width = max([len(what), *(len(x) for x in result.per_label)])
    print(f"macro-F1  {result.macro_f1:.4f}  ({result.n_examples} examples, {len(result.per_label)} {what}s)", file=stdout)
    print(f"{what:<{width}}  precision  recall      f1  support  predicted", file=stdout)
    for label, s in result.per_label.items():
        print(
            f"{label:<{width}}  {s.precision:9.4f}  {s.recall:6.4f}  {s.f1:6.4f}  {s.support:7d}  {s.predicted:9d}",
            file=stdout,
        )
    if result.per_language:
        shown = ", ".join(f"{lang} {value:.4f}" for lang, value in result.per_language.items())
        print(f"macro-F1 per language: {shown}", file=stdout)
    for notice in result.warnings:
        print(f"warning: {notice.message}", file=stderr)
    return EXIT_OK


def run_aggregate(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Aggregate a SCORES.json table per system; print a table, or JSON with ``--json``."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    try:
        with open(args.scores, "rb") as fh:
            table = json.loads(fh.read().decode("utf-8-sig"))
    except OSError as exc:
        print(str(ScoresFormatError(args.scores, [Problem(None, f"cannot read the file: {exc.strerror or exc}")])), file=stderr)
        return EXIT_INVALID
    except UnicodeDecodeError:
        print(f"{args.scores}: not UTF-8; save the file as UTF-8", file=stderr)
        return EXIT_INVALID
    except json.JSONDecodeError as exc:
        print(f"{args.scores}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})", file=stderr)
        return EXIT_INVALID
    try:
        result = aggregate_table(table, method=args.method, partial=args.partial)
    except ScoresFormatError as exc:
        exc.path = args.scores
        print(str(exc), file=stderr)
        return EXIT_INVALID
    if args.json:
        json.dump({system: agg.to_dict() for system, agg in result.items()}, stdout, indent=2)
        stdout.write("\n")
        return EXIT_OK
    order = "lower is better" if args.method in LOWER_IS_BETTER else "higher is better"
    width = max(len("system"), *(len(s) for s in result))
    extra = ["dataset_aggregate", "language_aggregate"] if args.method == "lextreme" else []
    header = f"{'system':<{width}}  {args.method:>10}" + "".join(f"  {x:>18}" for x in extra) + "  note"
    print(f"{args.method} aggregate ({order})", file=stdout)
    print(header, file=stdout)
    for system, agg in result.items():
        cells = [_fmt(agg.value), *(_fmt(agg.parts.get(x)) for x in extra)]
        note = ""
        if agg.missing:
            gap = f"missing {', '.join(agg.missing[:5])}{' …' if len(agg.missing) > 5 else ''}"
            note = f"partial over {agg.n_cells} cells; {gap}" if agg.value is not None else f"no aggregate: {gap}"
        print(f"{system:<{width}}  {cells[0]:>10}" + "".join(f"  {c:>18}" for c in cells[1:]) + f"  {note}".rstrip(), file=stdout)
    return EXIT_OK


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"

