"""The analyses on a submission's page and the per-query CSV; hidden splits show aggregates only."""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET

from django.urls import reverse

from presentation import plots

from .conftest import N_TOPICS, qid


def svgs(html: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", html, flags=re.S)


def test_a_dev_submission_page_shows_intervals_breakdowns_plots_and_the_per_query_table(client, scored, alice):
    sub = scored("dev", alice, "shifted")
    html = client.get(sub.get_absolute_url()).content.decode()
    assert "95% bootstrap intervals" in html and "Judged@10" in html
    assert "By category" in html and "rare" in html  # dev split: every category, whatever its size
    assert "By number of relevant documents" in html
    for label in ("2–5", "6–20", "&gt;20"):
        assert label in html
    assert qid(0) in html and "Secret question number 0?" in html
    assert reverse("participants:per_query_csv", args=[sub.pk]) in html
    plots_found = svgs(html)
    assert len(plots_found) == 2
    for svg in plots_found:
        root = ET.fromstring(svg)
        assert root.find("{http://www.w3.org/2000/svg}title").text
        assert root.find("{http://www.w3.org/2000/svg}desc").text


def test_a_hidden_split_submission_page_has_no_per_query_values(client, scored, alice):
    sub = scored("test", alice, "shifted")
    response = client.get(sub.get_absolute_url())
    html = response.content.decode()
    # No bootstrap interval: seeded, its endpoints are equations on a crafted run's per-query values
    # (tests/security/test_bootstrap_leak.py).
    assert "95% bootstrap intervals" not in html and "95% interval" not in html
    assert "secretq" not in html and "Secret question" not in html
    # No category, however large: a crafted run makes a category of ten queries one query
    # (tests/security/test_category_leak.py).
    assert "By category" not in html and ">family<" not in html and ">work<" not in html and ">rare<" not in html
    assert "per-query.csv" not in html
    for svg in svgs(html):
        ET.fromstring(svg)
        assert "secretq" not in svg
    assert client.get(reverse("participants:per_query_csv", args=[sub.pk])).status_code == 404


def test_the_per_query_csv_has_one_row_per_query(client, scored, alice):
    sub = scored("dev", alice, "perfect")
    response = client.get(reverse("participants:per_query_csv", args=[sub.pk]))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == N_TOPICS
    assert list(rows[0])[:5] == ["qid", "query", "category", "n_relevant", "first_relevant_rank"]
    assert rows[0]["qid"] == qid(0) and rows[0]["first_relevant_rank"] == "1" and float(rows[0]["R@10"]) == 1.0


def test_the_per_query_csv_of_a_private_submission_is_only_for_its_owner(client, scored, alice, bob):
    sub = scored("dev", alice, "perfect", visibility="private")
    url = reverse("participants:per_query_csv", args=[sub.pk])
    assert client.get(url).status_code == 404
    client.force_login(bob)
    assert client.get(url).status_code == 404
    client.force_login(alice)
    assert client.get(url).status_code == 200


def test_the_plots_are_well_formed_svg_with_escaped_text():
    for svg in (
        plots.line_chart([plots.Series("a <b> & c", [(1, 0.1), (10, 0.5), (100, 0.9)]),
                          plots.Series("second", [(1, 0.2), (100, 0.3)])],
                         title="T <1>", desc="D & d", x_label="k", y_label="R@k", log_x=True),
        plots.histogram([1, 0, 3], [0.0, 0.33, 0.66, 1.0], title="H", desc="d", x_label="x"),
        plots.scatter([(0.1, 0.2), (1.0, 0.0)], labels=["q<1>", "q2"], title="S", desc="d", x_label="a", y_label="b"),
        plots.line_chart([], title="empty", desc="nothing", x_label="k", y_label="y"),
    ):
        root = ET.fromstring(str(svg))
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert root.get("role") == "img" and root.get("aria-labelledby")
        texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
        assert any(texts)


def test_the_hidden_splits_leaderboard_shows_markers_but_no_query(client, scored, alice, bob, analysis_dataset):
    scored("test", alice, "perfect")
    scored("test", bob, "shifted")
    html = client.get(analysis_dataset.get_absolute_url() + "?split=test").content.decode()
    assert "Bonferroni over the 1 marker and 1 tier comparison together" in html
    assert "secretq" not in html and "Secret question" not in html


def _ticks(svg: str) -> list[str]:
    return re.findall(r'class="plot-tick"[^>]*>([^<]+)<', svg)


def test_the_run_pages_charts_are_in_the_sites_unit_percent(client, scored, alice):
    """#38: the recall curve and the histogram ran 0–1 beside tables in percent; they are drawn 0 to 100."""
    sub = scored("dev", alice, "shifted")
    html = client.get(sub.get_absolute_url()).content.decode()
    recall, histogram = svgs(html)
    assert "mean R@k (%)" in recall and _ticks(recall)[-1] == "100" and "1" not in _ticks(recall)[:6]
    assert [t for t in _ticks(recall) if "." in t] == []  # no 0.2, 0.4 …
    assert "(%)" in histogram
    assert {"0", "50", "100"} <= set(_ticks(histogram)) and "0.5" not in _ticks(histogram)
    assert "each tenth of 0 to 100 %" in histogram and "90–100:" in histogram
