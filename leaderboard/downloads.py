"""The files a participant downloads from a dataset page: corpus, topics, public judgments, a baseline run.

Every file is gzip, produced in chunks (never the whole file in memory
besides the corpus, which is stored compressed) and byte-for-byte the same
each time, so its size and sha256 — shown beside the link and in
``GET /api/v1/datasets/<slug>/files`` — are computed once per content and
cached under a key naming that content (the corpus's sha, the split's cache
version, the qrels version's sha, the baseline file's sha).

What is offered: the corpus when the dataset's ``files_downloadable`` is set
(a curator's decision, only where the license allows it) and the release
had the documents' text; the topics of every split (questions only, never
labels), except a software-only split's (sandbox/: run by the platform only); the current judgments of
public splits only (a hidden split's
labels never leave the server); and the best baseline run of each public
split (e.g. dev), to start from.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

from django.core.cache import cache
from django.db.models import Count, F

from catalogue.models import Corpus, Dataset, QrelsVersion, Split
from catalogue.page_generation import CacheKind, cache_key
from sandbox.models import SplitSandbox
from submissions import disclosure
from submissions.models import Submission

CHUNK = 1 << 20
#: Size and sha256 of a file stay valid while its content key does; a day is only a bound.
SUMMARY_TTL = 24 * 3600


@dataclass(frozen=True)
class DatasetFile:
    """One downloadable file: what it is, and its size and sha256 (of the gzip bytes served)."""

    name: str
    kind: str  # corpus | topics | qrels | gold | baseline
    split: str
    description: str
    size: int
    sha256: str


@dataclass(frozen=True)
class _Source:
    name: str
    kind: str
    split: str
    description: str
    content_key: str
    chunks: Callable[[], Iterator[bytes]]


def _gzip_chunks(pieces: Iterator[bytes]) -> Iterator[bytes]:
    """gzip of the concatenated pieces, with a fixed header (no time, no name): equal content, equal bytes."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    buffered = []
    size = 0
    for piece in pieces:
        out = compressor.compress(piece)
        if out:
            buffered.append(out)
            size += len(out)
        if size >= CHUNK:
            yield b"".join(buffered)
            buffered, size = [], 0
    buffered.append(compressor.flush())
    yield b"".join(buffered)


def _slices(blob: bytes) -> Iterator[bytes]:
    for start in range(0, len(blob), CHUNK):
        yield blob[start:start + CHUNK]


def _topic_lines(split: Split) -> Iterator[bytes]:
    """qid<TAB>text[<TAB>category]: the questions only (a test split's labels are never in a topic)."""
    for qid, text, category in split.topics.order_by("qid").values_list("qid", "text", "category").iterator():
        flat = " ".join(text.split())
        yield (f"{qid}\t{flat}\t{category}\n" if category else f"{qid}\t{flat}\n").encode()


def _topic_chunks(split: Split) -> Iterator[bytes]:
    return _gzip_chunks(_topic_lines(split))


def _gold_chunks(version: QrelsVersion) -> Iterator[bytes]:
    return _gzip_chunks(iter([version.text().encode()]))


def _run_chunks(submission: Submission) -> Iterator[bytes]:
    with submission.run_file.open("rb") as fh:
        head = fh.read(2)
        fh.seek(0)
        if head == b"\x1f\x8b":  # stored gzip: served as it is
            yield from iter(lambda: fh.read(CHUNK), b"")
            return
        yield from _gzip_chunks(iter(lambda: fh.read(CHUNK), b""))


def _best_baseline(split: Split) -> Submission | None:
    """The best baseline on the split's current qrels, offered as a file (public splits only: ``_sources``).

    A hidden split would pick it by the released value (on the grid), ties by the oldest run: at full
    precision the one named would say which of two baselines tied on the grid is better (#24).
    """
    if split.current_qrels_id is None:
        return None
    runs = (Submission.objects.on_board().filter(split=split, is_baseline=True).exclude(run_file="")
            .filter(results__qrels_version_id=split.current_qrels_id))
    if disclosure.hidden(split):
        return runs.order_by(F("results__released_score").desc(nulls_last=True), "pk").first()
    return runs.order_by("-results__primary_score", "pk").first()


def _sources(dataset: Dataset) -> list[_Source]:
    sources: list[_Source] = []
    retrieval = dataset.task == Dataset.Task.RETRIEVAL
    corpus = Corpus.objects.filter(dataset=dataset).only("pk", "sha256", "updated_at").first()
    if dataset.files_downloadable and corpus is not None and retrieval:
        has_text = Corpus.objects.filter(pk=corpus.pk, documents_gz__isnull=False).exists()
        if has_text:
            def corpus_chunks(pk=corpus.pk) -> Iterator[bytes]:
                blob = Corpus.objects.values_list("documents_gz", flat=True).get(pk=pk)
                assert blob is not None  # has_text: the corpus stored its documents
                yield from _slices(bytes(blob))

            sources.append(_Source(
                "corpus.jsonl.gz", "corpus", "", 'the documents, one JSON object per line: {"_id", "title", "text"}',
                f"{corpus.sha256}:{corpus.updated_at.timestamp()}", corpus_chunks,
            ))
    splits = dataset.splits.select_related("current_qrels").annotate(n_topics=Count("topics")).order_by("kind", "name")
    # A software-only split's topics are seen inside the sandbox only (docs/sandbox.md): no file offers them.
    software_only = set(SplitSandbox.objects.filter(split__dataset=dataset, software_only=True)
                        .values_list("split_id", flat=True))
    for split in splits:
        if split.n_topics and split.pk not in software_only:  # a card without its data offers no empty file
            sources.append(_Source(
                f"topics-{split.name}.tsv.gz", "topics", split.name,
                "the questions, qid<TAB>text<TAB>category" + (" (no labels: the split is hidden)" if split.hidden else ""),
                f"{split.pk}:{split.cache_version}", partial(_topic_chunks, split),
            ))
        version = split.current_qrels
        if not split.hidden and version is not None:
            kind, name, what = (
                ("qrels", f"qrels-{split.name}.txt.gz", f"relevance judgments v{version.version}, qid 0 docid grade")
                if retrieval else ("gold", f"gold-{split.name}.txt.gz", f"gold labels v{version.version}")
            )
            sources.append(_Source(
                name, kind, split.name, what, version.sha256,
                partial(_gold_chunks, version),
            ))
        if not split.hidden:
            baseline = _best_baseline(split)
            if baseline is not None:
                ext = "trec" if retrieval else "jsonl"
                sources.append(_Source(
                    f"baseline-{split.name}.{ext}.gz", "baseline", split.name,
                    f"a baseline run to start from: {baseline.system_name}",
                    baseline.sha256 or str(baseline.pk), partial(_run_chunks, baseline),
                ))
    return sources


def _summary(dataset: Dataset, source: _Source) -> tuple[int, str]:
    key = cache_key(CacheKind.DATASET_FILE, dataset.pk, source.name,
                    hashlib.sha256(source.content_key.encode()).hexdigest()[:24])
    found = cache.get(key)
    if found is not None:
        return found
    digest, size = hashlib.sha256(), 0
    for chunk in source.chunks():
        digest.update(chunk)
        size += len(chunk)
    found = (size, digest.hexdigest())
    cache.set(key, found, SUMMARY_TTL)
    return found


def dataset_files(dataset: Dataset) -> list[DatasetFile]:
    """The files offered for ``dataset``, each with its size and sha256."""
    files = []
    for source in _sources(dataset):
        size, sha = _summary(dataset, source)
        files.append(DatasetFile(source.name, source.kind, source.split, source.description, size, sha))
    return files


def dataset_file_chunks(dataset: Dataset, name: str) -> Iterator[bytes] | None:
    """The gzip bytes of the file ``name``, in chunks; None when the dataset offers no such file."""
    for source in _sources(dataset):
        if source.name == name:
            return source.chunks()
    return None
