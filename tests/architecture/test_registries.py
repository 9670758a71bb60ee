"""One registry per kind of thing (#40): what restates a registry is checked against it.

``evaluation.measures.FAMILIES`` declares every measure family once. The compiled scorer numbers the families it
computes in C (an enum in ``evaluation/fastscore_c/``) and ``evaluation.fastscore.FAMILY_CODES`` names those numbers;
``plain_measures`` restates which of them take a cutoff (it may not import the registry: numpy's start); the metrics
page renders its table from the registry (tests/pages/test_metrics_page_registry.py); the API has no enum of measures
(a dataset's ``measures`` list its values), and every measure name its schema gives parses under the registry
(tests/api/test_schema_truth.py).

``catalogue.importers.IMPORTERS`` declares every import format once: ``manage.py import_dataset``'s ``--format``
and the admin's import form offer its keys (each registered parser gives its own name: tests/catalogue).
"""

from __future__ import annotations

import re
from pathlib import Path

from catalogue.importers import IMPORTERS
from curation.admin.import_form import ImportForm
from curation.management.commands.import_dataset import Command as ImportDataset
from evaluation.fastscore import FAMILY_CODES, plain_measures
from evaluation.measures import FAMILIES, parse_measures

ROOT = Path(__file__).resolve().parents[2]
#: The compiled scorer's C sources (``evaluation._fastscore``, built by setup.py).
NATIVE = ROOT / "evaluation" / "fastscore_c"
C_NAMES = {"F_R": "R", "F_P": "P", "F_MAP": "MAP", "F_MRR": "MRR", "F_NDCG": "nDCG", "F_RP": "RP",
           "F_SUCCESS": "Success"}


def test_the_compiled_scorer_numbers_the_families_as_fastscore_names_them():
    sources = sorted(NATIVE.glob("*.[ch]"))
    enums = [found for path in sources
             for found in re.finditer(r"enum \{ (F_R = 0(?:, F_[A-Z]+)*), N_FAMILIES \};", path.read_text())]
    assert len(enums) == 1, "the C family enum changed shape: update this test and fastscore.FAMILY_CODES together"
    found = enums[0]
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


def test_the_fast_path_asks_a_cutoff_of_exactly_the_families_the_registry_gives_one():
    """``fastscore.plain_measures`` restates which of its families take a cutoff (it may not import the registry:
    ``evaluation.measures`` imports numpy, which the fast path's start exists to avoid); it must agree with it."""
    for family in FAMILY_CODES:
        with_k, without = plain_measures(f"{family}@10"), plain_measures(family)
        if FAMILIES[family].takes_k:
            assert with_k == [(f"{family}@10", FAMILY_CODES[family], 10)] and without is None, family
        else:
            assert without == [(family, FAMILY_CODES[family], 0)] and with_k is None, family


def test_the_fast_path_names_a_measure_as_the_registry_does():
    names = ",".join(f"{f}@{k}" if FAMILIES[f].takes_k else f for f in FAMILY_CODES for k in (1, 100))
    found = plain_measures(names)
    assert found is not None
    assert [label for label, _, _ in found] == [m.name for m in parse_measures(names)]


def test_the_fast_path_leaves_every_other_family_of_the_registry_to_the_numpy_path():
    for family in set(FAMILIES) - set(FAMILY_CODES):
        assert plain_measures(f"{family}@10" if FAMILIES[family].takes_k else family) is None, family
