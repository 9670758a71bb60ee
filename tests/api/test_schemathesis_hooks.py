"""The live Schemathesis run's upload hook (scripts/schemathesis_hooks.py) never turns a positive case negative.

The hook puts a valid run into generated uploads. Schemathesis judges a changed body again with its own validator
(jsonschema_rs), and a case it then finds invalid counts as negative, so the server's 202 is reported as
"Schema-violating request accepted". Stop 44's CI failed so, on a kept generated ``models_used`` of ``""``: the
schema's ``oneOf`` for it had two branches taking ``""`` (mended; tests/api/test_request_truth.py pins it for every
blank-able field). The hook now checks its body with that validator, on the site's own schema, and stops the run
naming any field it refuses instead of leaving a confusing failure to the seed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jsonschema_rs
import pytest
import schemathesis

from api.contract import api_schema

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
    # The document /api/v1/schema/ serves (it reads no database), as the live run loads it.
    operation = schemathesis.openapi.from_dict(api_schema())["/api/v1/submissions/"]["POST"]
    return operation.get_body_for_media_type("multipart/form-data").validation_schema


UPLOAD = {"dataset": "bsard", "split": "test", "run_file": "1 Q0 7 1 2.5 st-1\n"}


def test_the_generated_fields_of_stop_44s_failure_are_kept_and_valid(hooks, upload_schema):
    generated = {"system_name": "BM25", "team": "ULiège", "models_used": "", "paper_url": "",
                 "code_url": "https://example.org/code", "latency_ms": 12.5}
    body = hooks.upload_body(generated, upload_schema, tag="st-1", **UPLOAD)
    assert body == {**generated, **UPLOAD}
    assert jsonschema_rs.validator_for(upload_schema).is_valid(body)


def test_without_a_generated_name_the_tag_names_the_system(hooks, upload_schema):
    body = hooks.upload_body({"visibility": "public"}, upload_schema, tag="st-2", **UPLOAD)
    assert body == {"system_name": "st-2", "visibility": "public", **UPLOAD}


def test_a_generated_value_the_schema_refuses_stops_the_run_naming_it(hooks, upload_schema):
    # A Python-rule ``$`` lets Hypothesis end a string with a newline; the ECMA-262 validator does not.
    with pytest.raises(AssertionError, match=r"generated positive fields .*'paper_url'.*mend the schema"):
        hooks.upload_body({"paper_url": "https://a.bc\n"}, upload_schema, tag="st-3", **UPLOAD)


def test_the_hooks_own_fields_must_be_valid(hooks, upload_schema):
    with pytest.raises(AssertionError, match="the upload hook's own fields .*'dataset'"):
        hooks.upload_body({}, upload_schema, tag="st-4", **{**UPLOAD, "dataset": "not a slug"})
