"""Read a benchmark archive into this instance: ``python manage.py import_benchmark demo.tar --key-file KEY``.

Options::

    import_benchmark FILE.tar --key-file KEY     # with the hidden material (the key it was encrypted to)
    import_benchmark FILE.tar --omit-hidden      # without it: hidden boards stay empty until judgments are published
    import_benchmark FILE.tar --link-accounts    # entries of a username that exists here go to that account
    import_benchmark FILE.tar --check            # verify every member and the key; write nothing

Every member's sha256 is checked before anything is written, and the import is one transaction.
"""

from __future__ import annotations

import getpass
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from snapshots.archive import keys
from snapshots.archive.reader import archive_check, benchmark_import
from snapshots.archive.writer import ArchiveError
from snapshots.services import core_version


class Command(BaseCommand):
    help = "Import a benchmark archive written by export_benchmark (checked whole first, then one transaction)."

    def add_arguments(self, parser):
        parser.add_argument("archive", help="the .tar or .tar.gz export_benchmark wrote")
        parser.add_argument("--key-file", help=f"the key the hidden material was encrypted to (or {keys.KEY_ENV})")
        parser.add_argument("--omit-hidden", action="store_true", help="import without the hidden material")
        parser.add_argument("--link-accounts", action="store_true",
                            help="give entries to this host's account of the same username (default: placeholders)")
        parser.add_argument("--check", action="store_true", help="verify the archive and the key, import nothing")

    def handle(self, *args, **options):
        path = Path(options["archive"])
        started = time.monotonic()
        try:
            key = keys.key_load(options["key_file"])
            if options["check"]:
                # Without a key the members are still checked; the hidden one is then left closed.
                checked = archive_check(path, key=key, omit_hidden=options["omit_hidden"] or key is None)
                m = checked.manifest
                self.stdout.write(f"{path}: intact ({len(m['members'])} members, sha256 of each matches); benchmark "
                                  f"{m['benchmark']['slug']} ({', '.join(m['datasets'])}); hidden material "
                                  f"{m['hidden']['mode']}" + (", the key opens it" if checked.secret is not None
                                                              else " (not opened: no key given)"
                                                              if m["hidden"]["mode"] == "encrypted" else ""))
                return
            report = benchmark_import(path, key=key, omit_hidden=options["omit_hidden"],
                                      link_accounts=options["link_accounts"], imported_by=getpass.getuser())
        except (ArchiveError, keys.ArchiveKeyError) as exc:
            raise CommandError(str(exc)) from exc
        m = report.record.manifest
        self.stdout.write(
            f"imported {m['benchmark']['slug']} ({', '.join(m['datasets'])}): {sum(report.records.values()):,} "
            f"records; accounts: {report.accounts_created} placeholders, {report.accounts_linked} linked; "
            f"{time.monotonic() - started:.1f}s")
        if m.get("core_version") != core_version():
            self.stdout.write(f"  note: the scores were computed by the metric core {m.get('core_version')}; this host's "
                              f"is {core_version()}. They are kept as scored there; a rescore here uses this one.")
        for what, value in report.missing.items():
            self.stdout.write(f"  missing: {what}: {value if not isinstance(value, list) else len(value)}")
