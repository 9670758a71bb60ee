"""The live Schemathesis run's upload hook (scripts/schemathesis_hooks.py) keeps a positive case positive.

The hook puts a valid run into generated uploads. Schemathesis judges a changed body again with its own validator
(jsonschema_rs: ECMA-262 regexes, where ``$`` allows no trailing newline), and a case it then finds invalid counts as
negative, so the server's 202 is reported as "Schema-violating request accepted" (CI, stop 44). Hypothesis writes a
pattern's ``$`` by Python's rule, trailing newline allowed, so a kept generated ``paper_url`` of ``"https://a.bc\\n"``
did exactly that. Here the hook's body is checked by the same validator, on the site's own schema.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jsonschema_rs
import pytest
import schemathesis

from lexboard.wsgi import application

HOOKS = Path(__file__).resolve().parents[2] / "scripts" / "schemathesis_hooks.py"


@pytest.fixture(scope="module")
def hooks():
    spec = importlib.util.spec_from_file_location("schemathesis_hooks_under_test", HOOKS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    schemathesis.hooks.unregister(module.before_call)  # the module registers it globally on import


@pytest.fixture(scope="module")
def upload_schema():
    operation = schemathesis.openapi.from_wsgi("/api/v1/schema/", application)["/api/v1/submissions/"]["POST"]
    return operation.get_body_for_media_type("multipart/form-data").validation_schema


UPLOAD = {"dataset": "bsard", "split": "test", "run_file": "1 Q0 7 1 2.5 st-1\n"}


def test_a_generated_field_schemathesis_would_refuse_is_not_kept(hooks, upload_schema):
    validator = jsonschema_rs.validator_for(upload_schema)
    generated = {"system_name": "BM25", "team": "ULiège", "paper_url": "https://a.bc\n",
                 "code_url": "https://example.org/code", "latency_ms": 12.5}
    assert not validator.is_valid({**generated, **UPLOAD}), "the case this test is about: a newline before the end"

    body = hooks.upload_body(generated, upload_schema, tag="st-1", **UPLOAD)

    assert validator.is_valid(body), list(validator.iter_errors(body))
    assert body == {"system_name": "BM25", "team": "ULiège", "code_url": "https://example.org/code",
                    "latency_ms": 12.5, **UPLOAD}


def test_an_invalid_generated_name_gives_way_to_the_tag(hooks, upload_schema):
    body = hooks.upload_body({"system_name": "x" * 121, "visibility": "public"}, upload_schema, tag="st-2",
                             **UPLOAD)
    assert body == {"system_name": "st-2", "visibility": "public", **UPLOAD}


def test_the_hooks_own_fields_must_be_valid(hooks, upload_schema):
    with pytest.raises(AssertionError, match="dataset"):
        hooks.upload_body({}, upload_schema, tag="st-3", **{**UPLOAD, "dataset": "not a slug"})
