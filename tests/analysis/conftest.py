"""Fixtures of the analysis tests: a dataset with distinctive query ids, runs scored by the real service.

``analysis_dataset`` has a hidden ``test`` split and a public ``dev`` split
with the same 24 topics (ids ``secretq01``…, easy to look for in HTML):
categories family (12), work (10) and rare (2); relevant documents per query
from 1 to 25, so every bucket (1, 2–5, 6–20, >20) is used.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

N_TOPICS = 24
N_DOCS = 80
#: Relevant documents per query (all buckets used).
N_RELEVANT = [1, 1, 1, 1, 1, 2, 2, 3, 3, 4, 5, 5, 6, 7, 8, 10, 12, 20, 2, 3, 1, 25, 21, 2]
CATEGORIES = ["family"] * 12 + ["work"] * 10 + ["rare"] * 2


def qid(i: int) -> str:
    return f"secretq{i:02d}"


def relevant_docs(i: int) -> list[str]:
    """Query i's relevant documents: a window of the corpus that moves with i."""
    return [f"doc{(i * 3 + j) % N_DOCS + 1}" for j in range(N_RELEVANT[i])]






@pytest.fixture
def analysis_dataset(db):
    from catalogue.models import Benchmark, Dataset, Split, Topic
    from catalogue.services import corpus_set, qrels_version_add

    bench = Benchmark.objects.create(slug="anal-bench", name="Analysis benchmark")
    ds = Dataset.objects.create(
        benchmark=bench, slug="anal", name="Analysable", language="fr", docid_example="doc1",
        measures=["R@10", "MAP@10", "nDCG@10"], primary_measure="R@10", depth=100,
    )
    corpus_set(dataset=ds, ids=[f"doc{i}" for i in range(1, N_DOCS + 1)])
    qrels = {qid(i): {d: 1 for d in relevant_docs(i)} for i in range(N_TOPICS)}
    for name, hidden in (("test", True), ("dev", False)):
        # Partial runs on purpose here; the coverage rule is tested in tests/submissions.
        split = Split.objects.create(dataset=ds, name=name, kind=name, hidden=hidden, daily_limit=0, total_limit=0,
                                     min_coverage=0)
        for i in range(N_TOPICS):
            Topic.objects.create(split=split, qid=qid(i), text=f"Secret question number {i}?", category=CATEGORIES[i])
        qrels_version_add(split=split, qrels=qrels)
    return ds


def run_text(kind: str, *, seed: int = 0, tag: str = "sys") -> str:
    """A run for the analysis dataset.

    ``perfect``: relevant documents first; ``shifted``: two non-relevant
    documents before them; ``late``: nine non-relevant documents before them
    (R@10 above 0 on every topic, and below ``perfect``'s on the 18 topics with
    more than one relevant document: a clear improvement for the Ladder's noisy
    margin, where ``shifted`` is below ``perfect`` on 5 topics only);
    ``random``: a seeded shuffle of the corpus.
    """
    import random

    rng = random.Random(seed)
    lines = []
    for i in range(N_TOPICS):
        rel = relevant_docs(i)
        others = [f"doc{d}" for d in range(1, N_DOCS + 1) if f"doc{d}" not in rel]
        if kind == "perfect":
            docs = rel + others[:20]
        elif kind == "shifted":
            # Two documents no other kind ranks first: every topic's top documents differ from "perfect"'s (the
            # Ladder judges no near-copy: evaluation.ladder.near_copy_of); the ranks, and so the scores, as before.
            docs = others[20:22] + rel + others[:18]
        elif kind == "late":
            # Nine documents neither other kind ranks in its top 10: no near-copy of either.
            docs = others[20:29] + rel + others[:11]
        else:
            docs = [f"doc{d}" for d in range(1, N_DOCS + 1)]
            rng.shuffle(docs)
            docs = docs[:30]
        for rank, docid in enumerate(docs, start=1):
            lines.append(f"{qid(i)} Q0 {docid} {rank} {100 - rank} {tag}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def scored(analysis_dataset):
    """``scored(split_name, user, kind, **fields)``: upload a run with the real service and score it synchronously."""
    from submissions.services import submission_create, submission_score_now

    def make(split_name: str, user, kind: str = "perfect", *, seed: int = 0, name: str | None = None,
             visibility: str = "public", is_baseline: bool = False, tag: str = ""):
        # ``tag`` (a comment line) makes a second upload of the same ranking distinct: the same file twice is refused.
        split = analysis_dataset.splits.get(name=split_name)
        upload = SimpleUploadedFile(f"{kind}.txt", (run_text(kind, seed=seed) + (f"# {tag}\n" if tag else "")).encode())
        sub = submission_create(user=user, split=split, upload=upload, enqueue=False, is_baseline=is_baseline,
                                metadata={"system_name": name or kind, "family": "lexical", "visibility": visibility})
        sub = submission_score_now(sub.pk)
        assert sub.status == "scored", sub.error
        return sub

    return make
