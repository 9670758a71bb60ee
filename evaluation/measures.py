"""The measures, declared as data.

A ``Measure`` names a family and a cutoff and carries its formula, its
trec_eval equivalent and a citation. Each ``Family`` is declared once, with
its three implementations: the vectorized kernel (``kernels``), the plain
loop (``plain_measures``) and its trec_eval twin. Names are exact: ``R@100``, ``P@10``,
``MAP@100``, ``MRR@10``, ``nDCG@10``, ``RP``, ``Success@10``, and for
incomplete judgments ``bpref``, ``MAP'@100``, ``nDCG'@10``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import kernels, plain_measures
from .conventions import DEFAULT_MEASURE_NAMES, split_measure_name


@dataclass(frozen=True)
class Measure:
    """One measure: family plus cutoff, with its definition for people."""

    name: str
    family: str
    k: int | None
    formula: str
    trec_eval: str
    citation: str
    description: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Family:
    """A family of measures, declared once: its definition for people and its three implementations.

    ``kernel`` is the core's vectorized computation (``kernels``),
    ``reference`` the plain textbook loop (``plain_measures``), and ``twin``
    the trec_eval measure that reproduces it, as pytrec_eval names it (``{k}``
    the cutoff), computed with ``-J`` (judged documents only) when
    ``judged_only``; a ``twin_on_cut_run`` has no cutoff of its own and is taken
    on the run cut at k. ``evaluate`` computes with the kernel, ``verify``
    checks with the twin (float32) or the plain loop (float64): a family cannot
    be declared without all three, so every stored measure is checked twice.
    """

    family: str
    takes_k: bool
    formula: str
    citation: str
    description: str
    kernel: Callable[[kernels.Hits, Any], np.ndarray]
    reference: Callable[[plain_measures.Query, Any], float]
    twin: str
    judged_only: bool = False
    twin_on_cut_run: bool = False

    @property
    def trec_eval(self) -> str:
        """The trec_eval equivalent for people, e.g. ``map_cut_{k} with -J``."""
        return (self.twin + (" with -J" if self.judged_only else "")
                + (" (on the run cut at {k})" if self.twin_on_cut_run else ""))


_IIR = "Manning, Raghavan & Schütze, Introduction to Information Retrieval, 2008, ch. 8"
_SAKAI = "Sakai, Alternatives to Bpref, SIGIR 2007"

FAMILIES: dict[str, Family] = {f.family: f for f in [
    Family("R", True, "R@k = |relevant ∩ top k| / |relevant|", _IIR,
           "Share of the query's relevant documents found in the top {k}.",
           kernels.recall, plain_measures.recall, "recall_{k}"),
    Family("P", True, "P@k = |relevant ∩ top k| / k", _IIR,
           "Share of the top {k} that is relevant (divided by {k} even when fewer were retrieved).",
           kernels.precision, plain_measures.precision, "P_{k}"),
    Family("MAP", True,
           "AP@k = Σ_{relevant hits at rank i ≤ k} (relevant hits in top i) / i, divided by |relevant|; MAP@k is its mean",
           "Buckley & Voorhees, Retrieval System Evaluation, in TREC: Experiment and Evaluation in IR, 2005",
           "Average precision over the relevant documents in the top {k}, normalised by all relevant documents.",
           kernels.average_precision, plain_measures.average_precision, "map_cut_{k}"),
    Family("MRR", True, "RR@k = 1 / rank of the first relevant document if it is within the top k, else 0",
           "Voorhees, The TREC-8 Question Answering Track Report, TREC 1999",
           "Reciprocal rank of the first relevant document, 0 when none is in the top {k}.",
           kernels.reciprocal_rank, plain_measures.reciprocal_rank, "recip_rank", twin_on_cut_run=True),
    Family("nDCG", True,
           "nDCG@k = DCG@k / ideal DCG@k, DCG@k = Σ_{i ≤ k} grade_i / log2(i + 1)",
           "Järvelin & Kekäläinen, Cumulated gain-based evaluation of IR techniques, ACM TOIS 20(4), 2002",
           "Graded gain of the top {k}, discounted by log2 of the rank, relative to the best possible ranking.",
           kernels.ndcg, plain_measures.ndcg, "ndcg_cut_{k}"),
    Family("RP", False, "RP = |relevant ∩ top R| / R, R = |relevant|",
           "Buckley & Voorhees, Evaluating evaluation measure stability, SIGIR 2000",
           "Precision at rank R, where R is the number of relevant documents of the query.",
           kernels.r_precision, plain_measures.r_precision, "Rprec"),
    Family("Success", True, "Success@k = 1 if some relevant document is in the top k, else 0",
           "Craswell & Hawking, Overview of the TREC-2004 Web Track (success@k)",
           "Whether at least one relevant document is in the top {k}.",
           kernels.success, plain_measures.success, "success_{k}"),
    # Measures for incomplete judgments.
    Family("bpref", False,
           "bpref = (1/R) Σ_{judged relevant r retrieved} (1 − min(n_r, R) / min(N, R)), n_r = judged "
           "non-relevant ranked above r, N = judged non-relevant of the query (a term is 1 when n_r = 0)",
           "Buckley & Voorhees, Retrieval evaluation with incomplete information, SIGIR 2004",
           "How often judged relevant documents come before judged non-relevant ones; unjudged documents are skipped.",
           kernels.bpref, plain_measures.bpref, "bpref"),
    Family("MAP'", True,
           "AP'@k = AP@k on the condensed list: the run with every unjudged document removed, then cut at k",
           _SAKAI, "MAP@{k} of the run after removing the documents nobody judged (a condensed list).",
           kernels.condensed_average_precision, plain_measures.condensed_average_precision, "map_cut_{k}",
           judged_only=True),
    Family("nDCG'", True,
           "nDCG'@k = nDCG@k on the condensed list: the run with every unjudged document removed, then cut at k",
           _SAKAI, "nDCG@{k} of the run after removing the documents nobody judged (a condensed list).",
           kernels.condensed_ndcg, plain_measures.condensed_ndcg, "ndcg_cut_{k}", judged_only=True),
]}

def parse_measure(name: str) -> Measure:
    """Parse one measure name such as ``R@100`` or ``RP``; ValueError when unknown."""
    parts = split_measure_name(name)
    family = FAMILIES.get(parts[0]) if parts else None
    if parts is None or family is None:
        known = ", ".join(f"{f}@k" if FAMILIES[f].takes_k else f for f in FAMILIES)
        raise ValueError(f"unknown measure {name!r}; known measures: {known} (k a positive integer, e.g. R@100)")
    k_text = parts[1]
    if family.takes_k and k_text is None:
        raise ValueError(f"measure {name!r} needs a cutoff, e.g. {family.family}@10")
    if not family.takes_k and k_text is not None:
        raise ValueError(f"measure {family.family} takes no cutoff; write {family.family!r}")
    k = int(k_text) if k_text is not None else None
    if k is not None and k < 1:
        raise ValueError(f"the cutoff of measure {name!r} must be at least 1")
    label = f"{family.family}@{k}" if k is not None else family.family

    def fill(text: str) -> str:
        return text.format(k=k) if k is not None else text

    return Measure(name=label, family=family.family, k=k, formula=family.formula,
                   trec_eval=fill(family.trec_eval), citation=family.citation,
                   description=fill(family.description))


#: The cutoffs offered where a measure is picked from a list (the curators' admin); any other k is still valid.
COMMON_CUTOFFS = (1, 5, 10, 20, 50, 100, 1000)


def registry_names(cutoffs: tuple[int, ...] = COMMON_CUTOFFS) -> dict[str, list[str]]:
    """Every family's measure names at ``cutoffs`` (or its one name without a cutoff), by family, in order."""
    return {name: [f"{name}@{k}" for k in cutoffs] if family.takes_k else [name] for name, family in FAMILIES.items()}


def parse_measures(text: str | list[str]) -> list[Measure]:
    """Parse ``"R@100,MAP@100"`` (or a list of names); duplicates are dropped, order kept."""
    names = text.split(",") if isinstance(text, str) else list(text)
    out: list[Measure] = []
    for name in names:
        if not name.strip():
            continue
        m = parse_measure(name)
        if m not in out:
            out.append(m)
    if not out:
        raise ValueError("no measure given")
    return out


DEFAULT_MEASURES: list[Measure] = parse_measures(DEFAULT_MEASURE_NAMES)


# --- Classification and NER: macro-F1 (LEXTREME's measure) -------------------------------------------------
#
# Not a ranking measure, so not a ``Measure``: a task's score is ``macro-F1`` over all examples, plus
# ``macro-F1/<language>`` over one language's examples when the gold answers carry languages. The maths is in
# ``classification``; the names and what they mean are declared here, with the ranking measures.

#: The score every classification and NER task is ranked by.
MACRO_F1 = "macro-F1"

#: What macro-F1 means for each kind of task (``Dataset.task`` values).
MACRO_F1_DEFINITIONS: dict[str, str] = {
    "single": "The unweighted mean over labels of each label's F1 = 2·TP / (2·TP + FP + FN); every label in the "
              "gold or the predictions counts, so a rare label weighs as much as a frequent one.",
    "multi": "The unweighted mean over labels of each label's F1 = 2·TP / (2·TP + FP + FN), each example's label "
             "set compared with the gold set; a rare label weighs as much as a frequent one.",
    "ner": "The unweighted mean over entity types of each type's F1 on whole entities: a predicted entity counts "
           "only when its type, first and last token all match (seqeval's default mode).",
}

_LANGUAGE_NAMES = {"fr": "French", "de": "German", "it": "Italian", "nl": "Dutch", "en": "English", "el": "Greek",
                   "es": "Spanish", "pt": "Portuguese", "pl": "Polish", "ro": "Romanian", "sv": "Swedish"}


def language_measure(language: str) -> str:
    """The score name of one language's macro-F1, e.g. ``macro-F1/fr``."""
    return f"{MACRO_F1}/{language}"


def is_macro_f1_name(name: object) -> bool:
    """``macro-F1`` or ``macro-F1/<language>`` (one word after the slash), the scores of classification tasks."""
    if name == MACRO_F1:
        return True
    prefix, _, language = str(name).partition("/")
    return prefix == MACRO_F1 and bool(language) and not any(c.isspace() or c == "/" for c in language)


def macro_f1_description(name: str, kind: str) -> str:
    """What the score ``name`` (``macro-F1`` or ``macro-F1/<language>``) means for a task of ``kind``; "" if unknown."""
    general = MACRO_F1_DEFINITIONS.get(kind, "")
    if not general:
        return ""
    if name == MACRO_F1:
        return general
    if name.startswith(f"{MACRO_F1}/"):
        code = name.split("/", 1)[1]
        language = f"{_LANGUAGE_NAMES[code]} ({code})" if code in _LANGUAGE_NAMES else code
        return f"macro-F1 over the {language} examples only."
    return ""
