"""The arguments of the ``classify`` and ``aggregate`` subcommands of ``python -m evaluation`` (no scorer imported).

``evaluation.cli`` registers them with ``add_subcommands(subparsers)`` for every command, so this module
imports nothing but argparse and the conventions: the handlers (``evaluation.cli_classify``, which loads the
classification and aggregation code) are imported when one of these subcommands runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from importlib import import_module

from .conventions import AGGREGATE_METHODS, CLASSIFICATION_TASKS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO


def _handler(name: str) -> Callable[[argparse.Namespace, TextIO, TextIO], int]:
    """``evaluation.cli_classify.<name>(args, stdout=out, stderr=err)``, imported when it runs."""
    def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        status: int = getattr(import_module("evaluation.cli_classify"), name)(args, stdout=out, stderr=err)
        return status
    return run


def add_subcommands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``classify`` and ``aggregate`` to a parser's subcommands.

    Each sets, for ``evaluation.cli``'s dispatcher, ``handler(args, out, err) -> exit code``.
    """
    classify = subparsers.add_parser(
        "classify",
        help="macro-F1 of classification or NER predictions (JSONL) against gold labels",
        description=(
            "Score JSONL predictions against JSONL gold answers by macro-F1, as LEXTREME does. "
            'Lines: single {"id": ..., "label": ...}; multi {"id": ..., "labels": [...]}; '
            'ner {"id": ..., "tags": ["B-PER", "I-PER", "O"]} (entity-level F1, seqeval default mode).'
        ),
    )
    classify.add_argument("--gold", required=True, metavar="G.jsonl", help="gold answers, one JSON object per line")
    classify.add_argument("--pred", required=True, metavar="P.jsonl", help="predictions, one per gold id")
    classify.add_argument("--task", required=True, choices=CLASSIFICATION_TASKS, help="single-label, multi-label or NER (BIO tags)")
    classify.add_argument(
        "--labels",
        metavar="L1,L2,...",
        help="the declared label set (entity types for ner); labels outside it are refused",
    )
    classify.add_argument("--json", action="store_true", help='print {"macro_f1", "per_label", "warnings"} as JSON')
    classify.set_defaults(handler=_handler("run_classify"))

    aggregate = subparsers.add_parser(
        "aggregate",
        help="aggregate suite scores per system (mean, harmonic, mean rank, LEXTREME)",
        description=(
            'SCORES.json holds {"system": {"dataset/config/language": score}}. A system missing a cell '
            "gets no aggregate unless --partial is given, and then it is marked partial."
        ),
    )
    aggregate.add_argument("scores", metavar="SCORES.json", help='{"system": {"cell": score}}')
    aggregate.add_argument("--method", required=True, choices=AGGREGATE_METHODS)
    aggregate.add_argument(
        "--partial", action="store_true", help="aggregate incomplete systems over the cells they have, marked partial"
    )
    aggregate.add_argument("--json", action="store_true", help="print the aggregates as JSON")
    aggregate.set_defaults(handler=_handler("run_aggregate"))
