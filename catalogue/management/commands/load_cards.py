"""``manage.py load_cards``: the shipped dataset cards (BSARD, GreekBarRetrieval, LEXTREME) into the database.

Safe to run at every start (``make run`` does): it creates what is missing and
changes nothing else. ``--update`` overwrites rows a curator edited with the
card's values.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from catalogue.cards import CARD_NAMES, cards_load


class Command(BaseCommand):
    help = "Create the benchmarks, datasets, splits and reported results of the shipped dataset cards."

    def add_arguments(self, parser):
        parser.add_argument("cards", nargs="*", help=f"card names (default: all of {', '.join(CARD_NAMES)})")
        parser.add_argument("--update", action="store_true", help="overwrite rows that differ from their card")

    def handle(self, *args, **opts):
        names = opts["cards"] or list(CARD_NAMES)
        unknown = [n for n in names if n not in CARD_NAMES]
        if unknown:
            raise CommandError(f"no card {', '.join(unknown)} — the cards are {', '.join(CARD_NAMES)}")
        report = cards_load(names=names, update=opts["update"])
        for line in report.lines():
            self.stdout.write(line)
