"""One registry per kind of thing (#40): what restates the measure registry is checked against it.

``evaluation.measures.FAMILIES`` declares every measure family once. The compiled scorer numbers the families it
computes in C (an enum in ``evaluation/fastscore_c/``) and ``evaluation.fastscore.FAMILY_CODES`` names those
numbers; the metrics page renders its table from the registry (tests/pages/test_metrics_page_registry.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from evaluation.fastscore import FAMILY_CODES
from evaluation.measures import FAMILIES

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
