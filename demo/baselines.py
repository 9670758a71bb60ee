"""Real lexical retrievers for the demo's baseline runs: BM25, TF-IDF and a random ranking.

They run at load time over the generated corpus, so the leaderboard of a fresh
install shows entries produced by actual systems and scored by the same path
as any upload. Each returns a run as ``{qid: [(docid, score), ...]}`` in rank
order; :func:`run_to_trec` writes it in the TREC format participants use.

* BM25 (bm25s, Lucene variant, k1=1.5, b=0.75) over French-stemmed tokens
  (Snowball via PyStemmer) without French stopwords — the BSARD paper's
  strongest lexical baseline.
* TF-IDF: cosine between sublinear tf-idf vectors (1 + log tf, smoothed idf,
  L2-normalised), computed with numpy on unstemmed tokens — the classic
  vector-space model, and a way to see what stemming and BM25's saturation add.
* Random: a seeded permutation of the corpus per question — the floor.
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import bm25s
import numpy as np
import Stemmer
from bm25s.stopwords import STOPWORDS_FRENCH

from .generator import DemoData

Run = dict[str, list[tuple[str, float]]]

DEFAULT_DEPTH = 1000
_TOKEN = re.compile(r"(?u)\b\w\w+\b")


@dataclass(frozen=True)
class Baseline:
    """How a baseline appears on the leaderboard, and the function that produces its run."""

    key: str
    system_name: str
    family: str
    tag: str
    description: str
    #: (documents, queries, depth, seed, tie-break order) → per query [(document index, score)]
    retrieve: Callable[[list[str], list[str], int, int, np.ndarray], list[list[tuple[int, float]]]]


def _stopwords() -> frozenset[str]:
    return frozenset(STOPWORDS_FRENCH)


def tokenize(text: str, *, stem: bool) -> list[str]:
    """Lowercase word tokens of two letters or more, French stopwords removed, optionally stemmed."""
    stop = _stopwords()
    tokens = [t for t in _TOKEN.findall(text.lower()) if t not in stop]
    if stem:
        tokens = Stemmer.Stemmer("french").stemWords(tokens)
    return tokens


def _top(scores: np.ndarray, depth: int, tiebreak: np.ndarray) -> list[tuple[int, float]]:
    """Indices of the ``depth`` best scores, best first; documents sharing no word are not retrieved.

    Equal scores are ordered by ``tiebreak`` (each document's position in
    descending docid order), which is trec_eval's order: the written rank
    column then agrees with how every evaluator reads the file.
    """
    order = np.lexsort((tiebreak, -scores))[:depth]
    return [(int(i), float(scores[i])) for i in order if scores[i] > 0]


def bm25_retrieve(docs: list[str], queries: list[str], depth: int, seed: int, tiebreak: np.ndarray) -> list[list[tuple[int, float]]]:
    stemmer = Stemmer.Stemmer("french")
    corpus_tokens = bm25s.tokenize(docs, stopwords="fr", stemmer=stemmer.stemWords, show_progress=False)
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    retriever.index(corpus_tokens, show_progress=False)
    vocab = corpus_tokens.vocab
    results = []
    for query in queries:
        # Score every document with the index's own term ids (words the corpus lacks
        # cannot match anyway), then cut to the depth ourselves for a stable order.
        ids = [vocab[t] for t in tokenize(query, stem=True) if t in vocab]
        scores = retriever.get_scores(ids) if ids else np.zeros(len(docs), dtype=np.float32)
        results.append(_top(np.asarray(scores, dtype=np.float64), depth, tiebreak))
    return results


def tfidf_retrieve(docs: list[str], queries: list[str], depth: int, seed: int, tiebreak: np.ndarray) -> list[list[tuple[int, float]]]:
    doc_tokens = [tokenize(d, stem=False) for d in docs]
    vocab: dict[str, int] = {}
    for tokens in doc_tokens:
        for t in tokens:
            vocab.setdefault(t, len(vocab))

    def counts(tokens: list[str]) -> np.ndarray:
        row = np.zeros(len(vocab), dtype=np.float64)
        for t in tokens:
            j = vocab.get(t)
            if j is not None:
                row[j] += 1.0
        return row

    tf = np.stack([counts(t) for t in doc_tokens])
    df = (tf > 0).sum(axis=0)
    idf = np.log((1 + len(docs)) / (1 + df)) + 1.0

    def weigh(matrix: np.ndarray) -> np.ndarray:
        w = np.zeros_like(matrix)
        nz = matrix > 0
        w[nz] = 1.0 + np.log(matrix[nz])
        w *= idf
        norms = np.linalg.norm(w, axis=1, keepdims=True)
        return w / np.where(norms == 0, 1.0, norms)

    doc_vectors = weigh(tf)
    query_vectors = weigh(np.stack([counts(tokenize(q, stem=False)) for q in queries]))
    scores = query_vectors @ doc_vectors.T
    return [_top(row, depth, tiebreak) for row in scores]


def random_retrieve(docs: list[str], queries: list[str], depth: int, seed: int, tiebreak: np.ndarray) -> list[list[tuple[int, float]]]:
    rng = random.Random(seed)
    n = len(docs)
    k = min(depth, n)
    return [[(i, float(k - r)) for r, i in enumerate(rng.sample(range(n), k))] for _ in queries]


BASELINES = (
    Baseline(
        key="bm25",
        system_name="BM25 (bm25s, French stemmer)",
        family="lexical",
        tag="bm25-fr",
        description="BM25 (Lucene variant, k1=1.5, b=0.75) with bm25s over Snowball-stemmed French tokens, "
        "French stopwords removed. Produced by `manage.py load_demo`.",
        retrieve=bm25_retrieve,
    ),
    Baseline(
        key="tfidf",
        system_name="TF-IDF",
        family="lexical",
        tag="tfidf",
        description="Cosine similarity of sublinear tf-idf vectors (1 + log tf, smoothed idf, L2 norm) over "
        "unstemmed tokens, French stopwords removed. Produced by `manage.py load_demo`.",
        retrieve=tfidf_retrieve,
    ),
    Baseline(
        key="random",
        system_name="Random",
        family="other",
        tag="random",
        description="A seeded random ranking of the corpus for every question: the floor any system must beat. "
        "Produced by `manage.py load_demo`.",
        retrieve=random_retrieve,
    ),
)


def baseline_runs(
    data: DemoData,
    *,
    depth: int = DEFAULT_DEPTH,
    keys: tuple[str, ...] | None = None,
    timings: dict[str, float] | None = None,
) -> dict[str, dict[str, Run]]:
    """Run every baseline over all questions once; returns ``{key: {split: run}}``.

    ``timings``, when given, receives each baseline's milliseconds per question
    (indexing included), which the loader records as the entry's latency.
    """
    docs = [a.text for a in data.articles]
    docids = data.corpus_ids()
    questions = list(data.questions)
    texts = [q.text for q in questions]
    tiebreak = np.empty(len(docids), dtype=np.int64)
    tiebreak[sorted(range(len(docids)), key=lambda i: docids[i], reverse=True)] = np.arange(len(docids))
    out: dict[str, dict[str, Run]] = {}
    for baseline in BASELINES:
        if keys is not None and baseline.key not in keys:
            continue
        started = time.perf_counter()
        ranked = baseline.retrieve(docs, texts, depth, data.seed, tiebreak)
        if timings is not None:
            timings[baseline.key] = 1000 * (time.perf_counter() - started) / max(1, len(texts))
        per_split: dict[str, Run] = {}
        for q, hits in zip(questions, ranked, strict=True):
            per_split.setdefault(q.split, {})[str(q.id)] = [(docids[i], score) for i, score in hits]
        out[baseline.key] = per_split
    return out


def run_to_trec(run: Run, *, tag: str) -> bytes:
    """The run as TREC text (``qid Q0 docid rank score tag``), queries in numeric order."""
    lines = []
    for qid in sorted(run, key=lambda q: (len(q), q)):
        for rank, (docid, score) in enumerate(run[qid], start=1):
            lines.append(f"{qid} Q0 {docid} {rank} {_fmt(score)} {tag}\n")
    return "".join(lines).encode()


def _fmt(score: float) -> str:
    """Integers as such (the random run), other scores with every digit, so no tie is invented."""
    if math.isfinite(score) and score == int(score):
        return str(int(score))
    return repr(float(score))
