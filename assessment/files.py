"""A pool on disk for external assessment tools (TREC qrels-style or CSV), and their judgments read back.

The formats and the checks are the metric core's (:mod:`evaluation.pool_files`);
imported grades are stored as judgments of the chosen assessor, kind
"import", superseding that assessor's standing grades, so they count like
grades given in the browser.
"""

from __future__ import annotations

import io

from django.db import transaction

from evaluation.pool_files import JudgmentFormatError, read_judgments, write_pool_csv, write_pool_trec
from evaluation.pooling import Pool as CorePool, PoolEntry

from .errors import AssessmentError
from .judging import OWN_KINDS
from .models import GRADES, Judgment, Pool
from .pools import pool_advance


def core_pool_of(pool: Pool) -> CorePool:
    """The stored pool as the metric core's object (entries per query in judging order)."""
    entries: dict[str, list[PoolEntry]] = {}
    names: dict[str, None] = {}
    for item in pool.items.order_by("qid", "position"):
        entries.setdefault(item.qid, []).append(PoolEntry(item.qid, item.docid, item.priority, item.ranks))
        for name in item.ranks:
            names.setdefault(name, None)
    return CorePool(method=pool.method, entries=entries, run_names=list(names), depth=pool.depth)


def pool_export(*, pool: Pool, fmt: str) -> str:
    """The pool as ``trec`` (``qid 0 docid -1`` lines) or ``csv`` text."""
    buf = io.StringIO()
    if fmt == "trec":
        write_pool_trec(core_pool_of(pool), buf)
    elif fmt == "csv":
        write_pool_csv(core_pool_of(pool), buf)
    else:
        raise AssessmentError(f"unknown format {fmt!r}; choose trec or csv")
    return buf.getvalue()


def problems_of(exc: JudgmentFormatError) -> list[str]:
    """``line N: reason`` for each problem of a refused file (``file: reason`` when it is about the whole file)."""
    return [f"line {p.line}: {p.reason}" if p.line is not None else p.reason for p in exc.problems]


@transaction.atomic
def judgments_import(*, pool: Pool, data: bytes, assessor, name: str = "judgments") -> int:
    """Store the grades of a judgments file as ``assessor``'s; returns how many. Nothing is stored if a line is wrong.

    Raises ``JudgmentFormatError`` (its problems are ``line: reason``).
    """
    parsed = read_judgments(data, core_pool_of(pool), grades=range(GRADES[0], GRADES[-1] + 1), name=name)
    items = {(i.qid, i.docid): i for i in pool.items.select_for_update(no_key=True)}
    count = 0
    for qid, docs in parsed.grades.items():
        for docid, grade in docs.items():
            item = items[(qid, docid)]
            new = Judgment.objects.create(item=item, assessor=assessor, grade=grade, kind=Judgment.Kind.IMPORT)
            (Judgment.objects.filter(item=item, assessor=assessor, kind__in=OWN_KINDS, superseded_by__isnull=True)
             .exclude(pk=new.pk).update(superseded_by=new))
            count += 1
    for qid in parsed.grades:
        pool_advance(pool=pool, qid=qid)  # MTF: each query's next document
    return count


__all__ = ["JudgmentFormatError", "judgments_import", "pool_export", "problems_of"]
