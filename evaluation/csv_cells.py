"""CSV a spreadsheet opens as data: every cell quoted, no text cell read as a formula.

Every CSV the site writes (leaderboard and private-board exports, per-query
tables, judgment pools) goes through :func:`csv_text`, so the rule lives
here once; the metric core holds it because the pool files are written here
and this layer imports nothing.

The rule (OWASP's "CSV Injection", widened to what spreadsheets actually do):

* every cell is quoted (``csv.QUOTE_ALL``), so a separator or a line break
  inside a cell never starts another cell in a reader that honours quotes;
* a text cell that *starts* like a formula (``=``, ``+``, ``-``, ``@``, tab or
  carriage return), possibly after spaces or zero-width characters that a
  spreadsheet drops, gets a leading ``'``, which spreadsheets read as "this is
  text";
* the same after each separator a spreadsheet may split on when it ignores
  the quotes or guesses another separator (``;`` in locales with a decimal
  comma, ``,``, tab, ``|``) or after a line break: ``x;=HYPERLINK(…)`` becomes
  ``x;'=HYPERLINK(…)``, so the piece after the ``;`` is text too.

Numbers are written by the callers as numbers and never pass through here.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence

#: A spreadsheet reads a cell starting with one of these as a formula.
FORMULA_STARTS = "=+-@\t\r"
#: Where a spreadsheet may start a new cell when it splits a line itself.
SEPARATORS = ";,\t|\r\n"
#: Characters a spreadsheet may drop before it looks at the first one: spaces and zero-width ones.
INVISIBLE = " \u00a0\u200b\u200c\u200d\u2060\ufeff"

_FORMULA = re.compile(
    rf"(^|[{re.escape(SEPARATORS)}])(?=[{re.escape(INVISIBLE)}]*[{re.escape(FORMULA_STARTS)}])"
)


def csv_text(value: str) -> str:
    """``value`` with a ``'`` before every place a spreadsheet could start a formula (module docstring)."""
    return _FORMULA.sub(lambda m: m.group(1) + "'", value)


def csv_cell(value: object) -> object:
    """A cell as :func:`csv_rows` writes it: text through :func:`csv_text`, anything else as it is."""
    return csv_text(value) if isinstance(value, str) else value


def csv_rows(rows: Iterable[Sequence[object]]) -> str:
    """The rows as CSV text: every cell quoted, every text cell neutralised; ``\\n`` line ends."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)
    for row in rows:
        writer.writerow([csv_cell(value) for value in row])
    return out.getvalue()
