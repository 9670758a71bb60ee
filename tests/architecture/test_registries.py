"""One registry per kind of thing (#40): what restates a registry is checked against it.

``evaluation.measures.FAMILIES`` declares every measure family once. The compiled scorer numbers the families it
computes in C (``evaluation/_fastscore.c``'s enum) and ``evaluation.fastscore.FAMILY_CODES`` names those numbers;
the metrics page renders its table from the registry (tests/pages/test_metrics_page_registry.py).

``catalogue.importers.IMPORTERS`` declares every import format once: ``manage.py import_dataset``'s ``--format``
and the admin's import form offer its keys (each registered parser gives its own name: tests/catalogue).
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogue.importers import IMPORTERS
from curation.admin.import_form import ImportForm
from curation.management.commands.import_dataset import Command as ImportDataset
from evaluation.fastscore import FAMILY_CODES
from evaluation.measures import FAMILIES

ROOT = Path(__file__).resolve().parents[2]
C_NAMES = {"F_R": "R", "F_P": "P", "F_MAP": "MAP", "F_MRR": "MRR", "F_NDCG": "nDCG", "F_RP": "RP",
           "F_SUCCESS": "Success"}


def test_the_compiled_scorer_numbers_the_families_as_fastscore_names_them():
    source = (ROOT / "evaluation" / "_fastscore.c").read_text()
    found = re.search(r"enum \{ (F_R = 0(?:, F_[A-Z]+)*), N_FAMILIES \};", source)
    assert found, "_fastscore.c's family enum changed shape: update this test and fastscore.FAMILY_CODES together"
    order = [name.split(" = ")[0] for name in found[1].split(", ")]
    assert {C_NAMES[name]: code for code, name in enumerate(order)} == FAMILY_CODES


def test_every_family_the_compiled_scorer_computes_is_a_family_of_the_registry():
    assert set(FAMILY_CODES) <= set(FAMILIES)


def test_the_import_command_and_the_admin_form_offer_the_formats_of_the_importers_registry():
    """A format added to one of them and not to the registry (or the other way round) fails here."""
    parser = ImportDataset().create_parser("manage.py", "import_dataset")
    (option,) = [action for action in parser._actions if action.dest == "format"]
    form_field = ImportForm.base_fields["format"]
    assert list(option.choices) == list(IMPORTERS)
    assert form_field.choices == [(name, importer.label) for name, importer in IMPORTERS.items()]
