"""Building a pool from a split's scored runs, its statistics, and handing its items to assessors.

The choice of documents is the metric core's (:mod:`evaluation.pooling`);
this module reads the runs and the judgments from the database, stores the
pool with the documents' text, and assigns the items, an agreement sample
twice.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable

from django.db import transaction

from catalogue.models import Corpus, Split
from evaluation.pooling import Pool as CorePool, PoolEntry, depth_pool, mtf_order, mtf_pool, rbp_pool
from evaluation.qrels import Qrels, read_qrels
from evaluation.runs import Run
from submissions.models import Submission, scored_live_q
from submissions.services.results import read_stored_run

from .errors import AssessmentError
from .models import Assignment, Judgment, Pool, PoolItem


def pool_candidate_runs(*, split: Split):
    """The split's runs a pool may be built from: scored, not withdrawn, not hidden by a curator, file kept."""
    return Submission.objects.filter(scored_live_q(), split=split, file_removed_at__isnull=True).order_by("pk")


def run_label(submission: Submission) -> str:
    """How a run is named in a pool's statistics and export: unique on the split, readable."""
    return f"#{submission.pk} {submission.system_name}"


def read_runs(submissions: Iterable[Submission]) -> dict[str, Run]:
    runs = {}
    for s in submissions:
        run = read_stored_run(s)
        if not isinstance(run, Run):
            raise AssessmentError(f"{run_label(s)} is not a ranked run; pools are built from retrieval runs only")
        runs[run_label(s)] = run
    return runs


def judged_qrels(*, split: Split, exclude_pool: Pool | None = None) -> Qrels | None:
    """What counts as judged on the split: the current qrels and every standing grade of its other pools."""
    merged: dict[str, dict[str, int]] = {}
    if split.current_qrels is not None:
        merged = read_qrels(split.current_qrels.text().encode()).to_dict()
    standing = Judgment.objects.filter(item__pool__split=split, superseded_by__isnull=True, grade__isnull=False)
    if exclude_pool is not None:
        standing = standing.exclude(item__pool=exclude_pool)
    for qid, docid in standing.values_list("item__qid", "item__docid"):
        merged.setdefault(qid, {}).setdefault(docid, 0)
    return Qrels.from_dict(merged) if merged else None


def core_pool(*, split: Split, method: str, params: dict, submissions: list[Submission],
              judged: Qrels | None, qids: list[str] | None = None) -> CorePool:
    """The metric core's pool over the split's topics, or the chosen ones among them (never other queries)."""
    runs = read_runs(submissions)
    if not runs:
        raise AssessmentError(f"{split} has no scored run to pool; pools are built from scored submissions")
    topics = list(split.topics.values_list("qid", flat=True))
    if qids is not None:
        unknown = sorted(set(qids) - set(topics))
        if unknown:
            raise AssessmentError(f"{', '.join(unknown[:5])}: not topics of {split}; choose among its topics")
        topics = [q for q in topics if q in set(qids)]
    qids = topics
    if method == Pool.Method.DEPTH:
        k = int(params.get("k") or 0)
        if k < 1:
            raise AssessmentError("set the pool depth k to 1 or more (10 is the usual start)")
        return depth_pool(runs, k, judged=judged, qids=qids)
    if method == Pool.Method.RBP:
        try:
            return rbp_pool(runs, int(params.get("budget") or 0), p=float(params.get("p") or 0.8),
                            depth=int(params.get("depth") or 100), judged=judged, qids=qids)
        except ValueError as exc:
            raise AssessmentError(str(exc)) from exc
    if method == Pool.Method.MTF:
        budget = int(params.get("budget") or 0)
        if budget < 1:
            raise AssessmentError("set the budget per query to 1 or more (the most documents judged per query)")
        # Nothing is judged yet: each query's pool starts with the one document MTF asks about first.
        return mtf_pool(runs, budget, lambda q, d: None, depth=int(params.get("depth") or 100), judged=judged,
                        qids=qids)
    raise AssessmentError(f"unknown pooling method {method!r}; choose depth, rbp or mtf")


def corpus_texts(corpus: Corpus | None, docids: set[str]) -> dict[str, tuple[str, str]]:
    """(title, text) of the wanted documents, read from the corpus kept by the importers (one streaming pass)."""
    return corpus.texts(docids) if corpus is not None else {}


def _statistics(pool: CorePool, *, seconds: float, overlap: float, budget: int | None = None) -> dict:
    """The core's statistics; for MTF, whose pool grows with the judgments, the cost of the whole budget."""
    stats = pool.statistics(per_judgment=seconds, overlap_share=overlap)
    stats["queries"] = len(pool.entries)
    if budget is not None:
        reachable = {q: len({d for name in pool.run_names for d in pool.tops[name].get(q, ())} -
                            {d for (qq, d) in pool.judged if qq == q}) for q in pool.entries}
        stats["planned_documents"] = sum(min(budget, n) for n in reachable.values())
        stats["expected_cost"] = stats["planned_documents"] * (1.0 + overlap) * seconds
    stats["expected_hours"] = round(stats["expected_cost"] / 3600.0, 2)
    return stats


@transaction.atomic
def pool_build(*, split: Split, name: str, method: str, params: dict, user=None,
               submissions: list[Submission] | None = None, overlap_share: float = 0.0,
               seconds_per_judgment: float = 30.0, qids: list[str] | None = None) -> Pool:
    """Build and store a pool of the split: items in judging order with their text, and the statistics.

    ``submissions`` are the chosen runs (default: every candidate run,
    :func:`pool_candidate_runs`), ``qids`` the topics (default: all of the
    split's). Documents judged in the current qrels or in another pool of the
    split are left out.
    """
    candidates = list(pool_candidate_runs(split=split))
    chosen = candidates if not submissions else list(submissions)
    allowed = {s.pk for s in candidates}
    stray = [run_label(s) for s in chosen if s.pk not in allowed]
    if stray:
        raise AssessmentError(f"{', '.join(stray)} cannot be pooled: pick scored runs of {split} that are not withdrawn")
    if not 0 <= overlap_share <= 1:
        raise AssessmentError("the overlap share must be between 0 and 1 (e.g. 0.1 for 10%)")
    core = core_pool(split=split, method=method, params=params, submissions=chosen, judged=judged_qrels(split=split),
                     qids=qids)
    adaptive = method == Pool.Method.MTF
    stats = _statistics(core, seconds=seconds_per_judgment, overlap=overlap_share,
                        budget=int(params["budget"]) if adaptive else None)
    pool = Pool.objects.create(split=split, name=name, method=method, params=params, created_by=user,
                               base_qrels=split.current_qrels, overlap_share=overlap_share,
                               seconds_per_judgment=seconds_per_judgment, statistics=stats,
                               tops=core.tops if adaptive else {})
    if submissions:
        pool.runs.set(chosen)
    corpus = Corpus.objects.filter(dataset_id=split.dataset_id).first()
    texts = corpus_texts(corpus, {e.docid for e in core})
    PoolItem.objects.bulk_create([_item(pool, e, i, texts) for q in core.entries
                                  for i, e in enumerate(core.entries[q], start=1)])
    return pool


def _item(pool: Pool, e: PoolEntry, position: int, texts: dict[str, tuple[str, str]]) -> PoolItem:
    title, text = texts.get(e.docid, ("", ""))
    return PoolItem(pool=pool, qid=e.qid, docid=e.docid, position=position, priority=e.priority,
                    ranks=dict(e.ranks), doc_title=title, doc_text=text)


@transaction.atomic
def pool_assign(*, pool: Pool, assessors: list, overlap_share: float | None = None, seed: int = 0) -> list[Assignment]:
    """Share the pool's items among ``assessors``; a sample of ``overlap_share`` goes to two of them.

    Whole queries go to one assessor (who then reads one question's documents
    in a row), each to the one with the fewest items so far. The agreement
    sample is drawn with ``seed`` (reproducible) and each sampled item (for
    MTF, each sampled query) is also given to the next assessor in the list.
    Refused once judging has started.
    """
    if not assessors:
        raise AssessmentError("choose at least one assessor (a member of the assessors group)")
    if Judgment.objects.filter(item__pool=pool).exists():
        raise AssessmentError("judging has started on this pool; its assignments can no longer be redrawn")
    share = pool.overlap_share if overlap_share is None else overlap_share
    if not 0 <= share <= 1:
        raise AssessmentError("the overlap share must be between 0 and 1 (e.g. 0.1 for 10%)")
    if share > 0 and len(assessors) < 2:
        raise AssessmentError("an agreement sample needs two assessors or more; add one or set the share to 0")
    Pool.objects.filter(pk=pool.pk).update(overlap_share=share)
    pool.overlap_share = share
    pool.assignments.all().delete()
    assessors = list(dict.fromkeys(assessors))
    by_query: dict[str, list[int]] = {}
    for pk, qid in pool.items.order_by("qid", "position").values_list("pk", "qid"):
        by_query.setdefault(qid, []).append(pk)
    load = [0] * len(assessors)
    owner: dict[int, int] = {}
    for qid in sorted(by_query, key=lambda q: (-len(by_query[q]), q)):
        who = min(range(len(assessors)), key=lambda i: (load[i], i))
        for pk in by_query[qid]:
            owner[pk] = who
        load[who] += len(by_query[qid])
    items = {i: [pk for pk, w in owner.items() if w == i] for i in range(len(assessors))}
    if pool.method == Pool.Method.MTF:
        # An MTF query grows one document at a time, each going to whoever holds the query: the sample is
        # of whole queries.
        queries = sorted(by_query)
        n_double = math.ceil(share * len(queries)) if share > 0 else 0
        for qid in sorted(random.Random(seed).sample(queries, n_double)):
            items[(owner[by_query[qid][0]] + 1) % len(assessors)].extend(by_query[qid])
    else:
        all_items = sorted(owner)
        n_double = math.ceil(share * len(all_items)) if share > 0 else 0
        for pk in sorted(random.Random(seed).sample(all_items, n_double)):
            items[(owner[pk] + 1) % len(assessors)].append(pk)
    out = []
    for i, user in enumerate(assessors):
        a = Assignment.objects.create(pool=pool, assessor=user)
        a.items.set(items[i])
        out.append(a)
    return out


# ---------------------------------------------------------------- MTF: the next document after each judgment


def _feedback_grades(pool: Pool, qid: str) -> dict[str, int]:
    """docid → the grade MTF learns from: the adjudicated one, else the highest standing grade of an assessor."""
    rows = Judgment.objects.filter(item__pool=pool, item__qid=qid, superseded_by__isnull=True, grade__isnull=False)
    adjudicated: dict[str, int] = {}
    given: dict[str, int] = {}
    for docid, kind, grade in rows.values_list("item__docid", "kind", "grade"):
        assert grade is not None  # grade__isnull=False above
        if kind == Judgment.Kind.ADJUDICATION:
            adjudicated[docid] = grade
        else:
            given[docid] = max(grade, given.get(docid, grade))
    return {**given, **adjudicated}


def pool_advance(*, pool: Pool, qid: str) -> PoolItem | None:
    """After a judgment in an MTF pool: add the query's next document (and assign it); None when there is none.

    Replays move-to-front over the stored run tops with the pool's grades so
    far (:func:`evaluation.pooling.mtf_order`); the document it waits for, if
    new, becomes an item of the query, given to every assessor who holds the
    query. A no-op for the other methods, whose pools are fixed when built.
    """
    if pool.method != Pool.Method.MTF:
        return None
    ranked = {name: tops.get(qid, []) for name, tops in pool.tops.items()}
    judged = judged_qrels(split=pool.split, exclude_pool=pool)
    skip = [d for d, g in (judged.to_dict().get(qid, {}) if judged is not None else {}).items() if g >= 0]
    grades = _feedback_grades(pool, qid)
    steps = mtf_order(ranked, grades.get, budget=int(pool.params.get("budget") or 0),
                      threshold=pool.split.dataset.relevance_threshold, skip=skip)
    if not steps or steps[-1].grade is not None:
        return None
    nxt = steps[-1]
    item, created = PoolItem.objects.get_or_create(
        pool=pool, qid=qid, docid=nxt.docid,
        defaults={"position": len(steps), "priority": float(len(steps)),
                  "ranks": {n: r.index(nxt.docid) + 1 for n, r in ranked.items() if nxt.docid in r}})
    if created:
        corpus = Corpus.objects.filter(dataset_id=pool.split.dataset_id).first()
        title, text = corpus_texts(corpus, {nxt.docid}).get(nxt.docid, ("", ""))
        if title or text:
            PoolItem.objects.filter(pk=item.pk).update(doc_title=title, doc_text=text)
        for assignment in pool.assignments.filter(items__qid=qid).distinct():
            assignment.items.add(item)
    return item
