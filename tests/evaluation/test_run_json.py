"""JSON runs ({qid: {docid: score}}: MTEB, ranx, ir_measures) become the TREC run they stand for."""

from __future__ import annotations

import pytest

from evaluation.errors import RunFormatError
from evaluation.run_json import json_run_to_trec, looks_like_json_run


def test_it_ranks_by_score_then_docid_descending_as_trec_eval_does():
    data = b'{"q1": {"d1": 0.5, "d2": 0.9, "d3": 0.5}, "q2": {"d9": 3}}'
    assert json_run_to_trec(data, tag="mteb").decode().splitlines() == [
        "q1 Q0 d2 1 0.9 mteb", "q1 Q0 d3 2 0.5 mteb", "q1 Q0 d1 3 0.5 mteb", "q2 Q0 d9 1 3.0 mteb"]


def test_it_sniffs_an_object_after_a_bom_and_blank_space_only():
    assert looks_like_json_run(b'\xef\xbb\xbf \n {"q1"')
    assert not looks_like_json_run(b"q1 Q0 d1 1 0.5 run\n")
    assert not looks_like_json_run(b'[{"q1": {}}]')


@pytest.mark.parametrize("data, reason", [
    (b'{"q1": {"d1": 0.5,}}', "run.json:1: not valid JSON"),
    (b'{\n"q1": {"d1": 0.5}\n\n,,}', "run.json:4: not valid JSON"),
    (b'[["q1", "d1", 0.5]]', "holds a list"),
    (b'{"q1": [["d1", 0.5]]}', "query 'q1': expected an object"),
    (b'{"q1": {"d1": "high"}}', "query 'q1', document 'd1': the score 'high' is not a number"),
    (b'{"q1": {"d1": true}}', "the score True is not a number"),
    (b'{"q1": {"d1": NaN}}', "the score nan is not finite"),
    (b'{"q 1": {"d1": 1}}', "query 'q 1': the query id contains a space"),
    (b'{"q1": {"": 1}}', "document '': the document id is empty"),
    (b'{"q1": {}}', "holds no document"),
    (b'\xff{}', "not UTF-8"),
])
def test_it_refuses_what_is_not_the_shape_naming_the_keys_or_the_line(data, reason):
    with pytest.raises(RunFormatError) as caught:
        json_run_to_trec(data, path="run.json")
    assert reason in str(caught.value), str(caught.value)


def test_it_lists_several_problems_at_once():
    with pytest.raises(RunFormatError) as caught:
        json_run_to_trec(b'{"q1": {"a": "x", "b": null}, "q2": 4}')
    assert len(caught.value.problems) == 3
