"""A stranger's JSON run at the API's door (#36 item 3): never a 500, a short answer naming the query and the
rule, nothing written, no slot used.

Each case was an unhandled 500 (RecursionError, OverflowError, ValueError), a silent loss (a query key twice
kept the last), a message as long as the upload, or an answer in other words than the rule, before the bounded
JSON reader (``evaluation.run_json``).
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.models import Submission

pytestmark = pytest.mark.django_db

#: The largest answer a refusal may be, whatever the upload holds.
SMALL_BODY = 4096


def post(api, data: bytes, name: str = "run.json"):
    return api.post("/api/v1/submissions/", {"dataset": "tiny", "split": "dev", "system_name": "json",
                                             "run_file": SimpleUploadedFile(name, data)}, format="multipart")


def _refusal(response) -> str:
    assert response.status_code == 400, (response.status_code, response.content[:500])
    assert len(response.content) < SMALL_BODY, len(response.content)
    assert not Submission.objects.exists()
    error = response.json()["error"]
    return error["message"] + "\n" + "\n".join(d["reason"] for d in error["details"])


@pytest.mark.parametrize("data, said", [
    pytest.param(b'{"q1": {"d1": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
                 ["query 'q1', document 'd1'", "nested more than 32 levels deep"], id="deep-nesting"),
    pytest.param(b'{"q1": ' + b'{"d1": ' * 100_000 + b"1" + b"}" * 100_001,
                 ["query 'q1', document 'd1'", "an object where a score belongs"], id="deep-objects"),
    pytest.param(b'{"q1": {"d1": ' + b"9" * 400 + b"}}",
                 ["query 'q1', document 'd1'", "more than 64 characters"], id="400-digit-integer"),
    pytest.param(b'{"q1": {"d1": ' + b"9" * 5000 + b"}}",
                 ["query 'q1', document 'd1'", "more than 64 characters"], id="5000-digit-integer"),
    pytest.param(b'{"q1": {"d1": 1e400}}', ["query 'q1', document 'd1'", "overflows a double"], id="1e400"),
    pytest.param(b'{"q1": {"d1": NaN}}', ["query 'q1', document 'd1'", "NaN is not a finite number"], id="nan"),
    pytest.param(b'{"q1": {"d1": Infinity}}', ["query 'q1', document 'd1'", "Infinity is not a finite number"],
                 id="infinity"),
    pytest.param(b'{"q1": {"d1": 2.0}, "q2": {"d3": 1.0}, "q1": {"d2": 1.0}}', ["query 'q1' appears twice"],
                 id="repeated-query"),
    pytest.param(b'{"q1": {"d1": 2.0, "d2": 1.5, "d1": 1.0}}', ["query 'q1': document 'd1' appears twice"],
                 id="repeated-document"),
    pytest.param(b'{"q1": [{"d1": 2.0}, {"d2": 1.0}]}',
                 ["query 'q1': a list of objects where {docid: score} belongs", "write {qid: {docid: score}}"],
                 id="list-of-objects"),
])
def test_a_hostile_json_run_gets_a_short_400_naming_the_query_and_the_rule(api, tiny_dataset, data, said):
    text = _refusal(post(api, data))
    for words in said:
        assert words in text, text


def test_a_run_nested_one_level_deeper_is_not_echoed_back(api, tiny_dataset):
    """#36: a 63 MiB run nested one level deeper got a 400 whose body repeated the whole object (66 MB)."""
    inner = ", ".join(f'"d{i}": {{"score": {i}}}' for i in range(20_000))
    data = ("{" + ", ".join(f'"q{q}": {{{inner}}}' for q in range(1, 4)) + "}").encode()
    text = _refusal(post(api, data))
    assert "query 'q1', document 'd0': an object where a score belongs" in text


def test_a_long_query_id_is_quoted_cut(api, tiny_dataset):
    data = ('{"' + "q" * 1000 + '": [1, 2]}').encode()
    text = _refusal(post(api, data))
    assert f"query '{'q' * 60}'…: a list of numbers" in text and "q" * 61 not in text
