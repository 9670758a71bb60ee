"""A body in a media type an operation does not take: a documented 415 that names what to send.

A ``.ci/run`` of 7 December 2026: Schemathesis's stateful phase sent ``POST /api/v1/sandbox/runs/`` with no
``Content-Type``; DRF answered 415 ("Unsupported media type "" in request."), a status the schema did not list and
a message that named no fix.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from accounts.models import ApiToken
from api.contract import UNSUPPORTED_MEDIA_TYPE, api_schema

pytestmark = pytest.mark.django_db


def test_every_operation_taking_a_body_documents_415_in_the_error_shape():
    with_body = [(path, method, operation) for path, operations in api_schema()["paths"].items()
                 for method, operation in operations.items()
                 if isinstance(operation, dict) and "requestBody" in operation]
    assert len(with_body) >= 8, with_body  # uploads, fusions, the final flag, the terms, the PATCH
    for path, method, operation in with_body:
        answer = operation["responses"].get("415")
        assert answer is not None, (method, path)
        assert answer["description"] == UNSUPPORTED_MEDIA_TYPE
        assert answer["content"] == operation["responses"]["401"]["content"], (method, path)


@pytest.mark.parametrize(("path", "takes"), [
    ("/api/v1/submissions/", "multipart/form-data or application/x-www-form-urlencoded"),
    ("/api/v1/sandbox/runs/", "multipart/form-data or application/x-www-form-urlencoded"),
    ("/api/v1/fusions/", "application/json"),
])
@pytest.mark.parametrize(("content_type", "sent"), [("text/plain", 'as "text/plain"'), ("", "with no Content-Type")])
def test_a_body_in_another_media_type_or_none_is_a_415_naming_what_to_send(alice, path, takes, content_type, sent):
    _, key = ApiToken.issue(user=alice)
    client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    response = client.generic("POST", path, b"--x\r\nrun\r\n--x--\r\n", content_type=content_type)
    assert response.status_code == 415, response.content
    assert response.json() == {"error": {"message": f"The request body was sent {sent}; send it as {takes}, with "
                                                    "that Content-Type.", "details": []}}
