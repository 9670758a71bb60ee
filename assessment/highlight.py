"""Search terms marked in a document's text, so an assessor finds the passages that matter.

The terms are the question's words (and any the assessor types), compared
without case and accents, minus short words and common French, English and
Greek function words. The text is escaped piece by piece, so the result is
safe HTML with ``<mark>`` around the matches.
"""

from __future__ import annotations

import re
import unicodedata

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

_WORD = re.compile(r"\w+", re.UNICODE)
#: Words too common to help (the corpora are French, Greek and English legal texts).
STOPWORDS = frozenset("""
the and for are but not you with this that from have was were what which when where who will would can
les des une que qui dans pour par sur est son ses aux avec plus pas mais ont été être sont leur leurs cette
ces peut doit tout tous elle ils nous vous quel quelle quels quelles comment faire mon mes
και του της των τον την στο στη στην για από που είναι ένα μια δεν θα ότι με σε ως
""".split())


def _fold(word: str) -> str:
    """Lower case without accents: ``Locataire`` and ``locataire``, ``délai`` and ``delai`` match."""
    decomposed = unicodedata.normalize("NFD", word.casefold())
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn")


def search_terms(*texts: str, min_length: int = 4) -> set[str]:
    """The folded words of ``texts`` worth marking."""
    out = set()
    for text in texts:
        for w in _WORD.findall(text or ""):
            f = _fold(w)
            if len(f) >= min_length and f not in STOPWORDS and not f.isdigit():
                out.add(f)
    return out


def highlight(text: str, terms: set[str]) -> SafeString:
    """``text`` escaped, with each word whose folded form (or a 5-letter prefix of it) is a term in ``<mark>``.

    The prefix match lets ``locataire`` mark ``locataires``; it is a reading
    aid, not a stemmer.
    """
    prefixes = {t[:5] for t in terms if len(t) >= 5}
    pieces: list[str] = []
    at = 0
    for m in _WORD.finditer(text or ""):
        pieces.append(escape(text[at:m.start()]))
        word = m.group(0)
        f = _fold(word)
        if f in terms or (len(f) >= 5 and f[:5] in prefixes):
            pieces.append(f"<mark>{escape(word)}</mark>")
        else:
            pieces.append(escape(word))
        at = m.end()
    pieces.append(escape((text or "")[at:]))
    return mark_safe("".join(pieces))  # every piece was escaped above
