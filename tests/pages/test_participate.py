"""The "Participate" section and GET /api/v1/datasets/<slug>/files: the data to take part, and the rules.

For the demo out of the box, and for datasets imported from BSARD-, BEIR- and
TREC-style releases (tests/data/import): every file listed downloads, gzip,
with the size and sha256 the listing states; hidden splits' judgments are
never offered; the corpus only when the curators allow it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from catalogue.importers import files_from_directory, import_trec, parse_beir, parse_bsard
from catalogue.models import Benchmark, Dataset
from submissions.services import release_import

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parent.parent / "data" / "import"


@pytest.fixture
def _private_storage(private_run_storage):
    """The demo's baseline runs go to the session's folder."""


def listing(client, slug: str) -> dict:
    response = client.get(reverse("api:dataset_files", args=[slug]))
    assert response.status_code == 200, response.content
    return response.json()


def download(client, slug: str, entry: dict) -> bytes:
    response = client.get(reverse("leaderboard:dataset_file", args=[slug, entry["name"]]))
    assert response.status_code == 200 and response["Content-Type"] == "application/gzip"
    body = b"".join(response.streaming_content)
    assert len(body) == entry["size"] and hashlib.sha256(body).hexdigest() == entry["sha256"]
    return gzip.decompress(body)


def make_dataset(slug: str, **fields) -> Dataset:
    bench, _ = Benchmark.objects.get_or_create(slug="imports", defaults={"name": "Imports"})
    return Dataset.objects.create(benchmark=bench, slug=slug, name=slug.upper(), measures=["R@10"],
                                  primary_measure="R@10", **fields)


@pytest.mark.slow  # > 2 s (docs/testing.md)
def test_the_demo_offers_corpus_topics_dev_judgments_and_a_baseline_out_of_the_box(client, _private_storage):
    call_command("load_demo", "--depth", "100", stdout=io.StringIO())
    files = {f["name"]: f for f in listing(client, "demo")["files"]}
    assert {"corpus.jsonl.gz", "topics-dev.tsv.gz", "topics-test.tsv.gz", "qrels-dev.txt.gz",
            "baseline-dev.trec.gz"} <= set(files)
    assert "qrels-test.txt.gz" not in files  # the hidden split's judgments never leave the server
    first = json.loads(download(client, "demo", files["corpus.jsonl.gz"]).splitlines()[0])
    assert set(first) == {"_id", "title", "text"} and first["text"]
    test_topics = download(client, "demo", files["topics-test.tsv.gz"]).decode().splitlines()
    assert test_topics and all(len(line.split("\t")) in (2, 3) for line in test_topics)
    run = download(client, "demo", files["baseline-dev.trec.gz"]).decode().splitlines()
    assert len(run[0].split()) == 6
    assert download(client, "demo", files["qrels-dev.txt.gz"]).decode().split("\n")[0].split()[1] == "0"

    html = client.get(reverse("leaderboard:dataset", args=["demo"])).content.decode()
    assert 'id="participate-title">Participate' in html and "corpus.jsonl.gz" in html
    assert "License: CC0 1.0 (generated data)" in html
    assert "ties broken" in html.lower() or "equal scores by document id" in html
    assert "submissions per day" in html or "submission per day" in html


def test_a_bsard_import_keeps_the_articles_text_offered_only_when_the_curators_allow(client):
    ds = make_dataset("bsardish", license="CC BY-NC-SA 4.0")
    release_import(dataset=ds, data=parse_bsard(files_from_directory(DATA / "bsard")))
    names = {f["name"] for f in listing(client, "bsardish")["files"]}
    assert "corpus.jsonl.gz" not in names and "topics-test.tsv.gz" in names
    assert "qrels-test.txt.gz" not in names and "qrels-train.txt.gz" in names

    Dataset.objects.filter(pk=ds.pk).update(files_downloadable=True)
    files = {f["name"]: f for f in listing(client, "bsardish")["files"]}
    docs = [json.loads(line) for line in download(client, "bsardish", files["corpus.jsonl.gz"]).splitlines()]
    assert docs[0]["_id"] == "1" and docs[0]["title"] == "Art. 1, Code judiciaire"
    assert docs[0]["text"].startswith("Le juge de paix")


def test_a_beir_import_keeps_titles_and_texts(client):
    ds = make_dataset("beirish", files_downloadable=True)
    release_import(dataset=ds, data=parse_beir(files_from_directory(DATA / "beir")))
    files = {f["name"]: f for f in listing(client, "beirish")["files"]}
    expected = [json.loads(line) for line in (DATA / "beir" / "corpus.jsonl").read_text().splitlines() if line.strip()]
    docs = [json.loads(line) for line in download(client, "beirish", files["corpus.jsonl.gz"]).splitlines()]
    assert [d["_id"] for d in docs] == [str(e["_id"]) for e in expected]
    assert [d["text"] for d in docs] == [e.get("text", "") for e in expected]


def test_a_trec_import_with_ids_only_offers_no_corpus_but_its_topics(client):
    ds = make_dataset("trecish", files_downloadable=True)
    import_trec(dataset=ds, split="dev", topics=("topics.tsv", (DATA / "trec" / "topics.tsv").read_bytes()),
                qrels=("test.qrels", (DATA / "trec" / "test.qrels").read_bytes()),
                corpus_ids=("ids.txt", (DATA / "trec" / "ids.txt").read_bytes()))
    files = {f["name"]: f for f in listing(client, "trecish")["files"]}
    assert "corpus.jsonl.gz" not in files
    topics = download(client, "trecish", files["topics-dev.tsv.gz"]).decode().splitlines()
    assert topics[0] == "1\tWhat does the law say about case 1?\twork"
    qrels = download(client, "trecish", files["qrels-dev.txt.gz"]).decode()
    assert "1 0 doc11 2" in qrels


def test_an_unknown_file_is_a_404_that_points_to_the_list(client):
    make_dataset("empty")
    response = client.get(reverse("leaderboard:dataset_file", args=["empty", "qrels-test.txt.gz"]))
    assert response.status_code == 404


def test_a_card_without_its_data_offers_no_empty_file_and_says_where_the_data_lives(client):
    """BSARD and GreekBarRetrieval as their cards load them: splits without topics. No ``topics-test.tsv.gz`` of
    nothing with a sha256; the page says the data is elsewhere and links to it."""
    call_command("load_cards", "bsard", "greekbarretrieval", stdout=io.StringIO())
    for slug in ("bsard", "greekbarretrieval"):
        assert listing(client, slug)["files"] == []
        response = client.get(reverse("leaderboard:dataset_file", args=[slug, "topics-test.tsv.gz"]))
        assert response.status_code == 404
        page = client.get(reverse("leaderboard:dataset", args=[slug])).content.decode()
        no_data = page.split('id="no-data">', 1)[1].split("</p>", 1)[0]
        assert "does not hold this dataset" in no_data and "reported" in no_data
    bsard = client.get(reverse("leaderboard:dataset", args=["bsard"])).content.decode()
    assert '<a href="https://github.com/maastrichtlawtech/bsard" rel="noopener">' in bsard.split('id="no-data">')[1]
