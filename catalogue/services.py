"""Writes on the curated side: corpora, qrels versions, publication.

Keyword-only functions named ``<entity>_<action>``; importers, the admin and
the demo loader all go through them, so every path stores data the same way.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max

from .models import Benchmark, Corpus, Dataset, DataTerms, QrelsVersion, Split
from .selectors import data_terms_in_force
from .signals import qrels_published


def canonical_qrels_text(qrels_dict: dict[str, dict[str, int]]) -> str:
    """One line per judgment, sorted, so equal judgments give equal bytes (and one version)."""
    lines = [
        f"{qid} 0 {docid} {grade}\n"
        for qid in sorted(qrels_dict)
        for docid, grade in sorted(qrels_dict[qid].items())
    ]
    return "".join(lines)


def corpus_set(*, dataset: Dataset, ids: list[str], documents: list[dict] | None = None) -> tuple[Corpus, bool]:
    """Store the dataset's docids and, when the release has them, its documents (compressed); returns (corpus, changed).

    ``documents`` are ``{"_id", "title", "text"}`` dicts (what participants download); without them
    the documents stored before are kept when the ids did not change, dropped when they did.
    """
    blob, digest = Corpus.pack(ids)
    docs_blob = Corpus.pack_documents(documents) if documents else None
    corpus = Corpus.objects.filter(dataset=dataset).first()
    if corpus is not None and corpus.sha256 == digest:
        if docs_blob is None or (corpus.documents_gz is not None and bytes(corpus.documents_gz) == docs_blob):
            return corpus, False
        Corpus.objects.filter(pk=corpus.pk).update(documents_gz=docs_blob)
        corpus.documents_gz = docs_blob
        return corpus, True
    n = len(set(ids))
    corpus, _ = Corpus.objects.update_or_create(
        dataset=dataset, defaults={"ids_gz": blob, "sha256": digest, "n_documents": n, "documents_gz": docs_blob}
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
    small_change_reason: str = "",
) -> tuple[QrelsVersion, bool]:
    """Add the judgments as a new version of the split's qrels, unless identical ones exist.

    Returns (version, created). ``publish`` defaults to True for the first
    version; publishing a later one is a separate, deliberate step
    (``submissions.services.qrels_version_publish_and_rescore``) because it
    rescores every submission. ``publish=True`` here switches at once without rescoring
    (:func:`qrels_version_publish`): for splits with nothing scored yet. A small change on a hidden split
    is refused there (nothing is stored) unless ``small_change_reason`` says why.
    """
    text = canonical_qrels_text(qrels)
    blob, digest = QrelsVersion.pack(text)
    existing = QrelsVersion.objects.filter(split=split, sha256=digest).first()
    if existing is not None:
        return existing, False
    Split.objects.select_for_update(no_key=True).filter(pk=split.pk).first()
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
        qrels_version_publish(split=split, version=version, small_change_reason=small_change_reason, user=user)
    return version, True


class SmallJudgmentChange(Exception):
    """A new judgments version of a hidden split changes the relevance of too few judgments, or of too few topics.

    Raised before anything is written; ``str(err)`` names the counts, the minimums and the two ways on.
    ``changed`` counts judgments whose grade crosses the relevance threshold (what moves the board), not every
    judgment added: non-relevant judgments move nothing and make no batch (#37).
    """

    def __init__(self, *, split: Split, version: QrelsVersion, current: QrelsVersion, changed: int, minimum: int,
                 override: str, topics: int = 0, min_topics: int = 0, padding: int = 0) -> None:
        self.split, self.version, self.current = split, version, current
        self.changed, self.minimum = changed, minimum
        self.topics, self.min_topics, self.padding = topics, min_topics, padding
        s = "" if changed == 1 else "s"
        ts = "" if topics == 1 else "s"
        beside = (f" ({padding} more judgment{'' if padding == 1 else 's'} below the relevance threshold or "
                  "regraded move nothing on the board and are not counted)") if padding else ""
        super().__init__(
            f"{split}: v{version.version} changes {changed} judgment{s} against the current v{current.version} "
            f"(a grade crossing the relevance threshold, on {topics} topic{ts}){beside}; this hidden split publishes "
            f"at least {minimum} such changes on at least {min_topics} topics at once, because the public board "
            "before and after a small change tells anyone with runs on it which way each changed judgment went. "
            "Gather more judgments into the version (another pool, more topics) "
            f"and publish that, or publish it as a small change with {override} (recorded on the version and "
            "shown in the qrels history)."
        )


#: A batch touches at least this many topics (or the split's minimum, when that is smaller): K changes on one
#: topic move a run built on that topic by their net effect, the direction of the topic's change (docs/security.md).
BATCH_MIN_TOPICS = 5


#: How a caller that says nothing about it tells a curator to publish a small change anyway.
SMALL_CHANGE_HOW = "a stated reason (small_change_reason)"


def qrels_batch_check(*, split: Split, version: QrelsVersion, current_id: int | None,
                      small_change_reason: str = "", user=None, override: str = SMALL_CHANGE_HOW) -> int:
    """Refuse making ``version`` current on a hidden split when it changes too few judgments; returns the count.

    The one home of the batching rule (``Split.min_judgment_batch``, for hidden splits only): every path that
    publishes judgments (the admin, imports, pools, the direct switch) comes here before writing. It counts what
    moves the board (``QrelsVersion.relevance_changes_from``): judgments whose grade crosses the dataset's
    relevance threshold, at least ``min_judgment_batch`` of them on at least :data:`BATCH_MIN_TOPICS` topics;
    judgments added or regraded below the threshold are not counted (1 relevant and 19 non-relevant judgments
    are one change, not a batch of 20: #37), and a version that changes only those moves nothing and passes. The split's
    first version (nothing to compare with) and the current one again pass. A curator's
    ``small_change_reason`` lets a small version through (a wrong judgment fixed quickly): it is recorded
    on the version with who gave it. Raises :class:`SmallJudgmentChange` otherwise.
    """
    minimum = Split.objects.get(pk=split.pk).judgment_batch_minimum  # the row's setting, not a caller's old copy
    if minimum <= 0 or current_id is None or current_id == version.pk:
        return 0
    current = QrelsVersion.objects.get(pk=current_id)
    moved = version.relevance_changes_from(current, threshold=split.dataset.relevance_threshold)
    if moved.moves_nothing:  # judgments below the threshold only: no measure, no board moves
        return 0
    changed, min_topics = moved.crossed, min(BATCH_MIN_TOPICS, minimum)
    if changed >= minimum and moved.topics >= min_topics:
        return changed
    reason = small_change_reason.strip()
    if not reason:
        raise SmallJudgmentChange(split=split, version=version, current=current, changed=changed, minimum=minimum,
                                  override=override, topics=moved.topics, min_topics=min_topics,
                                  padding=version.judgments_changed_from(current) - changed)
    QrelsVersion.objects.filter(pk=version.pk).update(small_change_reason=reason[:300], small_change_by=user)
    version.small_change_reason, version.small_change_by = reason[:300], user
    return changed


def qrels_version_publish(*, split: Split, version: QrelsVersion, small_change_reason: str = "",
                          user=None) -> None:
    """Make ``version`` the split's current qrels at once, without rescoring anything.

    For a split's first version (nothing is scored yet) and for tests. Scored
    submissions without a result on ``version`` leave the leaderboard until
    rescored; curators publish with ``submissions.services.qrels_version_publish_and_rescore``.
    Sends ``qrels_published``: the runs waiting for judgments are queued (after commit). A hidden split's
    small change is refused (:func:`qrels_batch_check`).
    """
    current_id = Split.objects.filter(pk=split.pk).values_list("current_qrels_id", flat=True).first()
    qrels_batch_check(split=split, version=version, current_id=current_id,
                      small_change_reason=small_change_reason, user=user)
    Split.objects.filter(pk=split.pk).update(current_qrels=version, pending_qrels=None)
    split.current_qrels = version
    split.pending_qrels = None
    split.bump_cache_version()
    # Runs sent before the judgments existed are scored now (submissions/receivers.py).
    qrels_published.send(sender=Split, split=split, version=version)



def dataset_get_or_create(
    *,
    slug: str,
    name: str = "",
    benchmark_slug: str = "",
    benchmark_name: str = "",
    language: str = "",
    measures: list[str] | None = None,
    primary_measure: str = "",
    docid_example: str = "",
) -> tuple[Dataset, bool]:
    """The dataset ``slug``, created as a draft with sensible defaults when missing (for ``import_dataset --create``).

    A created dataset is unpublished: a curator publishes it from the admin after seeing its home-page card. The
    benchmark is created too when needed, last on the home page, named ``benchmark_name`` (required then: a benchmark named after one of
    its datasets reads as that dataset twice on the home page). Defaults: R@100 (primary), MAP@100, MRR@100,
    nDCG@10, shown as fractions; curators refine them in the admin.
    """
    existing = Dataset.objects.filter(slug=slug).first()
    if existing is not None:
        return existing, False
    bslug = benchmark_slug or slug
    benchmark = Benchmark.objects.filter(slug=bslug).first()
    if benchmark is None:
        if not benchmark_name.strip():
            raise ValueError(f"the benchmark {bslug!r} is new: give its name (import_dataset --benchmark-name)")
        # Last on the home page: a new import does not push the curated benchmarks down.
        last = Benchmark.objects.aggregate(m=Max("order"))["m"] or 0
        benchmark = Benchmark.objects.create(slug=bslug, name=benchmark_name.strip(), order=last + 10)
    measures = list(measures or ["R@100", "MAP@100", "MRR@100", "nDCG@10"])
    dataset = Dataset.objects.create(
        benchmark=benchmark,
        slug=slug,
        name=name or slug,
        language=language,
        measures=measures,
        primary_measure=primary_measure or measures[0],
        docid_example=docid_example,
        is_published=False,
    )
    return dataset, True


def data_terms_publish(*, dataset: Dataset, title: str, text: str, user=None) -> DataTerms:
    """Put new terms in force on ``dataset``: the next version (1 for the first), which everyone accepts anew.

    The same title and text as the version in force add nothing (saving a form twice asks nobody again).
    The dataset's row is locked so that two curators saving at once get versions n+1 and n+2, not a clash.
    """
    title, text = title.strip(), text.strip()
    if not title or not text:
        raise ValueError("data terms need a title and a text")
    with transaction.atomic():
        Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
        current = data_terms_in_force(dataset_id=dataset.pk)
        if current is not None and (current.title, current.text) == (title, text):
            return current
        return DataTerms.objects.create(dataset=dataset, version=(current.version if current else 0) + 1,
                                        title=title, text=text, created_by=user)
