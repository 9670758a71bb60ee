"""Macro-F1 for single-label, multi-label and NER tasks, and the JSONL readers that feed it.

The measures are held to scikit-learn (``f1_score(average="macro",
zero_division=0)``) and seqeval (default mode) on random inputs, and to
hand-worked tables; the readers to the same care as run parsing.
"""

from __future__ import annotations

import json
import warnings

import pytest
from hypothesis import given, settings, strategies as st
from sklearn.metrics import f1_score
from sklearn.preprocessing import MultiLabelBinarizer

from evaluation.classification import (
    GoldFormatError,
    PredictionFormatError,
    bio_entities,
    multi_label_f1,
    ner_f1,
    orphan_inside_tags,
    read_gold,
    read_predictions,
    score_files,
    single_label_f1,
)
from evaluation.cli import main
from evaluation.errors import InputError


def jsonl(*objs) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objs).encode()


# --------------------------------------------------------------------------- single-label

LABELS = st.sampled_from(["civil", "criminal", "tax", "labour", "public"])


@st.composite
def aligned_labels(draw):
    n = draw(st.integers(min_value=1, max_value=40))
    gold = draw(st.lists(LABELS, min_size=n, max_size=n))
    pred = draw(st.lists(LABELS, min_size=n, max_size=n))
    return gold, pred


@settings(max_examples=200, deadline=None)
@given(aligned_labels())
def test_single_label_macro_f1_agrees_with_sklearn(pair):
    gold, pred = pair
    macro, per_label = single_label_f1(gold, pred)
    assert macro == pytest.approx(f1_score(gold, pred, average="macro", zero_division=0), abs=1e-12)
    labels = sorted(per_label)
    expected = f1_score(gold, pred, average=None, labels=labels, zero_division=0)
    assert [per_label[x].f1 for x in labels] == pytest.approx(list(expected), abs=1e-12)


def test_a_gold_label_never_predicted_scores_zero_and_counts_in_the_average():
    # "tax" is in the gold but never predicted: P = 0/0 → 0 (zero_division=0), R = 0, F1 = 0.
    gold = ["civil", "civil", "tax"]
    pred = ["civil", "civil", "civil"]
    macro, per_label = single_label_f1(gold, pred)
    # civil: TP 2, FP 1, FN 0 → F1 = 4/5; tax: F1 0; macro = 0.4
    assert per_label["civil"].f1 == pytest.approx(0.8)
    assert per_label["tax"].precision == 0.0 and per_label["tax"].f1 == 0.0
    assert macro == pytest.approx(0.4)
    assert macro == pytest.approx(f1_score(gold, pred, average="macro", zero_division=0))


def test_a_predicted_label_absent_from_the_gold_counts_as_a_label_with_f1_zero():
    gold = ["civil", "civil"]
    pred = ["civil", "tax"]
    macro, per_label = single_label_f1(gold, pred)
    # civil: TP 1, FN 1 → F1 2/3; tax: FP 1 → F1 0; macro 1/3 (sklearn: labels = gold ∪ predictions)
    assert macro == pytest.approx(1 / 3)
    assert per_label["tax"].support == 0 and per_label["tax"].predicted == 1
    assert macro == pytest.approx(f1_score(gold, pred, average="macro", zero_division=0))


# --------------------------------------------------------------------------- multi-label


@st.composite
def aligned_label_sets(draw):
    n = draw(st.integers(min_value=1, max_value=30))
    sets = st.lists(st.frozensets(LABELS, max_size=4), min_size=n, max_size=n)
    return draw(sets), draw(sets)


@pytest.mark.slow  # > 2 s (docs/testing.md)
@settings(max_examples=200, deadline=None)
@given(aligned_label_sets())
def test_multi_label_macro_f1_agrees_with_sklearn_on_binarized_matrices(pair):
    gold, pred = pair
    macro, per_label = multi_label_f1(gold, pred)
    used = sorted(set().union(*gold, *pred))
    if not used:
        assert macro == 0.0 and per_label == {}
        return
    mlb = MultiLabelBinarizer(classes=used)
    y_true, y_pred = mlb.fit_transform(gold), mlb.transform(pred)
    if len(used) == 1:
        # sklearn reads a one-column indicator matrix as a binary 0/1 vector with two classes;
        # the one label's F1 is the binary F1 of its column.
        expected = [f1_score(y_true[:, 0], y_pred[:, 0], zero_division=0)]
    else:
        assert macro == pytest.approx(f1_score(y_true, y_pred, average="macro", zero_division=0), abs=1e-12)
        expected = list(f1_score(y_true, y_pred, average=None, zero_division=0))
    assert [per_label[x].f1 for x in used] == pytest.approx(expected, abs=1e-12)
    assert macro == pytest.approx(sum(expected) / len(expected), abs=1e-12)


def test_multi_label_by_hand():
    gold = [{"civil", "tax"}, {"civil"}, set()]
    pred = [{"civil"}, {"civil", "labour"}, {"tax"}]
    macro, per_label = multi_label_f1(gold, pred)
    # civil: TP 2 → F1 1; tax: FN 1, FP 1 → 0; labour: FP 1 → 0; macro = 1/3
    assert per_label["civil"].f1 == 1.0
    assert per_label["tax"].f1 == 0.0 and per_label["labour"].f1 == 0.0
    assert macro == pytest.approx(1 / 3)


# --------------------------------------------------------------------------- NER


# The hand-worked table: tags → entities (type, start, end exclusive), seqeval's default mode.
BIO_TABLE = [
    (["O", "O"], []),
    (["B-PER", "I-PER", "O"], [("PER", 0, 2)]),
    (["B-PER", "B-PER"], [("PER", 0, 1), ("PER", 1, 2)]),
    # I- without B- starts an entity (conlleval / seqeval default; strict IOB2 would drop it)
    (["O", "I-LOC", "I-LOC"], [("LOC", 1, 3)]),
    (["I-ORG"], [("ORG", 0, 1)]),
    # a change of type inside an entity closes it and opens another
    (["B-PER", "I-LOC"], [("PER", 0, 1), ("LOC", 1, 2)]),
    (["B-PER", "I-PER", "I-LOC", "I-LOC", "O", "B-ORG"], [("PER", 0, 2), ("LOC", 2, 4), ("ORG", 5, 6)]),
    # types may contain hyphens
    (["B-LEGAL-REF", "I-LEGAL-REF"], [("LEGAL-REF", 0, 2)]),
]


@pytest.mark.parametrize(("tags", "entities"), BIO_TABLE)
def test_bio_entities_follow_the_hand_worked_table(tags, entities):
    assert bio_entities(tags) == entities


@pytest.mark.parametrize(("tags", "entities"), BIO_TABLE)
def test_bio_entities_agree_with_seqeval_default_mode(tags, entities):
    from seqeval.metrics.sequence_labeling import get_entities

    assert [(t, s, e + 1) for t, s, e in get_entities(tags)] == entities


def test_orphan_inside_tags_are_counted():
    assert orphan_inside_tags(["O", "I-LOC", "I-LOC", "B-PER", "I-ORG"]) == 2
    assert orphan_inside_tags(["B-PER", "I-PER"]) == 0


def test_ner_macro_f1_by_hand():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    pred = [["B-PER", "O", "O", "B-LOC"], ["B-ORG", "B-PER"]]
    # gold: PER(0,2), LOC(3,4), ORG(0,1); pred: PER(0,1), LOC(3,4), ORG(0,1), PER(1,2)
    # PER: TP 0, FP 2, FN 1 → F1 0; LOC: F1 1; ORG: F1 1; macro = 2/3
    macro, per_label = ner_f1(gold, pred)
    assert per_label["PER"].f1 == 0.0 and per_label["PER"].predicted == 2 and per_label["PER"].support == 1
    assert per_label["LOC"].f1 == 1.0 and per_label["ORG"].f1 == 1.0
    assert macro == pytest.approx(2 / 3)


TAGS = st.sampled_from(["O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-ORG"])


@st.composite
def aligned_tag_sequences(draw):
    lengths = draw(st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=8))
    gold = [draw(st.lists(TAGS, min_size=n, max_size=n)) for n in lengths]
    pred = [draw(st.lists(TAGS, min_size=n, max_size=n)) for n in lengths]
    return gold, pred


@settings(max_examples=200, deadline=None)
@given(aligned_tag_sequences())
def test_ner_macro_f1_agrees_with_seqeval_default_mode(pair):
    from seqeval.metrics import classification_report, f1_score as seqeval_f1

    gold, pred = pair
    macro, per_label = ner_f1(gold, pred)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seqeval warns on zero division, then uses 0
        expected = seqeval_f1(gold, pred, average="macro")
        if not per_label:
            # no entity in the gold nor the predictions: seqeval's mean of nothing is NaN; ours is 0
            assert macro == 0.0
            return
        assert macro == pytest.approx(expected, abs=1e-12)
        if per_label:
            report = classification_report(gold, pred, output_dict=True)
            for label, s in per_label.items():
                assert s.f1 == pytest.approx(report[label]["f1-score"], abs=1e-12)
                assert s.support == report[label]["support"]


# --------------------------------------------------------------------------- readers


def gold_single() -> bytes:
    return jsonl(
        {"id": "a", "label": "civil", "language": "fr"},
        {"id": "b", "label": "tax", "language": "de"},
        {"id": 3, "label": "civil", "text": "ignored"},
    )


def problems_of(exc: InputError) -> list[tuple[int | None, str]]:
    return [(p.line, p.reason) for p in exc.problems]


def test_it_scores_a_prediction_file_end_to_end(tmp_path):
    gold = tmp_path / "gold.jsonl"
    pred = tmp_path / "pred.jsonl"
    gold.write_bytes(gold_single())
    pred.write_bytes(jsonl({"id": 3, "label": "civil"}, {"id": "b", "label": "civil"}, {"id": "a", "label": "civil"}))
    result = score_files(gold, pred, task="single")
    # civil: TP 2, FP 1 → 0.8; tax: 0 → macro 0.4
    assert result.macro_f1 == pytest.approx(0.4)
    assert result.n_examples == 3
    d = result.to_dict()
    assert set(d) >= {"macro_f1", "per_label", "warnings"}
    assert d["per_label"]["tax"]["f1"] == 0.0
    assert [w["code"] for w in d["warnings"]] == ["never_predicted"]
    # languages of the gold lines: a (fr) right; b (de) wrong; 3 has none and counts only overall
    assert d["per_language"] == {"de": 0.0, "fr": 1.0}


def test_it_reads_gold_languages_and_treats_integer_ids_as_strings():
    gold = read_gold(gold_single(), task="single")
    assert gold.ids == ("a", "b", "3")
    assert gold.languages == {"a": "fr", "b": "de"}


def test_it_accepts_a_bom_crlf_and_blank_lines():
    data = b"\xef\xbb\xbf" + b'{"id": "a", "label": "x"}\r\n\r\n{"id": "b", "label": "y"}\r\n'
    assert read_gold(data, task="single").ids == ("a", "b")


def test_it_refuses_bad_json_with_its_line_number():
    data = b'{"id": "a", "label": "civil"}\n{"id": "b", "label": civil}\n'
    with pytest.raises(GoldFormatError) as exc:
        read_gold(data, task="single", name="gold.jsonl")
    [(line, reason)] = problems_of(exc.value)
    assert line == 2 and "not valid JSON" in reason
    assert str(exc.value).startswith("gold.jsonl:2: ")


def test_it_refuses_lines_that_are_not_objects_or_lack_an_id():
    data = b'["a", "civil"]\n{"label": "civil"}\n{"id": true, "label": "civil"}\n{"id": "", "label": "x"}\n'
    with pytest.raises(GoldFormatError) as exc:
        read_gold(data, task="single")
    lines = [line for line, _ in problems_of(exc.value)]
    assert lines == [1, 2, 3, 4]
    assert "JSON array" in exc.value.problems[0].reason
    assert 'no "id"' in exc.value.problems[1].reason


def test_it_refuses_duplicate_gold_ids():
    with pytest.raises(GoldFormatError) as exc:
        read_gold(jsonl({"id": "a", "label": "x"}, {"id": "a", "label": "y"}), task="single")
    assert problems_of(exc.value) == [(2, "id 'a' already on line 1; each id must appear once")]


def test_it_refuses_an_empty_file():
    with pytest.raises(GoldFormatError) as exc:
        read_gold(b"\n\n", task="ner")
    assert exc.value.problems[0].line is None and "no examples" in exc.value.problems[0].reason


def test_it_refuses_unknown_duplicate_and_unparseable_prediction_lines_together():
    gold = read_gold(gold_single(), task="single")
    pred = b"\n".join(
        [
            b'{"id": "a", "label": "civil"}',
            b'{"id": "a", "label": "tax"}',
            b'{"id": "zzz", "label": "tax"}',
            b"{oops",
            b'{"id": "b", "label": "tax"}',
            b'{"id": "3", "label": "civil"}',
        ]
    )
    with pytest.raises(PredictionFormatError) as exc:
        read_predictions(pred, gold=gold, name="pred.jsonl")
    got = problems_of(exc.value)
    assert [line for line, _ in got] == [2, 3, 4]
    assert "already predicted on line 1" in got[0][1]
    assert "'zzz' is not in the gold set" in got[1][1]
    assert "not valid JSON" in got[2][1]


def test_it_refuses_missing_predictions_naming_a_few_ids():
    gold = read_gold(jsonl(*({"id": f"q{i}", "label": "x"} for i in range(9))), task="single")
    with pytest.raises(PredictionFormatError) as exc:
        read_predictions(jsonl({"id": "q0", "label": "x"}), gold=gold)
    [(line, reason)] = problems_of(exc.value)
    assert line is None
    assert reason.startswith("8 ids of the gold set have no prediction: 'q1', 'q2', 'q3', 'q4', 'q5' and 3 more")


def test_it_refuses_labels_outside_the_declared_label_set():
    gold = read_gold(gold_single(), task="single", labels=["civil", "tax", "labour"])
    pred = jsonl({"id": "a", "label": "civil"}, {"id": "b", "label": "Tax"}, {"id": "3", "label": "labour"})
    with pytest.raises(PredictionFormatError) as exc:
        read_predictions(pred, gold=gold)
    assert problems_of(exc.value) == [(2, "unknown label 'Tax'; the labels are 'civil', 'labour', 'tax'")]


def test_without_a_declared_label_set_a_label_the_gold_lacks_is_a_false_positive_not_an_error():
    # Refusing it would tell a participant which labels a hidden split lacks.
    gold = read_gold(gold_single(), task="single")
    pred = jsonl({"id": "a", "label": "civil"}, {"id": "b", "label": "labour"}, {"id": "3", "label": "civil"})
    preds = read_predictions(pred, gold=gold)
    assert preds.answers["b"] == "labour"


def test_it_refuses_gold_labels_outside_the_declared_label_set():
    with pytest.raises(GoldFormatError) as exc:
        read_gold(gold_single(), task="single", labels=["civil"])
    assert exc.value.problems[0].line == 2 and "unknown label 'tax'" in exc.value.problems[0].reason


def test_it_hints_at_the_task_when_the_answer_field_is_another_tasks():
    with pytest.raises(GoldFormatError) as exc:
        read_gold(jsonl({"id": "a", "labels": ["x"]}), task="single")
    assert 'no "label" field' in exc.value.problems[0].reason
    assert '"labels" (multi)' in exc.value.problems[0].reason


def test_it_refuses_wrong_answer_types():
    data = jsonl({"id": "a", "labels": "civil"}, {"id": "b", "labels": [["x"]]}, {"id": "c", "labels": [1, "x", "x"]})
    with pytest.raises(GoldFormatError) as exc:
        read_gold(data, task="multi")
    assert [line for line, _ in problems_of(exc.value)] == [1, 2]


def test_multi_label_lines_may_repeat_a_label_or_be_empty():
    gold = read_gold(jsonl({"id": "a", "labels": [1, "x", "x"]}, {"id": "b", "labels": []}), task="multi")
    assert gold.answers == {"a": ("1", "x"), "b": ()}


def test_it_refuses_tags_that_are_not_bio_and_unknown_entity_types():
    data = jsonl({"id": "s1", "tags": ["B-PER", "PER"]}, {"id": "s2", "tags": ["O", "E-PER"]}, {"id": "s3", "tags": ["B-ORG"]})
    with pytest.raises(GoldFormatError) as exc:
        read_gold(data, task="ner", labels=["PER", "LOC"])
    got = problems_of(exc.value)
    assert got[0] == (1, "tag 2 'PER' is not a BIO tag; use \"O\", \"B-TYPE\" or \"I-TYPE\"")
    assert got[1][0] == 2
    assert got[2][0] == 3 and "unknown entity type" in got[2][1]


def test_it_refuses_a_tag_sequence_of_the_wrong_length():
    gold = read_gold(jsonl({"id": "s1", "tags": ["B-PER", "I-PER", "O"]}), task="ner")
    with pytest.raises(PredictionFormatError) as exc:
        read_predictions(jsonl({"id": "s1", "tags": ["B-PER", "O"]}), gold=gold)
    assert problems_of(exc.value) == [(1, "id 's1' has 2 tags but the example has 3 tokens; give one tag per token")]


def test_it_warns_about_inside_tags_without_a_beginning(tmp_path):
    gold = jsonl({"id": "s1", "tags": ["B-PER", "I-PER", "O", "B-LOC"]})
    pred = jsonl({"id": "s1", "tags": ["I-PER", "I-PER", "O", "I-LOC"]})
    result = score_files(gold, pred, task="ner")
    # default mode: the orphan I- tags start the same entities as the gold's B- tags
    assert result.macro_f1 == 1.0
    [notice] = result.warnings
    assert notice.code == "orphan_inside_tags" and notice.count == 2


def test_it_reports_a_missing_file_as_an_input_error(tmp_path):
    with pytest.raises(GoldFormatError) as exc:
        read_gold(tmp_path / "nope.jsonl", task="single")
    assert "cannot read the file" in str(exc.value)


def test_it_refuses_bytes_that_are_not_utf8():
    with pytest.raises(GoldFormatError) as exc:
        read_gold(b'{"id": "a", "label": "x"}\n{"id": "b", "label": "\xe9"}\n', task="single")
    assert exc.value.problems[0].line == 2 and "UTF-8" in exc.value.problems[0].reason


# --------------------------------------------------------------------------- command line


def test_the_classify_command_prints_json(tmp_path, capsys):
    (tmp_path / "g.jsonl").write_bytes(gold_single())
    (tmp_path / "p.jsonl").write_bytes(jsonl({"id": "a", "label": "civil"}, {"id": "b", "label": "tax"}, {"id": 3, "label": "civil"}))
    code = main(["classify", "--gold", str(tmp_path / "g.jsonl"), "--pred", str(tmp_path / "p.jsonl"), "--task", "single", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["macro_f1"] == 1.0
    assert set(out["per_label"]) == {"civil", "tax"}
    assert out["warnings"] == []


def test_the_classify_command_prints_a_table(tmp_path, capsys):
    (tmp_path / "g.jsonl").write_bytes(jsonl({"id": "s", "tags": ["B-PER", "I-PER", "O", "B-LOC"]}))
    (tmp_path / "p.jsonl").write_bytes(jsonl({"id": "s", "tags": ["B-PER", "I-PER", "O", "O"]}))
    code = main(["classify", "--gold", str(tmp_path / "g.jsonl"), "--pred", str(tmp_path / "p.jsonl"), "--task", "ner"])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out.startswith("macro-F1  0.5000  (1 examples, 2 entity types)")
    assert "LOC" in captured.out and "never predicted" in captured.err


def test_the_classify_command_exits_2_with_the_reasons_on_stderr(tmp_path, capsys):
    (tmp_path / "g.jsonl").write_bytes(gold_single())
    (tmp_path / "p.jsonl").write_bytes(jsonl({"id": "a", "label": "civil"}, {"id": "x", "label": "tax"}))
    code = main(
        ["classify", "--gold", str(tmp_path / "g.jsonl"), "--pred", str(tmp_path / "p.jsonl"), "--task", "single", "--labels", "civil,tax"]
    )
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert f"{tmp_path / 'p.jsonl'}:2: id 'x' is not in the gold set" in captured.err


def test_python_m_evaluation_classify_runs_as_a_subprocess(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "g.jsonl").write_bytes(gold_single())
    (tmp_path / "p.jsonl").write_bytes(jsonl({"id": "a", "label": "civil"}))
    repo = Path(__file__).resolve().parents[2]
    args = [sys.executable, "-m", "evaluation", "classify", "--gold", "g.jsonl", "--pred", "p.jsonl", "--task", "single"]
    done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": str(repo)}, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("p.jsonl: 2 ids of the gold set have no prediction: 'b', '3'")
    (tmp_path / "p.jsonl").write_bytes(jsonl({"id": "a", "label": "civil"}, {"id": "b", "label": "tax"}, {"id": 3, "label": "tax"}))
    done = subprocess.run([*args, "--json"], cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": str(repo)}, timeout=60)
    assert done.returncode == 0
    assert json.loads(done.stdout)["macro_f1"] == pytest.approx((2 / 3 + 2 / 3) / 2)


@pytest.mark.parametrize(
    ("task", "lines"),
    [
        ("single", [{"id": "a", "label": "civil", "language": "fr"}, {"id": 2, "label": "tax"}]),
        ("multi", [{"id": "a", "labels": ["x", "y", "x"]}, {"id": "b", "labels": [], "language": "el"}]),
        ("ner", [{"id": "s", "tags": ["B-PER", "I-PER", "O"], "tokens": ["Jean", "Dupont", "."]}]),
    ],
)
def test_gold_to_jsonl_reads_back_to_the_same_gold(task, lines):
    from evaluation.classification import gold_to_jsonl

    gold = read_gold(jsonl(*lines), task=task)
    text = gold_to_jsonl(gold)
    again = read_gold(text.encode(), task=task)
    assert (again.ids, again.answers, again.languages) == (gold.ids, gold.answers, gold.languages)
    assert gold_to_jsonl(again) == text
