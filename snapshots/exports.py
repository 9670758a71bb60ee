"""A snapshot as files: JSON, CSV, LaTeX (booktabs) and its BibTeX entry.

Written from the snapshot's stored rows and printed cells only (nothing is
recomputed, so a hidden split's file holds the digits its board showed);
the writers of the living board's exports are reused for the cells that
need care (:func:`evaluation.csv_cells.csv_rows`, :func:`leaderboard.exports.latex_escape`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from evaluation.csv_cells import csv_rows
from leaderboard.exports import (
    LATEX_PROVENANCE_NOTE,
    PROVENANCE_COLUMNS,
    UNIT,
    UNIT_COLUMN,
    hidden_caption,
    latex_escape,
    latex_provenance,
    provenance_cells,
    states_provenance,
)

from .models import Snapshot

CSV_FIELDS = ["rank", "kind", "system", "owner", "team", "family", "date", "paper_url", "code_url", "source",
              "run_sha256"]


def _has_provenance(snapshot: Snapshot) -> bool:
    """Taken since entries state their provenance (older snapshots hold ``used_training_data``, kept as taken)."""
    return any("training_data" in row for row in snapshot.rows)


def to_json(snapshot: Snapshot, *, url: str) -> str:
    """Everything the snapshot states, its digest and address; values as fractions (``scores``) and as printed."""
    payload: dict[str, Any] = {"snapshot": snapshot.key, "url": url, **snapshot.content(), "digest": snapshot.digest,
                               "digest_of": "sha256 of the canonical JSON (sorted keys, no spaces) of every field "
                                            "above except snapshot, url and digest"}
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


def to_csv(snapshot: Snapshot) -> str:
    """One line per entry, the values as the board printed them (percent, a hidden split's grid)."""
    provenance = _has_provenance(snapshot)
    lines: list[list[Any]] = [CSV_FIELDS + (PROVENANCE_COLUMNS if provenance else []) + list(snapshot.measures)
                              + [UNIT_COLUMN]]
    for row in snapshot.rows:
        lines.append(["" if row.get(f) is None else row.get(f) for f in CSV_FIELDS]
                     + (provenance_cells(row) if provenance else [])
                     + [row["cells"].get(m, "") for m in snapshot.measures] + [UNIT])
    return csv_rows(lines)


def _label(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9-]", "-", text)


def to_latex(snapshot: Snapshot) -> str:
    """A booktabs table of the snapshot, best value per column in bold, its identity in the caption."""
    measures = [m for m in snapshot.measures if any(r["cells"].get(m) for r in snapshot.rows)] or \
        [snapshot.primary_measure]
    provenance = states_provenance(snapshot.rows)
    best = {m: max((r["cells"][m] for r in snapshot.rows if r["cells"].get(m)), key=float, default=None)
            for m in measures}
    caption = (f"Results on {latex_escape(snapshot.dataset_name)} ({latex_escape(snapshot.split_name)} split), "
               f"in percent, Lexboard snapshot {latex_escape(snapshot.key)} (qrels version "
               f"{snapshot.qrels_version}). Best value per column in bold.")
    if snapshot.grid_note:  # a hidden split's (stated since the split had evaluated topics)
        caption += hidden_caption(primary=snapshot.primary_measure, measures=measures, note=snapshot.grid_note)
    lines = [
        f"% {latex_escape(snapshot.title)}: exported from Lexboard ({snapshot.taken_at:%Y-%m-%d %H:%M} UTC).",
        f"% sha256 of the snapshot: {snapshot.digest}",
        "% Requires \\usepackage{booktabs}.",
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{{caption}}}",
        f"\\label{{tab:lexboard-{_label(snapshot.key)}}}",
        "\\begin{tabular}{l" + ("ll" if provenance else "") + "r" * len(measures) + "}",
        "\\toprule",
        " & ".join(["System"] + (["Trained on", "Could see"] if provenance else [])
                   + [latex_escape(m) for m in measures]) + " \\\\",
        "\\midrule",
    ]
    reported = False
    for row in snapshot.rows:
        name = latex_escape(row["system"])
        if row["kind"] == "reported":
            name += "$^\\dagger$"
            reported = True
        elif row["kind"] == "baseline":
            name += " (baseline)"
        cells = [name, *(latex_provenance(row) if provenance else [])]
        for m in measures:
            text = row["cells"].get(m, "")
            cells.append("--" if not text else f"\\textbf{{{text}}}" if text == best[m] else text)
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    if provenance:
        lines += ["\\par\\smallskip", LATEX_PROVENANCE_NOTE]
    if reported:
        lines += ["\\par\\smallskip",
                  "{\\footnotesize $^\\dagger$ Reported in the paper that introduced the system; "
                  "not scored by Lexboard.}"]
    lines.append("\\end{table}")
    return "\n".join(lines) + "\n"


_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]


def bibtex_key(snapshot: Snapshot) -> str:
    return "lexboard-" + _label(snapshot.key)


def _bib(text: str) -> str:
    """A BibTeX field value: braces balanced away, LaTeX specials escaped."""
    return latex_escape(text)


def to_bibtex(snapshot: Snapshot, *, url: str, dataset_citation: str = "") -> str:
    """The snapshot's @misc entry; the dataset's own citation after it (cite both)."""
    taken = snapshot.taken_at
    entry = "\n".join([
        f"@misc{{{bibtex_key(snapshot)},",
        f"  title        = {{{{{_bib(snapshot.title)}}}}},",
        "  author       = {{Lexboard}},",
        f"  howpublished = {{\\url{{{url}}}}},",
        f"  year         = {{{taken.year}}},",
        f"  month        = {_MONTHS[taken.month - 1]},",
        f"  note         = {{{_bib(snapshot.benchmark_name)}, {_bib(snapshot.dataset_name)}, "
        f"{_bib(snapshot.split_name)} split; leaderboard state of {taken:%Y-%m-%d %H:%M} UTC; "
        f"qrels version {snapshot.qrels_version}; metric core {_bib(snapshot.core_version)}; "
        f"snapshot sha256 {snapshot.digest[:16]}}},",
        "}",
    ])
    if dataset_citation.strip():
        entry += "\n\n% The dataset itself:\n" + dataset_citation.strip()
    return entry + "\n"
