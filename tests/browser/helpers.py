"""Helpers shared by the browser tests (fixtures are in conftest.py)."""

from __future__ import annotations

from pathlib import Path

#: Bounded waits for the worker (the test machines are shared and slow).
SCORING_TIMEOUT_MS = 90_000


#: Cheap accessibility checks run in the page: landmarks, one h1, a language, and an accessible
#: name for every visible form control (a <label>, aria-label or aria-labelledby).
_A11Y_SCRIPT = """() => {
  const problems = [];
  if (!document.documentElement.lang) problems.push("<html> has no lang");
  for (const sel of ["header", "nav", "main", "footer"]) {
    if (!document.querySelector(sel)) problems.push(`no <${sel}> landmark`);
  }
  const h1 = document.querySelectorAll("h1").length;
  if (h1 !== 1) problems.push(`${h1} <h1> elements`);
  for (const el of document.querySelectorAll("input, select, textarea")) {
    if (["hidden", "submit", "button", "reset"].includes(el.type)) continue;
    const style = getComputedStyle(el);
    if (style.display === "none" || style.visibility === "hidden") continue;
    const named = (el.labels && el.labels.length) || el.getAttribute("aria-label") || el.getAttribute("aria-labelledby");
    if (!named) problems.push(`unlabelled ${el.tagName.toLowerCase()} name=${el.name}`);
  }
  return problems;
}"""


def accessibility_problems(page) -> list[str]:
    """What the current page misses of the basic landmarks, headings and form labels."""
    return page.evaluate(_A11Y_SCRIPT)


#: axe-core (npm package axe-core, version in the file's first line; licence beside it), vendored for the tests
#: only: injected into the page under test by ``axe_violations``, never served by the site.
AXE_SOURCE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
#: WCAG 2.0 and 2.1, levels A and AA: the rules a public site people cite in papers must pass.
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
#: Best-practice rules the site once broke (a landmark named twice on compare, an empty column heading), kept on.
AXE_EXTRA = ["landmark-unique", "empty-table-header"]


def axe_violations(page) -> list[str]:
    """The axe-core violations of WCAG 2.1 A/AA on the current page: ``rule (impact): selector`` per node."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(AXE_SOURCE.read_text(encoding="utf-8"))  # evaluated through the driver: the CSP allows it
    options = {"runOnly": {"type": "tag", "values": AXE_TAGS}, "rules": {r: {"enabled": True} for r in AXE_EXTRA}}
    found = page.evaluate("options => axe.run(document, options)"
                          ".then(r => r.violations.map(v => [v.id, v.impact, v.nodes.map(n => n.target.join(' '))]))",
                          options)
    return [f"{rule} ({impact}): {', '.join(nodes[:5])}" for rule, impact, nodes in found]
