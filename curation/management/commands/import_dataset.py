"""Import a released dataset: ``import_dataset --format FORMAT --dataset SLUG ...`` (the formats:
``catalogue.importers.IMPORTERS``).

Examples::

    python manage.py import_dataset --format bsard --dataset bsard path/to/bsard/
    python manage.py import_dataset --format beir --dataset greekbarretrieval path/to/greekbar/ --hidden test
    python manage.py import_dataset --format trec --dataset mine --split test --hidden \\
        --topics topics.tsv --qrels test.qrels --corpus-ids ids.txt --create --name "My set" --language fr \\
        --benchmark mine --benchmark-name "My benchmark"
    python manage.py import_dataset --format classification --dataset areas --task single --split test \\
        --hidden --file test.jsonl [--create --name "Legal areas" --benchmark mine --benchmark-name "My benchmark"]

Classification and NER files (JSONL or CSV, one split per file) are described
in ``catalogue/importers/classification.py``.

A new qrels version of a split that has its topics needs only the judgments::

    python manage.py import_dataset --format trec --dataset mine --split test --qrels new.qrels --note "errata"

the split's topics are then left as they are. Topics given with judgments update
the topics' text, and their category and subcategory where the file has one
(a file without those columns keeps them); the report says what changed.

All or nothing: a refused file (``file:line: reason``) writes nothing.
Importing the same files again changes nothing; different judgments add a
qrels version, published only with ``--publish`` (the first one always is).
A dataset made with ``--create`` is a draft, not on the site until a curator
publishes it from the admin (after a preview of its home-page card); its
language is asked (``--language``) or, for classification, read from the
examples' languages, and a new benchmark's name is asked (``--benchmark-name``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from catalogue.importers import IMPORTERS, Importer, ImportRefused, Release, Takes
from catalogue.models import Benchmark, Dataset, Topic
from catalogue.services import dataset_get_or_create
from evaluation.measures import MACRO_F1
from submissions.services import release_import


class Command(BaseCommand):
    help = "Import a release's topics, corpus ids and judgments (or gold labels) into a dataset."

    def add_arguments(self, parser):
        folders = " and ".join(name for name, importer in IMPORTERS.items() if importer.takes is Takes.FOLDER)
        parser.add_argument("directory", nargs="?", help=f"the release folder ({folders} formats)")
        parser.add_argument("--format", required=True, choices=list(IMPORTERS),
                            help="; ".join(importer.label for importer in IMPORTERS.values()))
        parser.add_argument("--dataset", required=True, metavar="SLUG")
        parser.add_argument(
            "--hidden",
            nargs="?",
            const=True,
            default=None,
            help="beir: comma-separated split names with hidden labels (default: test); "
            "trec and classification: the split's labels are hidden (flag)",
        )
        parser.add_argument("--split", help="trec and classification: the split's name, e.g. test or dev")
        parser.add_argument(
            "--task", choices=("single", "multi", "ner"), help="classification: single-label, multi-label or ner"
        )
        parser.add_argument(
            "--file", help="classification: the split's examples, JSONL or CSV (id, text, label(s) or tokens/tags, language)"
        )
        parser.add_argument(
            "--topics",
            help="trec: topics, qid<TAB>text[<TAB>category[<TAB>subcategory]] or <top> SGML; needed for a new split, "
                 "left out for a new qrels version (the split's topics are then not touched); a category or "
                 "subcategory the file leaves empty keeps the topic's")
        parser.add_argument("--qrels", help="trec: qrels, 'qid 0 docid grade' per line")
        parser.add_argument("--corpus-ids", help="trec: document ids, one per line (or a BEIR corpus.jsonl)")
        parser.add_argument("--publish", action="store_true", help="publish a new qrels version (rescoring)")
        parser.add_argument("--note", default="", help="a note stored with a new qrels version")
        parser.add_argument(
            "--small-change-reason", default="", metavar="TEXT",
            help="with --publish, on a hidden split: publish a version that changes fewer judgments than the "
                 "split's minimum batch, for this reason (recorded, shown in the qrels history)")
        parser.add_argument("--dry-run", action="store_true", help="check and report, write nothing")
        parser.add_argument("--create", action="store_true", help="create the dataset if it does not exist")
        parser.add_argument("--name", default="", help="with --create: the dataset's name")
        parser.add_argument("--benchmark", default="", help="with --create: the benchmark's slug")
        parser.add_argument("--benchmark-name", default="", help="with --create and a new benchmark: its name")
        parser.add_argument("--language", default="",
                            help="with --create: the language, e.g. fr (classification: read from the examples)")
        parser.add_argument("--docid-example", default="", help="with --create: an example docid")

    def handle(self, *args, **opts):
        data = self._parse(opts)
        try:
            with transaction.atomic():
                dataset = self._dataset(opts, data)
                report = release_import(
                    dataset=dataset, data=data, publish=opts["publish"], note=opts["note"], dry_run=opts["dry_run"],
                    small_change_reason=opts["small_change_reason"], override='--small-change-reason "TEXT"',
                )
                if opts["dry_run"]:
                    transaction.set_rollback(True)
        except ImportRefused as exc:
            raise CommandError("refused, nothing was written:\n" + str(exc)) from None
        for line in report.lines():
            style = self.style.WARNING if line.startswith("warning:") else (lambda s: s)
            self.stdout.write(style(line))

    def _dataset(self, opts, data) -> Dataset:
        slug = opts["dataset"]
        if opts["create"]:
            self._check_new(opts, data)
            dataset, created = dataset_get_or_create(
                slug=slug,
                name=opts["name"],
                benchmark_slug=opts["benchmark"],
                benchmark_name=opts["benchmark_name"],
                language=opts["language"].strip() or _languages(data),
                docid_example=opts["docid_example"],
                **self._task_defaults(opts),
            )
            if created and IMPORTERS[opts["format"]].predictions:
                # dataset_get_or_create makes retrieval datasets; this one takes predictions.
                dataset.task = opts["task"]
                dataset.save(update_fields=["task"])
            if created and opts["dry_run"]:
                self.stdout.write(f"dataset {slug} would be created (benchmark {dataset.benchmark.slug})")
            elif created:
                self.stdout.write(
                    f"dataset {slug} created as a draft in the benchmark \u201c{dataset.benchmark.name}\u201d: not on "
                    "the site until a curator publishes it in the admin (Datasets, tick it, action \u201cPreview the "
                    "home-page cards, then publish\u201d); refine it there first")
            return dataset
        found = Dataset.objects.filter(slug=slug).first()
        if found is None:
            known = ", ".join(Dataset.objects.values_list("slug", flat=True)[:20]) or "none yet"
            raise CommandError(
                f"no dataset {slug!r} (known: {known}) — run `manage.py load_cards` for BSARD and "
                "GreekBarRetrieval, or add --create --name NAME --benchmark SLUG"
            )
        return found

    def _check_new(self, opts, data) -> None:
        """A dataset about to be created: its language and a new benchmark's name are asked, never left blank."""
        slug = opts["dataset"]
        if Dataset.objects.filter(slug=slug).exists():
            return
        missing = []
        if not (opts["language"].strip() or _languages(data)):
            missing.append("--language CODE (e.g. --language fr; the home page's card shows it)")
        bslug = opts["benchmark"] or slug
        if not Benchmark.objects.filter(slug=bslug).exists() and not opts["benchmark_name"].strip():
            missing.append(f'--benchmark-name "…" (the benchmark {bslug!r} is new; its name heads its datasets on '
                           "the home page)")
        if missing:
            raise CommandError(f"--create makes the dataset {slug!r}; it needs " + " and ".join(missing))

    @staticmethod
    def _task_defaults(opts) -> dict:
        """With --create, a classification dataset is scored by macro-F1."""
        if not IMPORTERS[opts["format"]].predictions:
            return {}
        return {"measures": [MACRO_F1], "primary_measure": MACRO_F1}

    def _parse(self, opts):
        importer = IMPORTERS[opts["format"]]
        try:
            return importer.parse(self._release(opts, importer))
        except ImportRefused as exc:
            raise CommandError("refused, nothing was written:\n" + str(exc)) from None

    @staticmethod
    def _release(opts, importer: Importer) -> Release:
        """The inputs the format takes, read from the options' paths (each shape asks for what it cannot go without)."""
        fmt, hidden = opts["format"], opts["hidden"]
        hidden_splits = (("test",) if hidden in (None, True)
                         else tuple(h.strip() for h in hidden.split(",") if h.strip()))
        given = Release(split=opts["split"] or "", hidden=bool(hidden), hidden_splits=hidden_splits,
                        task=opts["task"] or "single")
        if importer.takes is Takes.EXAMPLES:
            missing = [f"--{k}" for k in ("task", "split", "file") if not opts[k]]
            if missing:
                raise CommandError(f"--format {fmt} needs {', '.join(missing)}")
            return replace(given, file=_read(opts["file"]))
        if importer.takes is Takes.SPLIT_FILES:
            missing = [f"--{k}" for k in ("split", "qrels") if not opts[k]]
            if missing:
                raise CommandError(f"--format {fmt} needs {', '.join(missing)}")
            if not opts["topics"] and (opts["create"] or not _split_has_topics(opts["dataset"], opts["split"])):
                raise CommandError(
                    f"--format {fmt} needs --topics for a new split ({opts['dataset']}/{opts['split']} has no "
                    "topics yet); a new qrels version of an existing split needs only --qrels")
            return replace(
                given, topics=_read(opts["topics"]) if opts["topics"] else None, qrels=_read(opts["qrels"]),
                corpus_ids=_read(opts["corpus_ids"]) if opts["corpus_ids"] else None,
            )
        if not opts["directory"]:
            raise CommandError(f"--format {fmt} needs the release folder, e.g. path/to/{opts['dataset']}/")
        return replace(given, files=importer.folder_files(Path(opts["directory"])))


def _split_has_topics(dataset: str, split: str) -> bool:
    return Topic.objects.filter(split__dataset__slug=dataset, split__name=split).exists()


def _read(path: str) -> tuple[str, bytes]:
    p = Path(path)
    if not p.is_file():
        raise CommandError(f"{path}: no such file")
    return p.name, p.read_bytes()


def _languages(data) -> str:
    """The languages a classification release gives its examples (their category), e.g. ``de,fr,it``; else empty."""
    if not IMPORTERS[data.format].predictions:
        return ""
    found = {t.category.strip() for t in data.topics if t.category.strip()}
    return ",".join(sorted(found)) if found and all(len(code) <= 8 for code in found) else ""
