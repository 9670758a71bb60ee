"""Run files for the browser tests, made the way a participant would make them.

``fused_demo_run`` is Reciprocal Rank Fusion (the metric core's ``rrf``) of the
demo's BM25 and TF-IDF baselines and of each question's planted articles (a
test device for a better system: a hidden split's first run must beat its
best baseline): a new system whose scores differ from every baseline.
Deterministic; computed once per process (about a second).
"""

from __future__ import annotations

import functools
import io

from django.core.files.uploadedfile import SimpleUploadedFile


@functools.cache
def _demo_baselines() -> dict:
    from demo.baselines import baseline_runs
    from demo.generator import generate

    return baseline_runs(generate(), depth=100, keys=("bm25", "tfidf"))


@functools.cache
def _planted(split: str) -> bytes:
    """Each question's planted articles (the ones the generator wrote it from), as a run: a test device."""
    from demo.baselines import run_to_trec
    from demo.generator import generate

    run = {str(q.id): [(str(a), float(100 - i)) for i, a in enumerate(q.article_ids)]
           for q in generate().questions if q.split == split}
    return run_to_trec(run, tag="planted")


@functools.cache
def fused_demo_run(split: str, *, depth: int = 100) -> bytes:
    """RRF (k=60) of the demo's BM25 and TF-IDF top 100 and of the planted articles, keeping ``depth`` per question.

    The planted articles are a test device standing for a much better system: a first run on a hidden split is
    released only when it is a significant improvement over the split's best baseline (the Ladder,
    docs/security.md), and the demo's BM25 is close to what its generator allows (RRF of BM25 and TF-IDF alone
    is below it: 82 against 84 R@100 on the test split).
    """
    from demo.baselines import run_to_trec
    from evaluation.fusion import rrf
    from evaluation.runs import read_run, write_run

    runs = _demo_baselines()
    parts = [read_run(run_to_trec(runs[key][split], tag=key)) for key in ("bm25", "tfidf")]
    parts.append(read_run(_planted(split)))
    out = io.BytesIO()
    write_run(rrf(parts, k=60, depth=depth), out, tag="rrf")
    return out.getvalue()


def upload_of(content: bytes, name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")
