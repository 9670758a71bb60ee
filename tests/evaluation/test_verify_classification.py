"""The second implementation of classification and NER scores (evaluation/verify_classification.py).

It must agree with the core (``evaluation.classification``) on every score the worker stores, for random gold
and prediction files of each task (languages, integer labels, orphan I- tags, gzip, CRLF, a BOM), and report
the first difference when a stored score is wrong, a score is missing or extra, or a file reads differently.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from evaluation.classification import bio_entities, evaluate_predictions, read_gold, read_predictions
from evaluation.measures import MACRO_F1, language_measure
from evaluation.verify_classification import ALL_EXAMPLES, entities, verify_predictions

LABELS = ["civil", "criminal", "tax", 7, "Straf­recht"]
TYPES = ["PER", "LOC", "ORG"]
TAGS = ["O", "O", *(f"{p}-{t}" for p in "BI" for t in TYPES)]
LANGUAGES = ["fr", "de", "el", None]


def jsonl(objs: list[dict], *, eol: str = "\n", bom: bool = False) -> bytes:
    return ("\ufeff" if bom else "").encode() + "".join(json.dumps(o, ensure_ascii=False) + eol for o in objs).encode()


@st.composite
def files(draw, task: str):
    """A gold file and a prediction file of ``task`` that the core accepts."""
    n = draw(st.integers(1, 12))
    ids = [f"x{i}" if draw(st.booleans()) else i for i in range(n)]  # integer ids too
    gold, pred = [], []
    for doc_id in ids:
        language = draw(st.sampled_from(LANGUAGES))
        if task == "single":
            g, p = {"label": draw(st.sampled_from(LABELS))}, {"label": draw(st.sampled_from(LABELS))}
        elif task == "multi":
            g = {"labels": draw(st.lists(st.sampled_from(LABELS), max_size=4))}
            p = {"labels": draw(st.lists(st.sampled_from(LABELS), max_size=4))}
        else:
            length = draw(st.integers(0, 7))
            g = {"tags": draw(st.lists(st.sampled_from(TAGS), min_size=length, max_size=length))}
            p = {"tags": draw(st.lists(st.sampled_from(TAGS), min_size=length, max_size=length))}
        gold.append({"id": doc_id, **g, **({"language": language} if language else {})})
        pred.append({"id": doc_id, **p})
    pred = draw(st.permutations(pred))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    gold_bytes = jsonl(gold, eol=eol, bom=draw(st.booleans()))
    pred_bytes = jsonl(pred, eol=eol, bom=draw(st.booleans()))
    if draw(st.booleans()):
        pred_bytes = gzip.compress(pred_bytes)
    return gold_bytes, pred_bytes, draw(st.integers(1, 4))


def core_scores(gold_bytes: bytes, pred_bytes: bytes, task: str, min_group: int) -> dict[str, float]:
    """What the worker stores (``submissions.services.predictions.score_for_task``), from the core."""
    gold = read_gold(gold_bytes, task=task)
    data = gzip.decompress(pred_bytes) if pred_bytes[:2] == b"\x1f\x8b" else pred_bytes
    result = evaluate_predictions(gold, read_predictions(data, gold=gold))
    sizes = Counter(gold.languages.get(i) for i in gold.ids)
    return {MACRO_F1: result.macro_f1} | {language_measure(lang): value for lang, value in result.per_language.items()
                                          if sizes[lang] >= min_group}


@pytest.mark.parametrize("task", ["single", "multi", "ner"])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_it_agrees_with_the_core_on_every_stored_score(task, data):
    gold_bytes, pred_bytes, min_group = data.draw(files(task))
    scores = core_scores(gold_bytes, pred_bytes, task, min_group)
    check = verify_predictions(gold_bytes, pred_bytes, scores, task=task, min_group=min_group)
    assert check.disagreement is None, check.disagreement
    assert check.method == "plain" and check.n_values == len(scores)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(TAGS), max_size=12))
def test_its_entities_are_the_cores(tags):
    assert entities(tuple(tags)) == {(kind, first, end - 1) for kind, first, end in bio_entities(tags)}


GOLD = jsonl([{"id": "a", "label": "civil", "language": "fr"}, {"id": "b", "label": "tax", "language": "fr"},
              {"id": "c", "label": "tax", "language": "de"}])
PRED = jsonl([{"id": "a", "label": "civil"}, {"id": "b", "label": "civil"}, {"id": "c", "label": "tax"}])


def test_a_wrong_stored_score_is_the_first_disagreement():
    scores = core_scores(GOLD, PRED, "single", 1)
    assert verify_predictions(GOLD, PRED, scores, task="single").ok
    wrong = scores | {"macro-F1/fr": scores["macro-F1/fr"] + 1e-6}
    found = verify_predictions(GOLD, PRED, wrong, task="single").disagreement
    assert found is not None and (found.qid, found.measure) == (ALL_EXAMPLES, "macro-F1/fr")
    assert found.core == wrong["macro-F1/fr"] and found.reference == scores["macro-F1/fr"]
    assert verify_predictions(GOLD, PRED, scores | {"macro-F1": scores["macro-F1"] + 1e-10}, task="single").ok


def test_a_score_stored_by_one_side_only_is_a_disagreement():
    scores = core_scores(GOLD, PRED, "single", 1)
    for changed in ({k: v for k, v in scores.items() if k != "macro-F1/de"}, scores | {"macro-F1/el": 0.5}):
        found = verify_predictions(GOLD, PRED, changed, task="single").disagreement
        assert found is not None and "stored by one side only" in found.measure
    # A language below the group floor has no score on either side.
    small = core_scores(GOLD, PRED, "single", 2)
    assert "macro-F1/de" not in small and verify_predictions(GOLD, PRED, small, task="single", min_group=2).ok


@pytest.mark.parametrize("pred", [
    PRED.replace(b'"c"', b'"d"'),  # an answer to no gold id
    PRED + jsonl([{"id": "a", "label": "tax"}]),  # an id twice
    PRED.replace(b'"label": "tax"', b'"label": 1.5'),  # a label that is not a string
    PRED.replace(b'{"id": "b"', b'["id", "b"'),  # not an object
    PRED.replace(b"civil", "c\u00e9".encode("latin-1")),  # not UTF-8
    gzip.compress(PRED, mtime=0)[:-8],  # a truncated gzip stream (a fixed time: the same test id in every worker)
])
def test_a_file_the_second_reader_reads_otherwise_is_a_disagreement(pred):
    scores = core_scores(GOLD, PRED, "single", 1)
    found = verify_predictions(GOLD, pred, scores, task="single").disagreement
    assert found is not None and found.measure.startswith("reading the files: ")


def test_an_orphan_inside_tag_starts_an_entity_on_both_sides():
    gold = jsonl([{"id": "s", "tags": ["O", "B-PER", "I-PER", "O"]}])
    pred = jsonl([{"id": "s", "tags": ["O", "I-PER", "I-PER", "O"]}])  # seqeval's default mode: the same entity
    scores = core_scores(gold, pred, "ner", 1)
    assert scores == {"macro-F1": 1.0} and verify_predictions(gold, pred, scores, task="ner").ok
