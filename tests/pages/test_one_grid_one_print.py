"""One grid, one unit, one print (#38 item 5).

A hidden split's values sit on a grid (``evaluation.ladder.step_for``: one topic's share of the mean). Here:

* a board with no evaluated topic yet (a card's board before its qrels: BSARD, GreekBarRetrieval, LEXTREME on a
  fresh site) states no grid: it said "±50 points" (one topic's share of no topic) and its JSON ``grid: 1.0``;
* the grid's text is the docs' arithmetic (docs/metrics.md and the site's metrics page name the same steps);
* a value prints alike on the board, the home card, the CSV, the LaTeX export and the client ("22" on a 1-point
  grid, "82.5" on a 0.5 grid, "22.04" on a public split): one formatting, ``evaluation.ladder.percent_text``;
* every export names its unit, and every LaTeX caption is true of the columns under it.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from pathlib import Path

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from catalogue.models import Benchmark, Dataset, ReportedResult, Split, Topic
from catalogue.services import qrels_version_add
from evaluation.ladder import percent_text, step_for
from lexboard_cli import client as cli
from submissions import disclosure

ROOT = Path(__file__).resolve().parents[2]
MEASURES = ["R@100", "MAP@100", "MRR@100"]


def _dataset(slug: str, *, order: int) -> Dataset:
    bench = Benchmark.objects.create(slug=f"b-{slug}", name=f"Benchmark {slug}", order=order)
    return Dataset.objects.create(benchmark=bench, slug=slug, name=slug.upper(), language="fr", docid_example="d1",
                                  measures=MEASURES, primary_measure="R@100", is_published=True)


def _split(dataset: Dataset, name: str, *, hidden: bool, n_topics: int) -> Split:
    split = Split.objects.create(dataset=dataset, name=name, kind="test" if hidden else "dev", hidden=hidden,
                                 ladder=False)
    if n_topics:
        Topic.objects.bulk_create(Topic(split=split, qid=f"q{i}", text=f"Question {i}?") for i in range(n_topics))
        qrels_version_add(split=split, qrels={f"q{i}": {"d1": 1} for i in range(n_topics)})
    return Split.objects.get(pk=split.pk)


@pytest.fixture
def card_board(db):
    """A flagship card's board on a fresh site: a hidden test split with no judgments yet, a paper's result."""
    dataset = _dataset("cardset", order=1)
    split = _split(dataset, "test", hidden=True, n_topics=0)
    ReportedResult.objects.create(dataset=dataset, split=split, system="BM25 (paper)", family="lexical",
                                  scores={"R@100": 0.2204, "MAP@100": 0.1111}, source="A paper, 2022",
                                  url="https://example.org/p")
    return dataset, split


@pytest.fixture
def grid_board(db, alice, bob, make_entry):
    """A hidden split of 100 topics (a 1-point grid) and a public one, each with two entries."""
    dataset = _dataset("gridset", order=2)
    hidden = _split(dataset, "test", hidden=True, n_topics=100)
    public = _split(dataset, "dev", hidden=False, n_topics=100)
    scores = {"R@100": 0.2204, "MAP@100": 0.1234, "MRR@100": 0.3456}
    make_entry(hidden, alice, "first", scores)
    make_entry(hidden, bob, "second", {"R@100": 0.1049, "MAP@100": 0.05, "MRR@100": 0.2})
    make_entry(public, alice, "first", scores)
    make_entry(public, bob, "second", {"R@100": 0.1049, "MAP@100": 0.05, "MRR@100": 0.2})
    return dataset, hidden, public


def _get(client, name: str, *args, **params) -> str:
    response = client.get(reverse(name, args=list(args)), params)
    assert response.status_code == 200, response.content[:300]
    return response.content.decode()


def _caption(tex: str) -> str:
    return re.search(r"\\caption\{(.*)\}\n", tex).group(1)


# --- 1. no evaluated topic, no grid; the grid's text is the docs' arithmetic ---------------------------------


def test_a_board_with_no_evaluated_topics_states_no_grid(client, card_board):
    dataset, split = card_board
    page = _get(client, "leaderboard:dataset", dataset.slug)
    assert "±" not in page and "points: hidden split" not in page
    assert "22.04" in page  # the paper's number, as printed
    home = _get(client, "leaderboard:home")
    assert "±" not in home and "22.04" in home
    data = json.loads(_get(client, "leaderboard:export", dataset.slug, "json"))
    assert data["grid"] is None and data["scores_are"] == disclosure.SCORES_ARE
    tex = _get(client, "leaderboard:export", dataset.slug, "tex")
    assert "±" not in tex and "grid" not in _caption(tex)
    api = APIClient().get(reverse("api:leaderboard", args=[dataset.slug])).json()
    assert api["grid"] is None
    assert disclosure.grid_step(split) is None and disclosure.grid_note(split) == ""
    # Nothing is printed finer than the split releases all the same (no value of an entry exists to print).
    assert disclosure.rounding_step(split) == 1.0


@pytest.mark.parametrize("slug", ["bsard", "greekbarretrieval", "lextreme"])
def test_the_flagship_cards_boards_state_no_grid_before_their_judgments(client, db, slug):
    """The finding itself: on a fresh site the cards' boards said "Entries scored here: ±50 points"."""
    from catalogue.cards import cards_load

    cards_load()
    Dataset.objects.filter(slug=slug).update(is_published=True)
    page = _get(client, "leaderboard:dataset", slug)
    assert "±" not in page and "points: hidden split" not in page
    assert json.loads(_get(client, "leaderboard:export", slug, "json"))["grid"] is None
    assert "±" not in _get(client, "leaderboard:home")


def test_the_json_docs_say_grid_is_null_before_the_split_has_evaluated_topics():
    text = (ROOT / "docs" / "metrics.md").read_text()
    assert "`grid` is null" in text


def _doc_steps(text: str) -> list[tuple[float, int]]:
    """The docs' worked grid examples: (points, topics) from "1 point on 100 topics ... 0.5 points on 222 ..."."""
    return [(float(p), int(n)) for p, n in re.findall(r"(\d+(?:\.\d+)?)\s+points?\s+on\s+(?:BSARD's\s+)?(\d+)", text)]


@pytest.mark.parametrize("doc", ["docs/metrics.md", "templates/leaderboard/docs_metrics.html"])
def test_the_grid_text_is_the_docs_arithmetic(doc, db, tiny_dataset):
    text = html.unescape((ROOT / doc).read_text())
    section = text[text.index("on a grid"):][:3000]
    examples = _doc_steps(section)
    assert {n for _, n in examples} >= {100, 222, 20}, examples
    split = tiny_dataset.splits.get(name="test")
    for stated, n in examples:
        assert 100 * step_for(n) == pytest.approx(stated), (stated, n)
        # What the board says on that grid, as the docs quote it: the half step either way.
        note = disclosure.grid_note(split, n_topics=n)
        assert note == f"±{100 * step_for(n) / 2:g} points: hidden split"
        quoted = " ".join(section.split())
        half = f"±{100 * step_for(n) / 2:g} points"
        assert any(q in quoted for q in (f"“{note}”", f'"{note}"', f"“{half}", f'"{half}')), (note, doc)


def test_bsards_222_topics_show_the_half_point_grid(client, db):
    dataset = _dataset("bsardlike", order=3)
    split = _split(dataset, "test", hidden=True, n_topics=222)
    ReportedResult.objects.create(dataset=dataset, split=split, system="BM25 (paper)", scores={"R@100": 0.5},
                                  source="A paper, 2022", url="https://example.org/p")
    page = _get(client, "leaderboard:dataset", dataset.slug)
    assert "±0.25 points: hidden split" in page
    assert json.loads(_get(client, "leaderboard:export", dataset.slug, "json"))["grid"] == 0.005


# --- 2. one print ----------------------------------------------------------------------------------------


def test_a_grid_value_prints_alike_on_the_board_the_home_card_the_exports_and_the_client(client, grid_board):
    dataset, hidden, _ = grid_board
    page = _get(client, "leaderboard:dataset", dataset.slug)
    cells = re.findall(r'<td class="num primary[^"]*">([^<]+)</td>', page)
    assert cells == ["22", "10"], cells
    home = _get(client, "leaderboard:home")
    card = home.split(">GRIDSET<", 1)[1].split("</li>", 1)[0]
    assert re.search(r'class="best-value">([^<]+)<', card).group(1) == "22"
    rows = list(csv.DictReader(io.StringIO(_get(client, "leaderboard:export", dataset.slug, "csv"))))
    assert [r["R@100"] for r in rows] == ["22", "10"]
    tex = _get(client, "leaderboard:export", dataset.slug, "tex")
    assert "first & \\textbf{22} & -- & -- \\\\" in tex and "second & 10 & -- & -- \\\\" in tex
    data = json.loads(_get(client, "leaderboard:export", dataset.slug, "json"))
    assert [e["scores"]["R@100"] for e in data["entries"]] == [0.22, 0.1] and data["grid"] == 0.01
    # The client prints what the API gives as the site prints it.
    assert [cli.percent_text(e["scores"]["R@100"], data["grid"]) for e in data["entries"]] == ["22", "10"]
    body = cli.format_scores({"scores": {"R@100": 0.22}, "grid": 0.01})
    assert re.search(r"R@100\s+22\n", body)


def test_a_public_value_prints_with_the_sites_two_decimals_everywhere(client, grid_board):
    dataset, _, public = grid_board
    page = _get(client, "leaderboard:dataset", dataset.slug, split="dev")
    assert re.findall(r'<td class="num primary[^"]*">([^<]+)</td>', page) == ["22.04", "10.49"]
    rows = list(csv.DictReader(io.StringIO(_get(client, "leaderboard:export", dataset.slug, "csv", split="dev"))))
    assert [(r["R@100"], r["MAP@100"]) for r in rows] == [("22.04", "12.34"), ("10.49", "5.00")]
    tex = _get(client, "leaderboard:export", dataset.slug, "tex", split="dev")
    assert "first & \\textbf{22.04} & \\textbf{12.34} & \\textbf{34.56} \\\\" in tex
    assert cli.percent_text(0.2204) == "22.04" == percent_text(0.2204)


@pytest.mark.parametrize("step", [None, 0.001, 0.002, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0])
def test_the_client_formats_as_the_site_does(step):
    values = [0.0, 0.0049, 0.005, 0.2204, 0.22, 0.8226, 0.825, 0.8249, 0.995, 1.0, None]
    assert [cli.percent_text(v, step) for v in values] == [percent_text(v, step) for v in values]


def test_one_value_on_each_grid_reads_as_the_docs_say():
    assert percent_text(0.84, 0.01) == "84" and percent_text(0.845, 0.005) == "84.5"
    assert percent_text(0.8226, 0.005) == "82.5" and percent_text(0.8204) == "82.04"


def test_nothing_formats_a_score_but_the_one_function():
    """Scores are printed by ``evaluation.ladder.percent_text`` (through ``format_percent`` and
    ``disclosure.formatter``) and the client's twin: no "{100 * value:.2f}" of its own anywhere else."""
    pattern = re.compile(r"\{100 \* [^:{}]+:[<>]?\d*\.\d+f\}")
    offenders = [f"{path.relative_to(ROOT)}: {line.strip()}"
                 for folder in ("leaderboard", "participants", "snapshots", "api", "catalogue", "submissions",
                                "presentation", "sandbox", "campaigns", "lexboard_cli")
                 for path in (ROOT / folder).rglob("*.py")
                 for line in path.read_text().splitlines() if pattern.search(line) and "progress" not in line]
    assert offenders == ['lexboard_cli/client.py: return f"{100 * float(value):.2f}"'], offenders


# --- 3. exports name their unit; captions are true of their columns -------------------------------------


def _columns_with_entry_values(tex: str) -> set[str]:
    """Measures whose column holds a value for an entry scored here (not "--")."""
    lines = tex.splitlines()
    head = next(line for line in lines if line.startswith("System &"))
    names = [c.strip().rstrip("\\").strip().replace("\\_", "_") for c in head.split("&")[1:]]
    shown: set[str] = set()
    body = lines[lines.index("\\midrule") + 1: lines.index("\\bottomrule")]
    for line in body:
        if "$^\\dagger$" in line:  # a paper's row: its own numbers
            continue
        cells = [c.strip().rstrip("\\").strip() for c in line.split("&")[1:]]
        shown |= {n for n, c in zip(names, cells, strict=True) if c != "--"}
    return shown


@pytest.mark.parametrize("which", ["hidden", "public"])
def test_every_caption_is_true_of_the_table_under_it(client, grid_board, which):
    dataset, hidden, public = grid_board
    split = hidden if which == "hidden" else public
    params = {"split": split.name}
    tex = _get(client, "leaderboard:export", dataset.slug, "tex", **params)
    caption = _caption(tex)
    columns = _columns_with_entry_values(tex)
    assert "in percent" in caption  # the unit
    if split.hidden:
        # The caption names the one measure the entries show, and the columns hold exactly that one.
        claimed = re.search(r"show (\S+) only, the primary measure", caption).group(1)
        assert columns == {claimed} == {dataset.primary_measure}
        # The other columns are named as holding none of theirs.
        assert "MAP@100, MRR@100: -- for them" in caption
        assert "±0.5 points: hidden split" in caption  # its grid, 1 point: 100 topics
    else:
        assert "only" not in caption and "hidden" not in caption and "grid" not in caption
        assert columns == set(MEASURES)
    rows = list(csv.DictReader(io.StringIO(_get(client, "leaderboard:export", dataset.slug, "csv", **params))))
    assert {r["unit"] for r in rows} == {"percent points"}
    filled = {m for r in rows for m in MEASURES if r[m]}
    assert filled == columns
    data = json.loads(_get(client, "leaderboard:export", dataset.slug, "json", **params))
    assert data["scale"] == "fraction" and data["scores_are"] == disclosure.SCORES_ARE
    assert {m for e in data["entries"] for m, v in e["scores"].items() if v is not None} == columns
    assert (data["grid"] is None) == (not split.hidden)


def test_a_hidden_export_of_the_primary_measure_alone_claims_no_other_column(client, grid_board):
    dataset, _, _ = grid_board
    tex = _get(client, "leaderboard:export", dataset.slug, "tex", measures="R@100")
    caption = _caption(tex)
    assert "show R@100 only, the primary measure; ±0.5 points: hidden split." in caption
    assert "for them" not in caption
