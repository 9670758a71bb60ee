"""Storing a parsed release: :func:`dataset_import` (retrieval) and :func:`release_store`, the one dispatch.

The importers parse (pure, refusing broken files with ``file:line: reason``);
this module stores, in one transaction, through ``catalogue.services``.
Publishing a later judgments version rescores submissions, so it is the
submissions side's: ``submissions.services.release_import(publish=True)``.
"""

from __future__ import annotations

from django.db import transaction

from lexboard.text import count, plural

from ..models import Corpus, Dataset, Split, Topic
from ..services import corpus_set, qrels_version_add
from .classification import ClassificationData, classification_import
from .report import ImportReport, SplitReport
from .topics import topics_store


def release_store(*, dataset: Dataset, data, user=None, note: str = "", dry_run: bool = False,
                  keep_topics: bool = False) -> ImportReport:
    """Store a parsed release with the importer of its kind (classification and NER, or retrieval).

    ``keep_topics``: only topics missing from the split are created, none is rewritten (the demo's start).
    """
    store = classification_import if isinstance(data, ClassificationData) else dataset_import
    return store(dataset=dataset, data=data, user=user, note=note, dry_run=dry_run, keep_topics=keep_topics)


def _examples(qids: list[str], hidden: bool) -> str:
    """A few query ids for a public split; nothing for a hidden one (counts only there)."""
    if hidden or not qids:
        return ""
    shown = ", ".join(sorted(qids)[:5])
    return f" (e.g. {shown})"


def dataset_import(*, dataset: Dataset, data, user=None, note: str = "", dry_run: bool = False,
                   keep_topics: bool = False):
    """Store a parsed release (:class:`catalogue.importers.ImportData`) in one transaction.

    Upserts topics (:func:`.topics.topics_store`: a field the files leave empty, such as
    the category of a TREC topics file without that column, keeps its value; with
    ``keep_topics`` existing topics are left as they are; a split given judgments
    only keeps its topics untouched), replaces the corpus ids when the files carry them, and adds
    each split's judgments as a qrels version (unchanged judgments add
    nothing). The first version of a split is published; a later one is
    published by ``submissions.services.release_import(publish=True)``,
    because publishing rescores every submission. Existing
    splits keep their hidden flag and caps: the admin decides those. With
    ``dry_run`` everything is checked and reported, then rolled back.
    Returns an :class:`catalogue.importers.ImportReport` (counts only).
    """
    report = ImportReport(dataset=dataset.slug, format=data.format, dry_run=dry_run, notices=list(data.notices))
    threshold = dataset.relevance_threshold
    with transaction.atomic():
        corpus_ids: set[str] | None = None
        if data.corpus_ids is not None:
            had = Corpus.objects.filter(dataset=dataset).exists()
            corpus, changed = corpus_set(dataset=dataset, ids=data.corpus_ids, documents=data.corpus_documents)
            report.corpus_documents = corpus.n_documents
            report.corpus_status = ("replaced" if had else "new") if changed else "unchanged"
            corpus_ids = set(data.corpus_ids)
        else:
            existing_corpus = Corpus.objects.filter(dataset=dataset).first()
            if existing_corpus is not None:
                corpus_ids = set(existing_corpus.ids())

        for sd in data.splits:
            split, split_created = Split.objects.get_or_create(
                dataset=dataset, name=sd.name, defaults={"kind": sd.kind, "hidden": sd.hidden}
            )
            sr = SplitReport(name=split.name, hidden=split.hidden, split_created=split_created)
            report.splits.append(sr)
            if not split_created and split.hidden != sd.hidden:
                sr.warnings.append(
                    f"the split exists and is {'hidden' if split.hidden else 'public'}; the import keeps that "
                    f"(the files asked for {'hidden' if sd.hidden else 'public'}) — change it in the admin if needed"
                )

            # Topics: insert new ones, update changed ones (keeping what the files leave empty), keep the others;
            # judgments alone (a new qrels version) touch none.
            existing = set(Topic.objects.filter(split=split).values_list("qid", flat=True))
            file_qids = {r.qid for r in sd.topics}
            sr.topics_given = sd.topics_given
            if sd.topics_given:
                changes = topics_store(split=split, rows=sd.topics, keep_existing=keep_topics)
                sr.topics = len(sd.topics)
                sr.topics_created, sr.topics_updated, sr.topics_kept = changes.created, changes.updated, changes.kept
                sr.topic_notes = changes.notes()
                if sr.topics_kept:
                    sr.warnings.append(
                        f"{count(sr.topics_kept, 'topic')} already in the split "
                        f"{plural(sr.topics_kept, 'is', 'are')} not in these files; "
                        f"{plural(sr.topics_kept, 'it was', 'they were')} kept"
                    )
            else:
                sr.topics = sr.topics_kept = len(existing)

            # Judgments.
            qrels = sd.qrels
            sr.judged_topics = len(qrels)
            sr.judgments = sum(len(d) for d in qrels.values())
            sr.relevant = sum(1 for d in qrels.values() for g in d.values() if g >= threshold)
            no_relevant = [q for q, d in qrels.items() if not any(g >= threshold for g in d.values())]
            if no_relevant:
                sr.warnings.append(
                    f"{count(len(no_relevant), 'judged query', 'judged queries')} "
                    f"{plural(len(no_relevant), 'has', 'have')} no relevant document (grade ≥ {threshold})"
                    f"{_examples(no_relevant, split.hidden)}; "
                    + (f"{plural(len(no_relevant), 'it counts', 'they count')} as 0 in every average "
                       "(the dataset's empty-query convention is count, as trec_eval -c)"
                       if dataset.empty_queries == Dataset.EmptyQueries.COUNT else
                       f"{plural(len(no_relevant), 'it is', 'they are')} left out of every average "
                       "(the dataset's empty-query convention is omit; choose count to count them as 0)")
                )
            unjudged = [q for q in (file_qids if sd.topics_given else existing) if q not in qrels]
            if unjudged:
                sr.warnings.append(
                    f"{count(len(unjudged), 'topic')} {plural(len(unjudged), 'has', 'have')} no judgment"
                    f"{_examples(unjudged, split.hidden)}; {plural(len(unjudged), 'it is', 'they are')} not evaluated"
                )
            orphan = [q for q in qrels if q not in file_qids and q not in existing]
            if orphan:
                sr.warnings.append(
                    f"{count(len(orphan), 'judged query', 'judged queries')} "
                    f"{plural(len(orphan), 'has', 'have')} no topic text{_examples(orphan, split.hidden)}; "
                    f"add {plural(len(orphan), 'it', 'them')} to the topics file"
                )
            if corpus_ids is not None:
                outside = sum(1 for d in qrels.values() for doc in d if doc not in corpus_ids)
                if outside:
                    hint = ""
                    if outside * 2 > sr.judgments:
                        example = dataset.docid_example or next(iter(sorted(corpus_ids)), "")
                        hint = f" — most of them: do the judgments use the corpus's ids (e.g. {example})?"
                    names = plural(outside, "names a document that is", "name documents that are")
                    sr.warnings.append(f"{count(outside, 'judgment')} {names} not in the corpus{hint}")
            if qrels:
                # The first version is published by qrels_version_add; a later one by the curator
                # (submissions.services.release_import), staged until the split's submissions are rescored.
                version, created = qrels_version_add(split=split, qrels=qrels, note=note, user=user)
                split.refresh_from_db(fields=["current_qrels", "pending_qrels"])
                sr.qrels_version, sr.qrels_created = version.version, created
                sr.published = created and split.current_qrels_id == version.pk
                sr.switch_pending = split.pending_qrels_id == version.pk
                sr.current_version = split.current_qrels.version if split.current_qrels is not None else None
            else:
                sr.warnings.append("no judgments in these files; no qrels version was added")
            if (sr.topics_created or sr.topics_updated) and not sr.published:
                split.bump_cache_version()

        if dry_run:
            transaction.set_rollback(True)
    return report
