"""Write a benchmark to one archive file: ``python manage.py export_benchmark demo -o demo.tar --key-file KEY``.

Options::

    export_benchmark SLUG -o FILE.tar --key-file KEY     # hidden splits' labels encrypted to KEY (Fernet)
    export_benchmark SLUG -o FILE.tar --omit-hidden      # hidden splits' labels left out
    export_benchmark SLUG -o FILE.tar --dataset D ...    # only these datasets of the benchmark
    export_benchmark --generate-key KEY                  # make a new key file (mode 600) and stop

The key may come from LEXBOARD_ARCHIVE_KEY instead of --key-file. The format is docs/archive.md.
"""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from snapshots.archive import keys
from snapshots.archive.writer import ArchiveError, benchmark_export


class Command(BaseCommand):
    help = "Write a benchmark (its datasets, boards, entries, runs, snapshots) to one archive with a manifest."

    def add_arguments(self, parser):
        parser.add_argument("benchmark", nargs="?", help="the benchmark's slug (e.g. demo)")
        parser.add_argument("-o", "--output", help="the archive to write: FILE.tar, or FILE.tar.gz")
        parser.add_argument("--dataset", action="append", default=[], metavar="SLUG",
                            help="export only this dataset of the benchmark (repeatable)")
        parser.add_argument("--key-file", help=f"encrypt the hidden material to this key (or set {keys.KEY_ENV})")
        parser.add_argument("--omit-hidden", action="store_true",
                            help="leave the hidden splits' judgments and what derives from them out")
        parser.add_argument("--generate-key", metavar="PATH", help="write a new key to PATH and stop")

    def handle(self, *args, **options):
        try:
            if options["generate_key"]:
                fp = keys.key_generate(Path(options["generate_key"]))
                self.stdout.write(f"key {fp} written to {options['generate_key']} (mode 600). Keep it apart from "
                                  "the archives: whoever holds both reads the hidden labels.")
                return
            if not options["benchmark"] or not options["output"]:
                raise CommandError("Name the benchmark and the output: export_benchmark SLUG -o FILE.tar")
            key = None if options["omit_hidden"] and not options["key_file"] else keys.key_load(options["key_file"])
            started = time.monotonic()
            report = benchmark_export(benchmark_slug=options["benchmark"], out=Path(options["output"]),
                                      dataset_slugs=options["dataset"] or None, key=key,
                                      omit_hidden=options["omit_hidden"])
        except (ArchiveError, keys.ArchiveKeyError) as exc:
            raise CommandError(str(exc)) from exc
        rows = sum(report.records.values())
        self.stdout.write(
            f"{report.path}: {report.size:,} bytes, {rows:,} records, {report.files} files; hidden material "
            f"{report.hidden_mode}"
            + (f" ({report.hidden_records} records, key {keys.fingerprint(key)})" if key and report.hidden_records
               else "")
            + f"; {time.monotonic() - started:.1f}s")
        self.stdout.write(f"manifest sha256 {report.manifest_sha256} (record it beside the archive)")
        for note in report.missing_files:
            self.stderr.write(f"warning: {note}")
