"""Run files for the browser tests, made the way a participant would make them.

``fused_demo_run`` is Reciprocal Rank Fusion (the metric core's ``rrf``) of the
demo's BM25 and TF-IDF baselines: a plausible new system whose scores differ
from every baseline. Deterministic; computed once per process (about a second).
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
def fused_demo_run(split: str, *, depth: int = 100) -> bytes:
    """RRF (k=60) of the demo's BM25 and TF-IDF top 100, keeping ``depth`` documents per question."""
    from demo.baselines import run_to_trec
    from evaluation.fusion import rrf
    from evaluation.runs import read_run, write_run

    runs = _demo_baselines()
    parts = [read_run(run_to_trec(runs[key][split], tag=key)) for key in ("bm25", "tfidf")]
    out = io.BytesIO()
    write_run(rrf(parts, k=60, depth=depth), out, tag="rrf")
    return out.getvalue()


def upload_of(content: bytes, name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")
