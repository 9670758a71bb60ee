"""The baselines are real retrievers: BM25 far above random, at least as good as TF-IDF, not perfect."""

from __future__ import annotations

import pytest

from demo.baselines import BASELINES, baseline_runs, run_to_trec
from demo.export import qrels_to_trec
from demo.services import MEASURES
from evaluation.measures import parse_measures
from evaluation.qrels import read_qrels
from evaluation.runs import read_run
from evaluation.scoring import evaluate

from .conftest import TEST_DEPTH

SPLITS = ["dev", "test"]
TAGS = {b.key: b.tag for b in BASELINES}


@pytest.fixture(scope="module")
def means(demo_data, demo_runs):
    """{baseline: {split: {measure: mean}}}, scored by the metric core from the TREC bytes."""
    measures = parse_measures(MEASURES)
    out = {}
    for key, per_split in demo_runs.items():
        for split in SPLITS:
            qrels = read_qrels(qrels_to_trec(demo_data.qrels(split)), name=f"{split}.qrels")
            run = read_run(run_to_trec(per_split[split], tag=key), name=f"{key}.{split}")
            out.setdefault(key, {})[split] = evaluate(qrels, run, measures, depth=1000).means
    return out


def test_the_measures_are_known_to_the_metric_core():
    assert [m.name for m in parse_measures(MEASURES)] == MEASURES


@pytest.mark.parametrize("split", SPLITS)
def test_bm25_beats_random_by_a_wide_margin_on_every_measure(means, split):
    bm25, rand = means["bm25"][split], means["random"][split]
    assert bm25["R@100"] > 0.5
    assert bm25["R@100"] >= 3 * rand["R@100"]
    assert bm25["MAP@100"] >= 5 * rand["MAP@100"]
    for name in MEASURES:
        assert bm25[name] >= 5 * rand[name], name


@pytest.mark.parametrize("split", SPLITS)
def test_bm25_beats_or_is_close_to_tfidf(means, split):
    for name in MEASURES:
        assert means["bm25"][split][name] >= means["tfidf"][split][name] - 0.02, name


@pytest.mark.parametrize("split", SPLITS)
def test_bm25_leaves_room_for_better_systems(means, split):
    assert means["bm25"][split]["R@100"] < 0.97
    assert means["bm25"][split]["R@10"] < 0.8
    assert means["tfidf"][split]["R@100"] > 0.4


def test_the_runs_are_valid_trec_within_the_depth_and_corpus(demo_data, demo_runs):
    corpus = set(demo_data.corpus_ids())
    for key, per_split in demo_runs.items():
        for split in SPLITS:
            run = per_split[split]
            assert set(run) == set(demo_data.qrels(split))
            for hits in run.values():
                assert 0 < len(hits) <= TEST_DEPTH
                assert all(doc in corpus for doc, _ in hits)
                scores = [s for _, s in hits]
                assert scores == sorted(scores, reverse=True)
            tag = TAGS[key]
            lines = run_to_trec(run, tag=tag).decode().splitlines()
            assert len(lines) == sum(len(h) for h in run.values())
            first = lines[0].split()
            assert len(first) == 6 and first[1] == "Q0" and first[3] == "1" and first[5] == tag


def test_the_written_ranks_agree_with_trec_eval_order_on_ties(demo_data, demo_runs):
    # Equal scores are written docid-descending (as strings), so rank = position in trec_eval's order.
    for key in ("bm25", "tfidf"):
        for hits in demo_runs[key]["dev"].values():
            for (doc_a, s_a), (doc_b, s_b) in zip(hits, hits[1:]):
                if s_a == s_b:
                    assert doc_a > doc_b


def test_the_runs_are_deterministic(demo_data, demo_runs):
    again = baseline_runs(demo_data, depth=TEST_DEPTH)
    for key in demo_runs:
        for split in SPLITS:
            assert run_to_trec(again[key][split], tag=key) == run_to_trec(demo_runs[key][split], tag=key)
