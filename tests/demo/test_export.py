"""``load_demo --export DIR``: files every importer and the metric core accept, without the database."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from catalogue.importers import files_from_directory, parse_beir, parse_bsard, parse_trec
from demo.export import demo_files
from evaluation.measures import parse_measures
from evaluation.qrels import read_qrels
from evaluation.runs import read_run
from evaluation.scoring import evaluate


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    # No database fixture: touching the database here would fail the test.
    root = tmp_path_factory.mktemp("demo-export")
    call_command("load_demo", "--export", str(root), "--depth", "100", stdout=open("/dev/null", "w"))
    return root


def test_it_writes_the_files_of_every_format(exported):
    names = {str(p.relative_to(exported)) for p in exported.rglob("*") if p.is_file()}
    assert {
        "README.txt",
        "bsard/articles_fr.csv",
        "bsard/questions_fr_train.csv",
        "bsard/questions_fr_test.csv",
        "beir/corpus.jsonl",
        "beir/queries.jsonl",
        "beir/qrels/dev.tsv",
        "beir/qrels/test.tsv",
        "trec/corpus_ids.txt",
        "trec/topics.dev.tsv",
        "trec/qrels.dev.txt",
        "runs/bm25.dev.trec",
        "runs/tfidf.test.trec",
        "runs/random.dev.trec",
    } <= names


def test_the_bsard_importer_reads_the_bsard_folder(exported, demo_data):
    data = parse_bsard(files_from_directory(exported / "bsard"))
    assert len(data.corpus_ids) == 2000
    splits = {s.name: s for s in data.splits}
    assert set(splits) == {"train", "test"} and splits["test"].hidden and not splits["train"].hidden
    assert splits["train"].qrels == demo_data.qrels("dev")
    assert splits["test"].qrels == demo_data.qrels("test")
    assert {t.category for t in splits["test"].topics} == {q.category for q in demo_data.questions_of("test")}


def test_the_beir_importer_reads_the_beir_folder(exported, demo_data):
    data = parse_beir(files_from_directory(exported / "beir"))
    splits = {s.name: s for s in data.splits}
    assert set(splits) == {"dev", "test"} and splits["test"].hidden
    assert splits["dev"].qrels == demo_data.qrels("dev")
    assert all(t.category for t in splits["dev"].topics)


def test_the_trec_importer_reads_the_trec_files(exported, demo_data):
    trec = exported / "trec"
    data = parse_trec(
        split="dev",
        topics=("topics.dev.tsv", (trec / "topics.dev.tsv").read_bytes()),
        qrels=("qrels.dev.txt", (trec / "qrels.dev.txt").read_bytes()),
        corpus_ids=("corpus_ids.txt", (trec / "corpus_ids.txt").read_bytes()),
    )
    assert len(data.corpus_ids) == 2000
    assert data.splits[0].qrels == demo_data.qrels("dev")


def test_the_metric_core_scores_the_exported_runs(exported):
    qrels = read_qrels(exported / "trec" / "qrels.dev.txt")
    measures = parse_measures("R@100,MAP@100")
    bm25 = evaluate(qrels, read_run(exported / "runs" / "bm25.dev.trec"), measures)
    rand = evaluate(qrels, read_run(exported / "runs" / "random.dev.trec"), measures)
    assert bm25.means["R@100"] > 3 * rand.means["R@100"]


def test_the_export_is_deterministic(demo_data, demo_runs):
    assert demo_files(demo_data, demo_runs) == demo_files(demo_data, demo_runs)
