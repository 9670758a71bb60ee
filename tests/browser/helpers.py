"""Helpers shared by the browser tests (fixtures are in conftest.py)."""

from __future__ import annotations

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
