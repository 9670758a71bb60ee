"""The metrics page's table of measures is the measure registry (#40): every family, its formula and its trec_eval
name, never a hand-written copy (the copy had lost bpref, MAP' and nDCG')."""

from __future__ import annotations

import html

import pytest

from evaluation.measures import FAMILIES


@pytest.mark.django_db
def test_the_metrics_page_lists_every_family_of_the_registry(client):
    page = html.unescape(client.get("/docs/metrics/").content.decode())
    table = page[page.index('id="measures-caption"'):page.index("</table>", page.index('id="measures-caption"'))]
    for family in FAMILIES.values():
        name = f"{family.family}@k" if family.takes_k else family.family
        assert f'<th scope="row">{name}</th><td>{family.formula}</td>' in table, name
