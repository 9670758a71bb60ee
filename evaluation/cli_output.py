"""What ``python -m evaluation score`` prints, whichever scorer computed it (numpy-free).

One home for the table, the JSON and the verification lines, so that the fast path (``fastscore``) and the
numpy path (``cli_score``) print the same bytes for the same numbers.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence

from .conventions import EXIT_DISAGREE
from .errors import Notice

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time: every start of the command line pays for it
    from typing import Any, TextIO

    from .verify import Verification as Check


def print_scores(args: argparse.Namespace, out: TextIO, err: TextIO, *, names: Sequence[str],
                 means: Mapping[str, float], qids: Sequence[str], per_query: Mapping[str, Sequence[float]],
                 warnings: Sequence[Notice], check: Check | None = None) -> int:
    """The table (or JSON with ``--json``) on ``out``, warnings on ``err``; returns the exit status."""
    if args.json:
        data: dict[str, Any] = {"measures": {name: means[name] for name in names}, "queries": len(qids),
                                "warnings": [w.to_dict() for w in warnings]}
        if args.per_query:
            columns = {name: list(per_query[name]) for name in names}
            data["per_query"] = {q: {name: vals[i] for name, vals in columns.items()} for i, q in enumerate(qids)}
        data["score_precision"] = args.score_precision
        data["empty_queries"] = args.empty_queries
        if check is not None:
            data["verification"] = {"method": check.method, "values": check.n_values, "agree": check.ok,
                                    "first_disagreement": str(check.disagreement) if check.disagreement else None}
        json.dump(data, out, indent=2)
        out.write("\n")
    else:
        width = max([len("queries")] + [len(name) for name in names])
        out.write(f"{'measure':<{width}}  value\n")
        for name in names:
            out.write(f"{name:<{width}}  {means[name]:.4f}\n")
        out.write(f"{'queries':<{width}}  {len(qids)}\n")
        if args.per_query:
            out.write("\nqid\t" + "\t".join(names) + "\n")
            for i, q in enumerate(qids):
                out.write(q + "\t" + "\t".join(f"{per_query[name][i]:.4f}" for name in names) + "\n")
        for w in warnings:
            print(f"warning: {w.message}", file=err)
    if check is not None:
        if check.disagreement is not None:
            print(f"error: the two implementations disagree ({check.method}): {check.disagreement}", file=err)
            return EXIT_DISAGREE
        if not args.json:
            print(f"verified: {check.n_values:,} per-query values agree with {check.method} within 1e-9", file=err)
    return 0
