"""Leaderboard tables as files: CSV, JSON, LaTeX (booktabs) and the dataset's BibTeX.

Plain functions over :class:`~catalogue.selectors.LeaderboardRow` lists, so
they are tested without a request. Callers pass public rows only: private
entries never leave the site in an export, not even for their owner.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from catalogue.models import Dataset, Split
from evaluation.csv_cells import csv_rows
from submissions import disclosure
from submissions.provenance import SEEN_SHORT, TRAINING_SHORT

from .selectors import LeaderboardRow, cell_format

FIELDS = ["rank", "kind", "system", "owner", "team", "family", "date", "paper_url", "code_url", "source"]
#: The CSV's last column, the unit of its score cells (every row: the CSV has no comment line a reader would
#: take for its header); the JSON names its own (``scores_are``), the LaTeX caption says "in percent".
UNIT_COLUMN = "unit"
UNIT = "percent points"
#: Provenance columns of the CSV (after ``FIELDS``), as the owner stated it; blank for reported rows.
PROVENANCE_COLUMNS = ["training_data", "could_have_seen", "models", "disclosed", "training_data_note"]


class ExportError(Exception):
    """An export request that cannot be honoured, with a message for the person who asked."""


def public_only(rows: Sequence[LeaderboardRow]) -> list[LeaderboardRow]:
    """Drop private rows; a second guard beside the selector call without a user."""
    return [r for r in rows if not r.is_private]


def choose_measures(dataset: Dataset, requested: str | None) -> list[str]:
    """The measures named in ``?measures=R@100,MAP@100`` (in that order), or all of the dataset's.

    Refuses names the dataset does not have, naming the ones it has.
    """
    available = list(dataset.measures or [])
    if not requested:
        return available
    chosen = [m.strip() for m in requested.split(",") if m.strip()]
    unknown = [m for m in chosen if m not in available]
    if unknown:
        raise ExportError(
            f"{dataset.name} has no measure {', '.join(unknown)}; choose among {', '.join(available)}."
        )
    return list(dict.fromkeys(chosen))


def models_text(models: Sequence[dict[str, str]] | None) -> str:
    """``BAAI/bge-m3 (MIT); openai:gpt-4o (proprietary)``: the models of a row in one cell."""
    return "; ".join(f"{m.get('id', '')} ({m.get('licence', '')})" for m in models or [])


def provenance_cells(row: dict[str, Any]) -> list[str]:
    """The ``PROVENANCE_COLUMNS`` of a row (a board row's ``to_dict()`` or a snapshot's stored row)."""
    if row.get("kind") == "reported" or row.get("training_data") is None:
        return ["", "", "", "", ""]
    return [row["training_data"], row.get("could_have_seen") or "", models_text(row.get("models")),
            "yes" if row.get("disclosed") else "no", row.get("training_data_note") or ""]


def states_provenance(rows: Sequence[dict[str, Any]]) -> bool:
    """Whether any entry states some provenance: the LaTeX table's two columns, else a column of "?" (left out)."""
    return any(row.get("kind") != "reported" and (row.get("training_data") not in (None, "unknown")
                                                  or row.get("could_have_seen") not in (None, "unknown"))
               for row in rows)


def latex_provenance(row: dict[str, Any]) -> list[str]:
    """The LaTeX table's two provenance cells (short words, ``?`` when not stated, ``--`` for reported rows)."""
    if row.get("kind") == "reported" or row.get("training_data") is None:
        return ["--", "--"]
    return [TRAINING_SHORT.get(row["training_data"], "?"), SEEN_SHORT.get(row.get("could_have_seen") or "", "?")]


LATEX_PROVENANCE_NOTE = (
    "{\\footnotesize Trained on and could have seen: as each entry's owner states it. Trained on: none; train "
    "(the dataset's train split); legal (other legal corpora); web (web-scale data); ? (not stated). Could have "
    "seen the test data: no; corpus; questions; both; ?.}"
)


def _cell_format(split: Split | None):
    """How an entry's value is written: the split's grid for entries scored here, papers' numbers as printed (the
    board's own :func:`leaderboard.selectors.cell_format`)."""
    return cell_format(split)


def to_csv(rows: Sequence[LeaderboardRow], *, measures: list[str], split: Split | None = None,
           fmt_value=None) -> str:
    """One line per entry; scores in percent as the pages show them (empty when missing), the last column
    (:data:`UNIT_COLUMN`) naming the unit.

    Two decimals, or on a hidden split the precision of its grid (``submissions.disclosure``); ``fmt_value``: a
    board's own formatting of every value (the private board's grid).

    Written by :func:`evaluation.csv_cells.csv_rows`, the one CSV writer: every cell quoted, and no text cell
    (a participant's system or team name) read as a formula, at its start or after a separator.
    """
    lines = [FIELDS + PROVENANCE_COLUMNS + measures + [UNIT_COLUMN]]
    fmt = (lambda row, value: fmt_value(value)) if fmt_value is not None else _cell_format(split)
    for row in public_only(rows):
        values = [getattr(row, f) for f in FIELDS]
        values = ["" if v is None else (v.isoformat() if hasattr(v, "isoformat") else v) for v in values]
        scores = ["" if row.scores.get(m) is None else fmt(row, row.scores[m]) for m in measures]
        lines.append(values + provenance_cells(row.to_dict()) + scores + [UNIT])
    return csv_rows(lines)


def to_json(rows: Sequence[LeaderboardRow], *, dataset: Dataset, split: Split, measures: list[str]) -> str:
    """The table with enough context to be read on its own (dataset, split, qrels version, measures)."""
    entries = []
    for row in public_only(rows):
        data = row.to_dict()
        data.pop("is_private", None)
        data.pop("extra", None)
        data["scores"] = {m: row.scores.get(m) for m in measures}
        entries.append(data)
    payload = {
        "dataset": dataset.slug,
        "dataset_name": dataset.name,
        "split": split.name,
        "qrels_version": split.current_qrels.version if split.current_qrels_id and split.current_qrels else None,
        "measures": measures,
        "primary_measure": dataset.primary_measure,
        # Fractions for programs (on a hidden split on its grid, ``grid``); pages, CSV and LaTeX show percent.
        "scale": "fraction",
        "scores_are": disclosure.SCORES_ARE,
        "grid": disclosure.grid_step(split),
        "note": "Rows of kind 'reported' are results reported in papers, not scored by Lexboard.",
        "entries": entries,
    }
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
}
_LATEX_RE = re.compile("|".join(re.escape(c) for c in _LATEX_SPECIALS))


def latex_escape(text: str) -> str:
    """Text safe inside a LaTeX table cell (every special character escaped, in one pass)."""
    return _LATEX_RE.sub(lambda m: _LATEX_SPECIALS[m.group()], str(text))


def to_latex(rows: Sequence[LeaderboardRow], *, dataset: Dataset, split: Split, measures: list[str],
             caption: str | None = None, fmt_value=None) -> str:
    """A booktabs table ready for a paper.

    The best value of each column is bold (every row sharing it); values are
    in percent or fraction as the dataset shows them; results reported in a
    paper carry a dagger and a footnote says they were not scored here.
    """
    rows = public_only(rows)
    fmt = (lambda row, value: fmt_value(value)) if fmt_value is not None else _cell_format(split)
    provenance = states_provenance([r.to_dict() for r in rows])
    best = {}
    for m in measures:
        # Compare what the reader sees, so two values printed alike are both bold.
        best[m] = max((fmt(r, r.scores[m]) for r in rows if r.scores.get(m) is not None), key=float, default=None)
    caption = caption if caption is not None else _caption(rows, dataset=dataset, split=split, measures=measures)
    has_reported = any(r.kind == "reported" for r in rows)
    lines = [
        f"% {latex_escape(dataset.name)}, split {latex_escape(split.name)}: exported from Lexboard.",
        "% Requires \\usepackage{booktabs}.",
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{{caption}}}",
        f"\\label{{tab:{_label(dataset.slug)}-{_label(split.name)}}}",
        "\\begin{tabular}{l" + ("ll" if provenance else "") + "r" * len(measures) + "}",
        "\\toprule",
        " & ".join(["System"] + (["Trained on", "Could see"] if provenance else [])
                   + [latex_escape(m) for m in measures]) + " \\\\",
        "\\midrule",
    ]
    for row in rows:
        name = latex_escape(row.system)
        if row.kind == "reported":
            name += "$^\\dagger$"
        elif row.kind == "baseline":
            name += " (baseline)"
        cells = [name, *(latex_provenance(row.to_dict()) if provenance else [])]
        for m in measures:
            value = row.scores.get(m)
            if value is None:
                cells.append("--")
                continue
            text = fmt(row, value)
            cells.append(f"\\textbf{{{text}}}" if text == best[m] else text)
        lines.append(" & ".join(cells) + " \\\\")
    lines.append("\\bottomrule")
    lines.append("\\end{tabular}")
    if provenance:
        lines += ["\\par\\smallskip", LATEX_PROVENANCE_NOTE]
    if has_reported:
        lines.append("\\par\\smallskip")
        lines.append(
            "{\\footnotesize $^\\dagger$ Reported in the paper that introduced the system; not scored by Lexboard.}"
        )
    lines.append("\\end{table}")
    return "\n".join(lines) + "\n"


def _label(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9-]", "-", text)


def hidden_caption(*, primary: str, measures: Sequence[str], note: str) -> str:
    """What a hidden split's LaTeX caption says of its entries scored here, true of the columns ``measures``: the
    one measure they show, that the other columns hold none of theirs ("--"), and the grid ``note`` (none before
    the split has evaluated topics)."""
    others = [m for m in measures if m != primary]
    text = (f" Entries scored here (a hidden split) show {latex_escape(primary)} only, the primary measure"
            + (f"; {latex_escape(', '.join(others))}: -- for them" if others else ""))
    return text + (f"; {latex_escape(note)}." if note else ".")


def _caption(rows: Sequence[LeaderboardRow], *, dataset: Dataset, split: Split, measures: Sequence[str]) -> str:
    caption = f"Results on {latex_escape(dataset.name)} ({latex_escape(split.name)} split), in percent."
    caption += " Best value per column in bold."
    if disclosure.hidden(split):
        caption += hidden_caption(primary=dataset.primary_measure, measures=measures,
                                  note=disclosure.grid_note(split))
    if any(r.kind == "baseline" for r in rows):
        caption += " Baselines were scored by Lexboard like any entry."
    return caption


def to_bibtex(dataset: Dataset) -> str:
    """The dataset's citation as curators entered it."""
    if not dataset.citation.strip():
        raise ExportError(f"{dataset.name} has no citation yet; please cite its homepage instead.")
    return dataset.citation.strip() + "\n"
