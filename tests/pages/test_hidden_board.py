"""A hidden split's board, exports and API: its primary measure only, on its grid, in one unit everywhere.

The tiny hidden split has 4 judged topics: its grid is the smallest nice step of at least a quarter, 50
points (``submissions.disclosure``). Every surface shows the same values; entries that tie at the grid share
a rank and keep the order they were submitted in, whatever their full-precision means.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.urls import reverse
from rest_framework.test import APIClient


@pytest.fixture
def board(hidden_test, alice, bob, make_entry):
    # Submitted first, lower at full precision: both are 50 on the grid, so "early" stays first.
    early = make_entry(hidden_test, alice, "early", {"R@10": 0.55, "MAP@10": 0.3123, "MRR@10": 0.5, "nDCG@10": 0.6})
    late = make_entry(hidden_test, bob, "late", {"R@10": 0.70, "MAP@10": 0.4567, "MRR@10": 0.7, "nDCG@10": 0.8})
    make_entry(hidden_test, bob, "low", {"R@10": 0.2, "MAP@10": 0.1})
    return early, late


def _board_html(client) -> str:
    return client.get(reverse("leaderboard:dataset", args=["tiny"])).content.decode()


def test_the_board_shows_the_grid_and_ties_at_it_in_submission_order(client, board):
    html = _board_html(client)
    assert "±25 points: hidden split" in html and 'href="/docs/metrics/#hidden-grid"' in html
    systems = re.findall(r'<a href="/submissions/\d+/">([^<]+)</a>', html)
    assert systems.index("early") < systems.index("late") < systems.index("low")
    assert re.findall(r'<td class="num rank">(\d+)</td>', html) == ["1", "1", "3"]
    for hidden_digits in ("31.23", "45.67", "55.00", "70.00", "70", "55"):
        assert f">{hidden_digits}<" not in html, hidden_digits


def test_every_export_and_the_api_give_the_same_values_in_one_named_unit(client, board):
    early, late = board
    url = reverse("leaderboard:export", args=["tiny", "csv"])
    rows = list(csv.DictReader(io.StringIO(client.get(url).content.decode())))
    assert [(r["system"], r["rank"], r["R@10"], r["MAP@10"]) for r in rows] == [
        ("early", "1", "50", ""), ("late", "1", "50", ""), ("low", "3", "0", "")]
    data = json.loads(client.get(reverse("leaderboard:export", args=["tiny", "json"])).content)
    assert [e["scores"]["R@10"] for e in data["entries"]] == [0.5, 0.5, 0.0]
    assert all(e["scores"]["MAP@10"] is None for e in data["entries"])
    assert data["grid"] == 0.5 and data["scores_are"].startswith("fractions (0..1)")
    tex = client.get(reverse("leaderboard:export", args=["tiny", "tex"]), {"measures": "R@10,MAP@10"}).content.decode()
    assert "early & \\textbf{50} & -- \\\\" in tex and "±25 points: hidden split" in tex
    api = APIClient().get(reverse("api:leaderboard", args=["tiny"])).json()
    assert [e["scores"]["R@10"] for e in api["entries"]] == [0.5, 0.5, 0.0] and api["grid"] == 0.5
    assert api["scores_are"] == data["scores_are"]
    for submission in (early, late):
        body = APIClient().get(reverse("api:submission", args=[submission.pk])).json()
        assert body["scores"] == {"R@10": 0.5} and body["grid"] == 0.5 and body["scores_are"] == data["scores_are"]


def test_the_owner_sees_what_everyone_sees(client, board, alice):
    early, _ = board
    client.force_login(alice)
    page = client.get(reverse("participants:detail", args=[early.pk])).content.decode()
    scores = page.split('id="scores-title"', 1)[1].split("</section>", 1)[0]
    assert re.findall(r"<td>([^<]*)</td>", scores) == ["50"]
    assert "MAP@10" not in scores and "±25 points: hidden split" in scores
    api = APIClient()
    api.force_authenticate(alice)
    assert api.get(reverse("api:submission", args=[early.pk])).json()["scores"] == {"R@10": 0.5}
    mine = client.get(reverse("participants:mine")).content.decode()
    assert "55.00" not in mine and "55" not in re.findall(r">(\d+(?:\.\d+)?)<", mine)
