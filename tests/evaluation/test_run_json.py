"""JSON runs ({qid: {docid: score}}: MTEB, ranx, ir_measures) become the TREC run they stand for."""

from __future__ import annotations

import pytest

from evaluation.errors import RunFormatError
from evaluation.run_json import MAX_JSON_PROBLEMS, json_run_convert, json_run_to_trec, looks_like_json_run


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
    (b'{"q1": [["d1", 0.5]]}', "query 'q1': a list of lists where {docid: score} belongs"),
    (b'{"q1": [{"d1": 0.5}]}', "query 'q1': a list of objects where {docid: score} belongs; write {qid: {docid: score}}"),
    (b'{"q1": {"d1": {"score": 0.5}}}', "query 'q1', document 'd1': an object where a score belongs"),
    (b'{"q1": {"d1": "high"}}', "query 'q1', document 'd1': the score 'high' is a string, not a number"),
    (b'{"q1": {"d1": true}}', "the score true is not a number"),
    (b'{"q1": {"d1": NaN}}', "query 'q1', document 'd1': the score NaN is not a finite number"),
    (b'{"q1": {"d1": Infinity}}', "the score Infinity is not a finite number"),
    (b'{"q1": {"d1": -Infinity}}', "the score -Infinity is not a finite number"),
    (b'{"q1": {"d1": 1e400}}', "the score '1e400' overflows a double"),
    (b'{"q1": {"d1": ' + b"1" * 400 + b'}}', "the score is a number of more than 64 characters"),
    (b'{"q1": {"d1": ' + b"1" * 5000 + b'}}', "the score is a number of more than 64 characters"),
    (b'{"q1": {"d1": 1}, "q1": {"d2": 2}}', "query 'q1' appears twice"),
    (b'{"q1": {"d1": 1, "d1": 2}}', "query 'q1': document 'd1' appears twice"),
    (b'{"q1": {"d1": ' + b"[" * 100_000 + b"]" * 100_000 + b'}}', "nested more than 32 levels deep"),
    (b'{"q1": ' + b'[{"a": ' * 50_000, "nested more than 32 levels deep"),
    (b'{"q1": {"d1": 1}} {}', "expected the end of the file after the run's object"),
    (b'{"q1": {"d\\ud800": 1}}', "lone surrogate"),
    (b'{"q 1": {"d1": 1}}', "query 'q 1': the query id contains a space"),
    (b'{"q1": {"": 1}}', "document '': the document id is empty"),
    (b'{"q1": {}}', "holds no document"),
    (b'\xff{}', "not UTF-8"),
    (b'{"' + b"q" * 100_000 + b'": {"d1": 1}}', "a string longer than 1,024 characters"),
], ids=lambda value: value[:40].decode("utf-8", "replace") if isinstance(value, bytes) else None)
def test_it_refuses_what_is_not_the_shape_naming_the_keys_or_the_line(data, reason):
    with pytest.raises(RunFormatError) as caught:
        json_run_to_trec(data, path="run.json")
    assert reason in str(caught.value), str(caught.value)


def test_it_lists_several_problems_at_once():
    with pytest.raises(RunFormatError) as caught:
        json_run_to_trec(b'{"q1": {"a": "x", "b": null}, "q2": 4}')
    assert len(caught.value.problems) == 3


def test_an_id_is_quoted_cut_and_a_message_stays_a_few_short_lines_whatever_the_input():
    long_id = "q" * 900
    data = ("{" + ", ".join(f'"{long_id}{i}": [{{"d": 1}}]' for i in range(1000)) + "}").encode()
    with pytest.raises(RunFormatError) as caught:
        json_run_to_trec(data)
    text = str(caught.value)
    assert len(caught.value.problems) == MAX_JSON_PROBLEMS
    assert len(text.splitlines()) == MAX_JSON_PROBLEMS and len(text) < 1500, text
    assert f"query '{'q' * 60}'…: a list of objects" in text


def test_a_big_run_is_converted_query_by_query_as_the_whole_reading_would(tmp_path):
    import io
    import json

    run = {f"q{i}": {f"doc{j}": (j * 7919 % 1000) / 7 for j in range(500)} for i in range(200)}
    data = json.dumps(run, indent=1).encode()
    out = io.BytesIO()
    stats = json_run_convert(io.BytesIO(data), out, tag="t")
    expected = []
    for qid, docs in run.items():
        ranked = sorted(((float(s), d) for d, s in docs.items()), reverse=True)
        expected += [f"{qid} Q0 {d} {r} {s!r} t" for r, (s, d) in enumerate(ranked, 1)]
    assert out.getvalue().decode().splitlines() == expected
    assert (stats.queries, stats.lines) == (200, 100_000)
