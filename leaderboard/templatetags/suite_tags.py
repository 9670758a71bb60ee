"""``{% suite_section benchmark %}``: the suite table of a benchmark page, without touching its view."""

from __future__ import annotations

from django import template

from leaderboard.suites import suite_table

register = template.Library()


@register.inclusion_tag("leaderboard/suite.html")
def suite_section(benchmark):
    """Render ``leaderboard/suite.html`` for ``benchmark`` (nothing when it does not aggregate)."""
    return {"suite": suite_table(benchmark=benchmark)}
