"""The shipped dataset cards: what they create, the fraction conversion, idempotence."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from catalogue.cards import CARDS_DIR, cards_load
from catalogue.importers import files_from_directory, import_bsard
from catalogue.models import Benchmark, Dataset, ReportedResult, Split
from evaluation.measures import parse_measure

pytestmark = pytest.mark.django_db


def snapshot():
    return (
        list(Benchmark.objects.values()),
        list(Dataset.objects.values()),
        list(Split.objects.values()),
        list(ReportedResult.objects.values()),
    )


def test_it_creates_bsard_and_greekbarretrieval_with_their_measures_and_splits():
    cards_load()

    bsard = Dataset.objects.get(slug="bsard")
    assert bsard.benchmark.name == "Legal statutory retrieval"
    assert bsard.measures == ["R@100", "R@200", "R@500", "MAP@100", "MRR@100"] and bsard.primary_measure == "R@100"
    assert bsard.docid_example == "1234" and bsard.language == "fr"
    assert "Louis, Antoine and Spanakis, Gerasimos" in bsard.citation and "2108.11792" in bsard.citation
    bsard.full_clean()  # every measure parses in the metric core
    splits = {s.name: s for s in bsard.splits.all()}
    assert not splits["train"].hidden and splits["test"].hidden and splits["test"].daily_limit > 0

    greek = Dataset.objects.get(slug="greekbarretrieval")
    assert greek.benchmark == bsard.benchmark
    assert greek.docid_example == "CivC::11" and greek.primary_measure == "R@100"
    greek.full_clean()
    assert [(s.name, s.hidden) for s in greek.splits.all()] == [("test", True)]


def test_it_stores_reported_results_as_fractions():
    cards_load()

    bm25 = ReportedResult.objects.get(dataset__slug="bsard", system="BM25 (official)")
    assert bm25.scores == {"R@100": 0.5133, "R@200": 0.5678, "R@500": 0.6471, "MAP@100": 0.1604, "MRR@100": 0.2459}
    assert bm25.latency_ms == 1342 and bm25.family == "lexical" and bm25.split.name == "test"
    assert "Louis & Spanakis" in bm25.source and "k1 = 1.0" in bm25.notes
    assert ReportedResult.objects.get(dataset__slug="bsard", system__startswith="Two-tower").params == "220M"
    assert ReportedResult.objects.filter(dataset__slug="bsard").count() == 7

    react = ReportedResult.objects.get(dataset__slug="greekbarretrieval", system="ReAct-BM25, 10 rounds")
    assert react.scores == {"nDCG@10": 0.43, "nDCG@100": 0.47, "MAP@100": 0.37, "R@10": 0.52, "R@100": 0.67}
    gemini = ReportedResult.objects.get(dataset__slug="greekbarretrieval", system="Gemini-001")
    assert gemini.scores == {"R@100": 0.77} and gemini.latency_ms is None
    assert ReportedResult.objects.filter(dataset__slug="greekbarretrieval").count() == 10
    assert all(0 <= v <= 1 for r in ReportedResult.objects.all() for v in r.scores.values())


def test_it_loads_lextreme_aggregates_as_a_suite():
    cards_load()

    lextreme = Dataset.objects.get(slug="lextreme")
    assert lextreme.benchmark.aggregate == "lextreme"
    assert lextreme.measures == ["dataset aggregate", "language aggregate"]
    xlmr = ReportedResult.objects.get(dataset=lextreme, system="XLM-R large")
    assert xlmr.scores == {"dataset aggregate": 0.485, "language aggregate": 0.36}
    assert not lextreme.splits.get().accepts_submissions


def test_loading_twice_changes_nothing(capsys):
    call_command("load_cards")
    first = snapshot()
    capsys.readouterr()

    call_command("load_cards")

    assert snapshot() == first
    assert "rows already matched their cards" in capsys.readouterr().out


def test_it_keeps_a_curators_edits_unless_asked_to_update():
    cards_load()
    Dataset.objects.filter(slug="bsard").update(description="Edited by a curator")

    report = cards_load()
    assert not report.changed
    assert any(x.startswith("dataset bsard (description)") for x in report.differs)
    assert Dataset.objects.get(slug="bsard").description == "Edited by a curator"

    report = cards_load(update=True)
    assert Dataset.objects.get(slug="bsard").description.startswith("The Belgian Statutory")


def test_cards_and_an_import_work_together(db):
    """The card pre-creates BSARD's splits; importing the release fills them without changing their flags."""
    cards_load()
    files = files_from_directory(Path(__file__).resolve().parent.parent / "data" / "import" / "bsard")
    report = import_bsard(dataset=Dataset.objects.get(slug="bsard"), files=files)
    assert not any("the split exists" in w for w in report.warnings)
    assert Split.objects.get(dataset__slug="bsard", name="test").current_qrels.version == 1


#: sha256 of the papers' reported results as given to the project (tests/data/reference/README.md).
REPORTED_RESULTS_SHA256 = "e1d059b91b3bdcbcc18caac4fd421a0bcc5b65b1668310366b4fc292b1556888"


def test_the_shipped_copy_of_the_reported_results_is_the_reference():
    assert hashlib.sha256((CARDS_DIR / "reported_results.json").read_bytes()).hexdigest() == REPORTED_RESULTS_SHA256


def test_every_card_measure_but_lextremes_parses():
    for name in ("bsard", "greekbarretrieval"):
        for m in json.loads((CARDS_DIR / f"{name}.json").read_text())["dataset"]["measures"]:
            parse_measure(m)
