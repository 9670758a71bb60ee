"""Checking a BibTeX entry as a reference manager reads it: one ``@type{key, field = {value}, ...}``.

The dataset cards (``catalogue/cards/*.json``) and the demo give each dataset's
citation as BibTeX text, which the dataset page shows with a copy button and the
``.bib`` exports append. :func:`bibtex_problems` says what is wrong with one
entry: unbalanced braces, no key, a field without a value, a field named twice,
or a field its entry type requires missing (BibTeX's standard styles).
"""

from __future__ import annotations

import re

#: The fields each entry type requires (BibTeX's standard styles; ``author`` may be ``editor`` for a book).
REQUIRED: dict[str, tuple[str, ...]] = {
    "article": ("author", "title", "journal", "year"),
    "inproceedings": ("author", "title", "booktitle", "year"),
    "conference": ("author", "title", "booktitle", "year"),
    "book": ("author", "title", "publisher", "year"),
    "incollection": ("author", "title", "booktitle", "publisher", "year"),
    "phdthesis": ("author", "title", "school", "year"),
    "mastersthesis": ("author", "title", "school", "year"),
    "techreport": ("author", "title", "institution", "year"),
    # BibTeX requires no field of these; a title is asked here, and (below) something that leads to the work.
    "misc": ("title",),
    "online": ("title",),
}
#: Entry types that must name at least one of these besides their title: a bare title leads nowhere.
ANY_OF: dict[str, tuple[str, ...]] = {
    "misc": ("author", "howpublished", "url", "doi", "eprint", "note"),
    "online": ("author", "url", "doi"),
}

_HEAD = re.compile(r"\s*@([A-Za-z]+)\s*\{\s*([^,\s{}]+)\s*,", re.DOTALL)
_NAME = re.compile(r"\s*([A-Za-z][A-Za-z0-9_-]*)\s*=\s*")


def _braced(text: str, start: int) -> int | None:
    """The index after the brace that closes the one at ``start``; None when it never closes."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif text[i] == "}" and (i == 0 or text[i - 1] != "\\"):
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def bibtex_fields(text: str) -> tuple[str, str, dict[str, str]]:
    """(entry type, key, {field: value without its outer braces}) of one entry; ValueError naming the fault."""
    head = _HEAD.match(text)
    if head is None:
        raise ValueError("does not start with @type{key, (e.g. @inproceedings{louis2022,)")
    kind, key = head.group(1).lower(), head.group(2)
    end = _braced(text, text.index("{", head.start()))
    if end is None:
        raise ValueError(f"{key}: its braces are not balanced (a {{ is never closed)")
    if text[end:].strip():
        raise ValueError(f"{key}: text after the entry's closing brace: {text[end:].strip()[:40]!r}")
    body, pos, fields = text[: end - 1], head.end(), {}
    while True:
        rest = body[pos:]
        if not rest.strip():
            break
        name = _NAME.match(body, pos)
        if name is None:
            raise ValueError(f"{key}: expected field = {{value}} at {rest.strip()[:40]!r}")
        field, pos = name.group(1).lower(), name.end()
        if pos < len(body) and body[pos] == "{":
            close = _braced(body, pos)
            if close is None:
                raise ValueError(f"{key}: the value of {field} is not closed")
            value, pos = body[pos + 1 : close - 1], close
        elif pos < len(body) and body[pos] == '"':
            close = body.find('"', pos + 1)
            if close < 0:
                raise ValueError(f"{key}: the value of {field} is not closed")
            value, pos = body[pos + 1 : close], close + 1
        else:
            word = re.match(r"[A-Za-z0-9]+", body[pos:])
            if word is None:
                raise ValueError(f"{key}: {field} has no value")
            value, pos = word.group(0), pos + word.end()
        if field in fields:
            raise ValueError(f"{key}: {field} is given twice")
        fields[field] = value.strip()
        comma = re.match(r"\s*,", body[pos:])
        if comma is None:
            if body[pos:].strip():
                raise ValueError(f"{key}: a comma is missing after {field}")
            break
        pos += comma.end()
    return kind, key, fields


def bibtex_problems(text: str) -> list[str]:
    """What is wrong with one BibTeX entry, in words; empty when it is well formed and complete for its type."""
    try:
        kind, key, fields = bibtex_fields(text.strip())
    except ValueError as exc:
        return [str(exc)]
    problems = []
    required = REQUIRED.get(kind)
    if required is None:
        problems.append(f"{key}: @{kind} is not an entry type the standard styles know")
    else:
        for name in required:
            if name == "author" and kind == "book" and fields.get("editor"):
                continue
            if not fields.get(name, "").strip("{} "):
                problems.append(f"{key}: @{kind} needs {name}")
    wanted = ANY_OF.get(kind, ())
    if wanted and not any(fields.get(name, "").strip("{} ") for name in wanted):
        problems.append(f"{key}: @{kind} with a title alone leads nowhere; give one of {', '.join(wanted)}")
    if "year" in fields and not re.fullmatch(r"\d{4}", fields["year"].strip("{} ")):
        problems.append(f"{key}: year {fields['year']!r} is not a year")
    return problems
