"""Load the demo benchmark with its baselines: ``python manage.py load_demo``.

The demo benchmark is a suite of two generated datasets: statutory retrieval
(BM25, TF-IDF and random baselines) and legal area classification in French,
German and Italian (TF-IDF logistic regression, majority class and random
baselines), aggregated by harmonic mean.

Called by the README's run command (``scripts/run.sh``) on every start, so it
is idempotent: a second run finds the same dataset, topics, qrels version and
baseline files and changes nothing. It creates what is missing and never
rewrites a row a curator changed (dataset texts, splits, topics: a topic that
differs from the generator's is counted in the output and left as it is).

Options::

    python manage.py load_demo                     # generate, store, upload and score the baselines
    python manage.py load_demo --force-baselines   # score the baselines again even if unchanged
    python manage.py load_demo --no-baselines      # only the dataset
    python manage.py load_demo --export DIR        # write the files (BSARD, BEIR, TREC, runs, classification JSONL); no database
"""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from catalogue.models import Split
from demo.assessment import demo_assessor_ensure, demo_pool_ensure
from demo.baselines import DEFAULT_DEPTH, baseline_runs
from demo.classification import areas_export
from demo.export import demo_export
from demo.generator import DEFAULT_SEED, generate
from demo.services import DATASET_SLUG, demo_load
from demo.uploads import DemoLoadError


class Command(BaseCommand):
    help = (
        "Generate the demo suite (statutory retrieval and legal area classification), load it and score "
        "its baselines."
    )

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"generator seed (default {DEFAULT_SEED})")
        parser.add_argument(
            "--depth", type=int, default=DEFAULT_DEPTH, help=f"documents per question in the baseline runs (default {DEFAULT_DEPTH})"
        )
        parser.add_argument("--force-baselines", action="store_true", help="score the baselines again even when unchanged")
        parser.add_argument("--no-baselines", action="store_true", help="load the dataset only")
        parser.add_argument(
            "--export", metavar="DIR", help="write the demo as BSARD, BEIR and TREC files plus the runs, and stop"
        )

    def handle(self, *args, **options):
        if options["depth"] < 1:
            raise CommandError("--depth must be at least 1 (e.g. 100 or 1000).")
        started = time.monotonic()
        if options["export"]:
            self._export(options)
            return
        try:
            report = demo_load(
                seed=options["seed"],
                depth=options["depth"],
                force_baselines=options["force_baselines"],
                with_baselines=not options["no_baselines"],
            )
        except DemoLoadError as exc:
            raise CommandError(str(exc)) from exc
        lines = report.lines()
        if options["verbosity"] >= 2:
            for line in lines[1:]:
                self.stdout.write(line)
        else:
            changed = [b for b in report.baselines if b.action != "unchanged"]
            self.stdout.write(
                f"  baselines: {len(report.baselines) - len(changed)} unchanged, {len(changed)} uploaded or rescored"
                if report.baselines
                else "  baselines: not loaded (--no-baselines)"
            )
            for line in report.import_lines:
                self.stdout.write("  " + line)
            if report.areas is not None:
                areas = report.areas.baselines
                changed = [b for b in areas if b.action != "unchanged"]
                self.stdout.write(
                    f"  classification baselines: {len(areas) - len(changed)} unchanged, {len(changed)} uploaded "
                    "or rescored" if areas else "  classification baselines: not loaded (--no-baselines)"
                )
                for line in report.areas.import_lines:
                    self.stdout.write("  " + line)
        if not options["no_baselines"]:
            self._assessment()
        self.stdout.write(self.style.SUCCESS(f"{lines[0]} ({time.monotonic() - started:.1f}s)"))

    def _assessment(self):
        """The assessor account and its small pool of the hidden test split (demo/assessment.py)."""
        assessor, password = demo_assessor_ensure()
        split = Split.objects.get(dataset__slug=DATASET_SLUG, name="test")
        pool, created = demo_pool_ensure(split=split, assessor=assessor)
        self.stdout.write(f"  assessment: {pool.name}, {pool.items.count()} documents assigned to "
                          f"{assessor.get_username()}{'' if created else ' (unchanged)'}")
        if password:
            self.stdout.write(self.style.SUCCESS("  created the demo assessor account (printed only this once):"))
            self.stdout.write(f"    user: {assessor.get_username()}  password: {password}  page: /assessment/")

    def _export(self, options):
        data = generate(options["seed"])
        runs = None if options["no_baselines"] else baseline_runs(data, depth=options["depth"])
        written: list[Path | str] = [*demo_export(data=data, directory=options["export"], runs=runs)]
        written += areas_export(directory=options["export"], with_predictions=not options["no_baselines"])
        for path in written:
            self.stdout.write(f"  {path}")
        self.stdout.write(self.style.SUCCESS(f"demo: {len(written)} files written under {options['export']}"))
