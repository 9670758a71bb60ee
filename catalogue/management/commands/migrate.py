"""``manage.py migrate``, first carrying a database of the old app labels over to today's (catalogue/relabel.py).

Django's own command computes its plan from the recorded migrations before any signal is sent, so the move has to
come before it: this command is Django's ``migrate`` with that step in front (an app's command of the same name
replaces Django's).
"""

from __future__ import annotations

from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import connections

from catalogue.relabel import relabel


class Command(DjangoMigrate):
    help = DjangoMigrate.help + " Carries a database of the app labels before 6 December 2026 over first."

    def handle(self, *args, **options):
        for line in relabel(connections[options["database"]]):
            if options["verbosity"] >= 1:
                self.stdout.write(f"  Relabelled: {line}")
        return super().handle(*args, **options)
