"""BibTeX entries are correct and complete from what the cards hold (#38, item 7).

Every card's citation parses as one entry (balanced braces, a key, ``field = {value}`` separated by commas) with
the fields its type requires; it holds each bibliographic fact its card holds elsewhere (the paper's URL, its
title as the reported results cite it), and a card that lacks authors or a year says so (``citation_missing``).
The demo's entries name files that exist in the project.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from catalogue.bibtex import bibtex_fields, bibtex_problems
from catalogue.cards import CARD_NAMES, cards_load, read_card, reported_results
from catalogue.models import Dataset
from demo import classification as demo_areas, services as demo

ROOT = Path(__file__).resolve().parents[2]


def _plain(text: str) -> str:
    return re.sub(r"[{}]", "", text).strip().lower()


@pytest.mark.parametrize("name", CARD_NAMES)
def test_every_cards_entry_parses_with_the_fields_its_type_requires(name):
    card = read_card(name)
    citation = card["dataset"]["citation"]
    assert bibtex_problems(citation) == []
    kind, key, fields = bibtex_fields(citation)
    missing = set(card.get("citation_missing", {}).get("fields", []))
    for field in ("author", "year"):
        assert (field in fields) != (field in missing), f"{name}: {field} neither in the entry nor said missing"
    assert not missing or card["citation_missing"]["why"].strip()
    # What the card holds elsewhere is in the entry: the paper's address, the title the reported results cite.
    for url in {card["dataset"].get("homepage"), (card.get("reported") or {}).get("url")} - {"", None}:
        if "arxiv.org/abs/" in url:
            assert url.rsplit("/", 1)[-1] in (fields.get("eprint", ""), fields.get("url", "").rsplit("/", 1)[-1])
    source = reported_results()[card["reported"]["key"]]["source"]
    assert _plain(fields["title"]) in _plain(source), (fields["title"], source)


def test_greekbarretrieval_is_cited_by_more_than_its_title():
    kind, _, fields = bibtex_fields(read_card("greekbarretrieval")["dataset"]["citation"])
    assert kind == "misc" and set(fields) > {"title"} and "283 queries" in fields["note"]


@pytest.mark.django_db
def test_the_loaded_datasets_hold_the_cards_entries_and_an_old_default_is_replaced():
    cards_load()
    for name in CARD_NAMES:
        card = read_card(name)["dataset"]
        assert Dataset.objects.get(slug=card["slug"]).citation == card["citation"]
    old = read_card("greekbarretrieval")["replaces"]["citation"][0]
    Dataset.objects.filter(slug="greekbarretrieval").update(citation=old)
    report = cards_load()
    assert Dataset.objects.get(slug="greekbarretrieval").citation == read_card("greekbarretrieval")["dataset"][
        "citation"]
    assert any("greekbarretrieval (citation" in line for line in report.lines())
    Dataset.objects.filter(slug="greekbarretrieval").update(citation="@misc{ours, title = {Ours}, note = {x}}")
    cards_load()
    assert Dataset.objects.get(slug="greekbarretrieval").citation.startswith("@misc{ours")  # a curator's kept


@pytest.mark.parametrize("module", [demo, demo_areas], ids=["demo", "demo-areas"])
def test_the_demos_entries_parse_and_name_files_that_exist(module):
    assert bibtex_problems(module.CITATION) == []
    named = re.findall(r"[\w./-]+\.py\b", module.CITATION)
    assert named and all((ROOT / path).is_file() for path in named), named
    assert module.OLD_CITATION != module.CITATION and bibtex_problems(module.OLD_CITATION) == []


def test_the_checker_names_what_is_wrong():
    assert bibtex_problems("@misc{x, title = {A {B}, note = {n}}") == ["x: its braces are not balanced (a { is "
                                                                       "never closed)"]
    assert bibtex_problems("@misc{x, title = {A} note = {n}}") == ["x: a comma is missing after title"]
    assert bibtex_problems("@misc{x, title = {A}}") == [
        "x: @misc with a title alone leads nowhere; give one of author, howpublished, url, doi, eprint, note"]
    assert bibtex_problems("@inproceedings{y, title = {T}, year = {2022}}") == [
        "y: @inproceedings needs author", "y: @inproceedings needs booktitle"]
    assert bibtex_problems("title = {T}") == ["does not start with @type{key, (e.g. @inproceedings{louis2022,)"]
    assert bibtex_problems("@article{z, author = {A}, title = {T}, journal = {J}, year = 2020, year = 2021}") == [
        "z: year is given twice"]
