"""Dataset cards shipped with the code: BSARD, GreekBarRetrieval and LEXTREME.

Each card (``<name>.json`` here) holds a benchmark, a dataset with its
measures and citation, its splits and where its reported results are in
``reported_results.json`` (a copy of the papers' numbers, so the app does not
depend on anything outside the repository). :func:`cards_load` makes the
database match the cards, so the leaderboards show the papers' results before
a curator imports any data.

Loading is idempotent and conservative: missing rows are created; rows that
exist and differ from the card are left alone (a curator may have edited them
in the admin) and reported, unless ``update=True``. A dataset field that still
holds a value an older card gave it (the card's ``replaces``) takes the card's
current value: nobody changed it. ``citation_missing`` names the bibliographic
fields a card does not know yet (tests/catalogue/test_bibtex.py). Existing splits are never
changed (their caps and hidden flag belong to the curators).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from catalogue.models import Benchmark, Dataset, ReportedResult, Split

CARDS_DIR = Path(__file__).resolve().parent
CARD_NAMES = ("bsard", "greekbarretrieval", "lextreme")

_BENCHMARK_FIELDS = ("name", "description", "homepage", "aggregate", "order")
_DATASET_FIELDS = (
    "name",
    "language",
    "task",
    "description",
    "citation",
    "homepage",
    "license",
    "docid_example",
    "relevance_threshold",
    "depth",
    "measures",
    "primary_measure",
    "score_precision",
    "empty_queries",
    "category_min_queries",
    "order",
)
_REPORTED_FIELDS = ("split", "family", "scores", "params", "latency_ms", "url", "notes", "order")


@dataclass
class CardsReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    differs: list[str] = field(default_factory=list)
    unchanged: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated)

    def lines(self) -> list[str]:
        out = [f"created {x}" for x in self.created] + [f"updated {x}" for x in self.updated]
        out += [f"kept {x}: it differs from its card (load_cards --update overwrites it)" for x in self.differs]
        out.append(f"{self.unchanged} rows already matched their cards" if not self.changed else
                   f"{len(self.created)} created, {len(self.updated)} updated, {self.unchanged} unchanged")
        return out


def read_card(name: str) -> dict:
    return json.loads((CARDS_DIR / f"{name}.json").read_text(encoding="utf-8"))


def reported_results() -> dict:
    return json.loads((CARDS_DIR / "reported_results.json").read_text(encoding="utf-8"))


def to_fraction(value: float, scale: str) -> float:
    """Scores are stored as fractions whatever the paper printed (51.33 % → 0.5133)."""
    if scale == "percent":
        return round(value / 100, 6)
    return float(value)


def reported_rows(card: dict, results: dict) -> list[dict]:
    """The card's reported results as ReportedResult field values (fractions), in the paper's order."""
    spec = card.get("reported")
    if not spec:
        return []
    block = results[spec["key"]]
    scale = spec["scale"]
    notes = spec.get("row_notes", {})
    rows = []
    if "aggregates" in spec:  # LEXTREME: one column per aggregate, one row per model
        systems: dict[str, dict[str, float]] = {}
        for key, measure in spec["aggregates"].items():
            for system, value in block[key].items():
                systems.setdefault(system, {})[measure] = to_fraction(value, scale)
        for system, scores in systems.items():
            rows.append({"system": system, "family": spec.get("family", ""), "scores": scores, "params": "",
                         "latency_ms": None})
    else:
        measures = block["measures"]
        for row in block["rows"]:
            scores = {m: to_fraction(row[m], scale) for m in measures if row.get(m) is not None}
            latency = row.get("latency_ms")
            rows.append({
                "system": row["system"],
                "family": row.get("family") or "",
                "scores": scores,
                "params": row.get("params") or "",
                "latency_ms": float(latency) if latency is not None else None,
            })
    for order, row in enumerate(rows):
        row.update(source=block["source"], url=spec.get("url", ""), notes=notes.get(row["system"], ""), order=order)
    return rows


def _sync(obj, values: dict, fields, label: str, report: CardsReport, update: bool) -> None:
    """Compare ``obj`` with the card's ``values``; overwrite only with ``update``."""
    diff = [f for f in fields if f in values and getattr(obj, f) != values[f]]
    if not diff:
        report.unchanged += 1
        return
    if not update:
        report.differs.append(f"{label} ({', '.join(diff)})")
        return
    for f in diff:
        setattr(obj, f, values[f])
    obj.save(update_fields=diff)
    report.updated.append(f"{label} ({', '.join(diff)})")


def _replace_old_defaults(dataset: Dataset, values: dict, replaces: dict, report: CardsReport) -> None:
    """A field holding what an older card said (``replaces``), never edited since, takes the card's value."""
    changed = [f for f, olds in replaces.items() if f in values and getattr(dataset, f) in olds
               and getattr(dataset, f) != values[f]]
    for f in changed:
        setattr(dataset, f, values[f])
    if changed:
        dataset.save(update_fields=changed)
        report.updated.append(f"dataset {dataset.slug} ({', '.join(changed)}: the older card's text)")


@transaction.atomic
def cards_load(*, names: list[str] | tuple[str, ...] = CARD_NAMES, update: bool = False) -> CardsReport:
    """Create (or with ``update``, refresh) the benchmarks, datasets, splits and reported results of the cards.

    Never calls ``Dataset.clean()``: LEXTREME's aggregate columns are not
    retrieval measures the metric core knows, and they are stored as they are.
    """
    report = CardsReport()
    results = reported_results()
    seen: set[str] = set()  # two cards may share a benchmark
    for name in names:
        card = read_card(name)
        b = card["benchmark"]
        benchmark = Benchmark.objects.filter(slug=b["slug"]).first()
        if benchmark is None:
            benchmark = Benchmark.objects.create(slug=b["slug"], **{f: b[f] for f in _BENCHMARK_FIELDS if f in b})
            report.created.append(f"benchmark {benchmark.slug}")
        elif benchmark.slug not in seen:
            _sync(benchmark, b, _BENCHMARK_FIELDS, f"benchmark {benchmark.slug}", report, update)
        seen.add(benchmark.slug)

        d = dict(card["dataset"])
        dataset = Dataset.objects.filter(slug=d["slug"]).first()
        if dataset is None:
            dataset = Dataset.objects.create(benchmark=benchmark, **d)
            report.created.append(f"dataset {dataset.slug}")
        else:
            _replace_old_defaults(dataset, d, card.get("replaces", {}), report)
            _sync(dataset, {**d, "benchmark": benchmark}, (*_DATASET_FIELDS, "benchmark"), f"dataset {dataset.slug}",
                  report, update)

        splits = {}
        for s in card["splits"]:
            split, created = Split.objects.get_or_create(
                dataset=dataset, name=s["name"], defaults={k: v for k, v in s.items() if k != "name"}
            )
            splits[split.name] = split
            if created:
                report.created.append(f"split {split}")
            else:
                report.unchanged += 1

        reported_split = splits.get((card.get("reported") or {}).get("split", ""))
        for row in reported_rows(card, results):
            values = {**row, "split": reported_split}
            existing = ReportedResult.objects.filter(
                dataset=dataset, system=row["system"], source=row["source"]
            ).first()
            label = f"reported result {dataset.slug}: {row['system']}"
            if existing is None:
                ReportedResult.objects.create(dataset=dataset, **values)
                report.created.append(label)
            else:
                _sync(existing, values, _REPORTED_FIELDS, label, report, update)
    return report
