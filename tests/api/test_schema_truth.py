"""The OpenAPI schema at /api/v1/schema/ states what the server enforces (issue #20, item 1)."""

from __future__ import annotations

import re

import pytest
import yaml

from evaluation.measures import is_macro_f1_name, parse_measure

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(client):
    response = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return response.json() if response["Content-Type"].endswith("json") else yaml.safe_load(response.content)


def _component(schema, ref: str) -> dict:
    return schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]


def _enum(schema, prop: dict) -> set:
    """The values of an enum property, through ``$ref`` / ``allOf`` / ``oneOf``."""
    if "enum" in prop:
        return set(prop["enum"])
    if "$ref" in prop:
        return _enum(schema, _component(schema, prop["$ref"]))
    return set().union(*(_enum(schema, p) for p in prop.get("allOf", []) + prop.get("oneOf", [])))


def _operations(schema):
    for path, item in schema["paths"].items():
        for method, op in item.items():
            yield method, path, op


def test_the_upload_is_a_binary_file_in_a_multipart_body(schema):
    body = schema["paths"]["/api/v1/submissions/"]["post"]["requestBody"]
    assert body["required"] is True
    form = _component(schema, body["content"]["multipart/form-data"]["schema"]["$ref"])
    assert form["properties"]["run_file"] == {**form["properties"]["run_file"], "type": "string", "format": "binary"}
    assert {"dataset", "run_file", "system_name"} <= set(form["required"])
    assert form["properties"]["system_name"].get("minLength") == 1
    assert form["properties"]["dataset"].get("minLength") == 1
    for name, prop in form["properties"].items():
        assert not prop.get("nullable"), f"{name}: a multipart form has no null"
    assert _enum(schema, form["properties"]["family"]) >= {"lexical", "dense", "hybrid", "llm", "other"}
    assert _enum(schema, form["properties"]["visibility"]) >= {"public", "private"}


def test_the_bounds_and_patterns_are_stated(schema):
    compare = {p["name"]: p for p in schema["paths"]["/api/v1/compare/"]["get"]["parameters"]}
    assert compare["submissions"]["required"] and compare["submissions"]["schema"]["pattern"]
    fusion = _component(
        schema, schema["paths"]["/api/v1/fusions/"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    )
    ids = fusion["properties"]["submissions"]
    assert ids["uniqueItems"] and ids["minItems"] == 2 and ids["maxItems"] == 5
    assert ids["items"]["maximum"] == 2**63 - 1
    assert fusion["properties"]["k"]["maximum"] == 10_000
    listing = {p["name"]: p for p in schema["paths"]["/api/v1/submissions/"]["get"]["parameters"]}
    assert listing["limit"]["schema"]["minimum"] == 1 and listing["limit"]["schema"]["maximum"] == 200
    assert "queued" in _enum(schema, listing["status"]["schema"])
    detail = schema["paths"]["/api/v1/submissions/{id}/"]["get"]["parameters"][0]["schema"]
    assert detail["maximum"] == 2**63 - 1 and detail["minimum"] == 1


def test_every_operation_states_its_errors_in_the_one_shape_and_has_an_example(schema):
    for method, path, op in _operations(schema):
        codes = set(op["responses"])
        assert {"401", "503"} <= codes, (method, path, codes)
        for code, response in op["responses"].items():
            if code.startswith(("4", "5")):
                assert response["content"]["application/json"]["schema"]["$ref"].endswith("/Error"), (path, code)
        examples = [m.get("examples") for r in op["responses"].values() for m in r.get("content", {}).values()]
        examples += [m.get("examples") for m in op.get("requestBody", {}).get("content", {}).values()]
        assert any(examples), (method, path)
    upload = schema["paths"]["/api/v1/submissions/"]["post"]["responses"]
    assert {"400", "401", "403", "404", "413", "429", "503"} <= set(upload)


def test_an_operation_needs_a_token_exactly_when_the_schema_says_so(schema, client, tiny_dataset):
    """Public reads say ``security: []`` (a generated client calls them without a key); every other operation names
    the token, and an anonymous call of it is a 401. Checked against the server, operation by operation."""
    public, private = set(), set()
    for method, path, op in _operations(schema):
        url = path.replace("{slug}", tiny_dataset.slug).replace("{id}", "999999")
        response = getattr(client, method)(url, content_type="application/json")
        if op["security"] == []:
            public.add(op["operationId"])
            assert response.status_code != 401, (method, path, response.content[:300])
        else:
            private.add(op["operationId"])
            assert op["security"] == [{"tokenAuth": []}], (method, path, op["security"])
            assert response.status_code == 401, (method, path, response.status_code, response.content[:300])
    assert {"dataset_list", "dataset_retrieve", "leaderboard_retrieve", "submission_retrieve",
            "submission_per_query", "compare"} <= public, sorted(public)
    assert {"submission_create", "submission_update", "submission_list", "submission_withdraw"} <= private


@pytest.mark.parametrize("method", ["put", "trace", "delete"])
def test_a_method_an_operation_lacks_is_a_405_with_or_without_a_token(client, tiny_dataset, method):
    """Not a 401: no token makes an undeclared method work (the public reads say ``security: []``)."""
    for url in ("/api/v1/submissions/42/", f"/api/v1/datasets/{tiny_dataset.slug}/", "/api/v1/submissions/"):
        response = client.generic(method.upper(), url)
        assert response.status_code == 405, (method, url, response.status_code, response.content[:200])
        assert response.json()["error"]["message"], response.content


#: Where the API names a measure: a parameter or property of these names, a ``scores`` object's keys.
MEASURE_FIELDS = {"measure", "measures", "sort", "primary_measure"}
#: A measure named in a description's code span (`R@100`).
MEASURE_IN_TEXT = re.compile(r"`([A-Za-z][A-Za-z']*@\d+)`")


def _is_measure(name: object) -> bool:
    """A name of the measure registry (``evaluation.measures.FAMILIES``) or macro-F1 (classification)."""
    try:
        parse_measure(str(name))
    except ValueError:
        return is_macro_f1_name(name)
    return True


def _measure_names(node, key: str | None = None):
    """Every measure name the schema gives: enums and examples under :data:`MEASURE_FIELDS`, ``scores`` keys,
    code spans of descriptions."""
    if isinstance(node, dict):
        if key in MEASURE_FIELDS and "enum" in node:
            yield from node["enum"]
        if isinstance(node.get("name"), str) and node["name"] in MEASURE_FIELDS and isinstance(node.get("schema"), dict):
            yield from node["schema"].get("enum", [])
        for name, value in node.items():
            if name in MEASURE_FIELDS and isinstance(value, str):
                yield value
            elif name in MEASURE_FIELDS and isinstance(value, list):
                yield from (v for v in value if isinstance(v, str))
            elif name == "scores" and isinstance(value, dict) and value \
                    and all(isinstance(v, int | float) or v is None for v in value.values()):
                yield from value  # an example's scores, by measure
            elif name == "description" and isinstance(value, str):
                yield from MEASURE_IN_TEXT.findall(value)
            yield from _measure_names(value, name)
    elif isinstance(node, list):
        for value in node:
            yield from _measure_names(value, key)


def test_the_api_names_no_measure_the_registry_lacks(schema):
    """The API has no enum of measures of its own (a dataset's ``measures`` list the values its ``sort`` and compare's
    ``measure`` take, the registry's names); every measure its schema names, in an enum, an example or a description,
    is one of the registry (#40: one registry per kind of thing)."""
    names = set(_measure_names(schema))
    assert {"R@100"} <= names, "the walk found none of the schema's examples"
    wrong = sorted(name for name in names if not _is_measure(name))
    assert not wrong, f"the API's schema names measures the registry (evaluation.measures.FAMILIES) lacks: {wrong}"
    sort = {p["name"]: p for p in schema["paths"]["/api/v1/datasets/{slug}/leaderboard"]["get"]["parameters"]}["sort"]
    assert "enum" not in sort["schema"], "a hand-written list of measures: the dataset's `measures` list them"
