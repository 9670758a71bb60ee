"""Writes on the curated side: corpora, qrels versions, publication.

Keyword-only functions named ``<entity>_<action>``; importers, the admin and
the demo loader all go through them, so every path stores data the same way.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max

from evaluation.qrels import read_qrels
from lexboard.text import count, plural

from .models import Corpus, Dataset, QrelsVersion, Split


def canonical_qrels_text(qrels_dict: dict[str, dict[str, int]]) -> str:
    """One line per judgment, sorted, so equal judgments give equal bytes (and one version)."""
    lines = [
        f"{qid} 0 {docid} {grade}\n"
        for qid in sorted(qrels_dict)
        for docid, grade in sorted(qrels_dict[qid].items())
    ]
    return "".join(lines)


def corpus_set(*, dataset: Dataset, ids: list[str]) -> tuple[Corpus, bool]:
    """Store the dataset's docids; returns (corpus, changed)."""
    blob, digest = Corpus.pack(ids)
    corpus = Corpus.objects.filter(dataset=dataset).first()
    if corpus is not None and corpus.sha256 == digest:
        return corpus, False
    n = len(set(ids))
    corpus, _ = Corpus.objects.update_or_create(
        dataset=dataset, defaults={"ids_gz": blob, "sha256": digest, "n_documents": n}
    )
    return corpus, True


@transaction.atomic
def qrels_version_add(
    *,
    split: Split,
    qrels: dict[str, dict[str, int]],
    note: str = "",
    user=None,
    publish: bool | None = None,
) -> tuple[QrelsVersion, bool]:
    """Add the judgments as a new version of the split's qrels, unless identical ones exist.

    Returns (version, created). ``publish`` defaults to True for the first
    version; publishing a later one is a separate, deliberate step
    (:func:`qrels_version_publish_and_rescore`) because it rescores every
    submission. ``publish=True`` here switches at once without rescoring
    (:func:`qrels_version_publish`): for splits with nothing scored yet.
    """
    text = canonical_qrels_text(qrels)
    blob, digest = QrelsVersion.pack(text)
    existing = QrelsVersion.objects.filter(split=split, sha256=digest).first()
    if existing is not None:
        return existing, False
    Split.objects.select_for_update().filter(pk=split.pk).first()
    last = QrelsVersion.objects.filter(split=split).aggregate(m=Max("version"))["m"] or 0
    threshold = split.dataset.relevance_threshold
    version = QrelsVersion.objects.create(
        split=split,
        version=last + 1,
        qrels_gz=blob,
        sha256=digest,
        n_topics=len(qrels),
        n_judgments=sum(len(docs) for docs in qrels.values()),
        n_relevant=sum(1 for docs in qrels.values() for g in docs.values() if g >= threshold),
        note=note,
        created_by=user,
    )
    if publish is None:
        publish = split.current_qrels_id is None
    if publish:
        qrels_version_publish(split=split, version=version)
    return version, True


def qrels_version_publish(*, split: Split, version: QrelsVersion) -> None:
    """Make ``version`` the split's current qrels at once, without rescoring anything.

    For a split's first version (nothing is scored yet) and for tests. Scored
    submissions without a result on ``version`` leave the leaderboard until
    rescored; curators publish with :func:`qrels_version_publish_and_rescore`.
    """
    Split.objects.filter(pk=split.pk).update(current_qrels=version, pending_qrels=None)
    split.current_qrels = version
    split.pending_qrels = None
    split.bump_cache_version()


def qrels_version_publish_and_rescore(*, split: Split, version: QrelsVersion) -> int:
    """Publish ``version`` the curator's way; returns how many submissions were sent for (re)scoring.

    What "publish" means in the admin and with ``import_dataset --publish``.
    With no scored submission the version becomes current at once. Otherwise
    it is staged (``split.pending_qrels``): every scored submission is
    rescored on it by the workers while the leaderboard keeps showing the
    current version, and the leaderboard switches to the new one in one
    UPDATE when the last result is stored. Tasks are sent after commit, so a
    rolled-back import sends nothing. The work is the submissions side's
    (``submissions.services.split_qrels_publish``); without it, this
    publishes at once.
    """
    try:
        from submissions.services import split_qrels_publish
    except ImportError:
        qrels_version_publish(split=split, version=version)
        return 0
    outcome = split_qrels_publish(split=split, version=version)
    return outcome.rescoring + outcome.requeued


def parse_qrels_bytes(data: bytes, *, name: str) -> dict[str, dict[str, int]]:
    """Parse TREC qrels with the metric core's parser (errors carry file:line: reason)."""
    return read_qrels(data, name=name).to_dict()


# --- Imports of released datasets ------------------------------------------------


def dataset_get_or_create(
    *,
    slug: str,
    name: str = "",
    benchmark_slug: str = "",
    language: str = "",
    measures: list[str] | None = None,
    primary_measure: str = "",
    docid_example: str = "",
) -> tuple[Dataset, bool]:
    """The dataset ``slug``, created with sensible defaults when missing (for ``import_dataset --create``).

    The benchmark is created too when needed. Defaults: R@100 (primary),
    MAP@100, MRR@100, nDCG@10, shown as fractions; curators refine them in the admin.
    """
    from .models import Benchmark

    existing = Dataset.objects.filter(slug=slug).first()
    if existing is not None:
        return existing, False
    bslug = benchmark_slug or slug
    benchmark, _ = Benchmark.objects.get_or_create(slug=bslug, defaults={"name": name or bslug})
    measures = list(measures or ["R@100", "MAP@100", "MRR@100", "nDCG@10"])
    dataset = Dataset.objects.create(
        benchmark=benchmark,
        slug=slug,
        name=name or slug,
        language=language,
        measures=measures,
        primary_measure=primary_measure or measures[0],
        docid_example=docid_example,
    )
    return dataset, True


def _examples(qids: list[str], hidden: bool) -> str:
    """A few query ids for a public split; nothing for a hidden one (counts only there)."""
    if hidden or not qids:
        return ""
    shown = ", ".join(sorted(qids)[:5])
    return f" (e.g. {shown})"


def dataset_import(*, dataset: Dataset, data, user=None, publish: bool = False, note: str = "", dry_run: bool = False):
    """Store a parsed release (:class:`leaderboard.importers.ImportData`) in one transaction.

    Upserts topics, replaces the corpus ids when the files carry them, and adds
    each split's judgments as a qrels version (unchanged judgments add
    nothing). The first version of a split is published; a later one only with
    ``publish=True``, because publishing rescores every submission. Existing
    splits keep their hidden flag and caps: the admin decides those. With
    ``dry_run`` everything is checked and reported, then rolled back.
    Returns an :class:`leaderboard.importers.ImportReport` (counts only).
    """
    from .importers.report import ImportReport, SplitReport
    from .models import Topic

    report = ImportReport(dataset=dataset.slug, format=data.format, dry_run=dry_run, notices=list(data.notices))
    threshold = dataset.relevance_threshold
    with transaction.atomic():
        corpus_ids: set[str] | None = None
        if data.corpus_ids is not None:
            had = Corpus.objects.filter(dataset=dataset).exists()
            corpus, changed = corpus_set(dataset=dataset, ids=data.corpus_ids)
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

            # Topics: insert new ones, update changed ones, keep the others.
            existing = {t.qid: t for t in Topic.objects.filter(split=split)}
            new, updated = [], []
            for row in sd.topics:
                t = existing.get(row.qid)
                if t is None:
                    new.append(
                        Topic(
                            split=split,
                            qid=row.qid,
                            text=row.text,
                            category=row.category,
                            subcategory=row.subcategory,
                            extra=row.extra,
                        )
                    )
                elif (t.text, t.category, t.subcategory, t.extra) != (
                    row.text,
                    row.category,
                    row.subcategory,
                    row.extra,
                ):
                    t.text, t.category, t.subcategory, t.extra = row.text, row.category, row.subcategory, row.extra
                    updated.append(t)
            Topic.objects.bulk_create(new, batch_size=500)
            Topic.objects.bulk_update(updated, ["text", "category", "subcategory", "extra"], batch_size=500)
            file_qids = {r.qid for r in sd.topics}
            sr.topics = len(sd.topics)
            sr.topics_created, sr.topics_updated = len(new), len(updated)
            sr.topics_kept = len(set(existing) - file_qids)
            if sr.topics_kept:
                sr.warnings.append(
                    f"{count(sr.topics_kept, 'topic')} already in the split "
                    f"{plural(sr.topics_kept, 'is', 'are')} not in these files; "
                    f"{plural(sr.topics_kept, 'it was', 'they were')} kept"
                )

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
                    f"{plural(len(no_relevant), 'it is', 'they are')} left out of every average"
                )
            unjudged = [q for q in file_qids if q not in qrels]
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
                # The first version is published by qrels_version_add; a later one only when asked,
                # and then staged until the split's submissions are rescored on it.
                version, created = qrels_version_add(split=split, qrels=qrels, note=note, user=user)
                split.refresh_from_db(fields=["current_qrels", "pending_qrels"])
                sr.qrels_version, sr.qrels_created = version.version, created
                sr.published = created and split.current_qrels_id == version.pk
                if publish and version.pk not in (split.current_qrels_id, split.pending_qrels_id):
                    sr.rescored = qrels_version_publish_and_rescore(split=split, version=version)
                    sr.published = True
                    split.refresh_from_db(fields=["current_qrels", "pending_qrels"])
                sr.switch_pending = split.pending_qrels_id == version.pk
                sr.current_version = split.current_qrels.version if split.current_qrels_id else None
            else:
                sr.warnings.append("no judgments in these files; no qrels version was added")
            if (new or updated) and not sr.published:
                split.bump_cache_version()

        if dry_run:
            transaction.set_rollback(True)
    return report
