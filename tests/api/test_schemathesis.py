"""The API conforms to its own OpenAPI schema: Schemathesis, in process, with and without a token (issue #20).

Every operation of ``/api/v1/schema/`` runs through Schemathesis' examples,
coverage and fuzzing phases (a bounded number of cases each) against the WSGI
application, with every check of Schemathesis (status codes and content types
documented, bodies conforming, negative data refused, no 500 …). The database
holds a dataset with scored submissions so that the reads have something to
read; uploads and fusions are real (their scoring waits in the queue).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from lexboard.wsgi import application

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


#: The exceptions the live run in CI states too, with their reasons (scripts/ci-schemathesis.toml).
CONFIG = SchemathesisConfig.from_path(str(Path(__file__).resolve().parents[2] / "scripts" / "ci-schemathesis.toml"))

#: Schemathesis' WSGI transport does not undo a Content-Encoding (the cached leaderboard is gzip); HTTP clients do.
PLAIN = {"Accept-Encoding": "identity"}


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    """As Django's test client does: the WSGI handler must not close the test's database connection."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def scored_entries(tiny_dataset, alice):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from submissions.services import submission_create
    from submissions.services.scoring import submission_score_now

    from .conftest import PERFECT, WEAK, run_bytes

    out = []
    for name, ranking in (("perfect", PERFECT), ("weak", WEAK)):
        upload = SimpleUploadedFile(f"{name}.txt", run_bytes(ranking))
        submission = submission_create(user=alice, split=tiny_dataset.splits.get(name="dev"), upload=upload,
                                       metadata={"system_name": name})
        out.append(submission_score_now(submission.pk))  # scored here, in process: compare has per-query values
    return out


@pytest.fixture(params=["token", "anonymous"])
def api_schema(request, _keep_the_test_connection, scored_entries, alice_token):
    """The schema as the server answers it, with this database (``sort`` and ``measure`` list its measures).

    With a token, Schemathesis knows it as the authentication (its auth checks then send a wrong one).
    """
    loaded = schemathesis.openapi.from_wsgi("/api/v1/schema/", application, config=CONFIG)
    if request.param == "token":

        class TokenAuth:
            def get(self, case, context):
                return alice_token

            def set(self, case, data, context):
                case.headers = {**(case.headers or {}), "Authorization": f"Token {data}"}

        loaded.auth()(TokenAuth)
    return loaded


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_operation_conforms_to_the_schema(case):
    case.call_and_validate(headers=PLAIN)


def test_sequences_of_calls_conform_to_the_schema(api_schema):
    """The stateful phase: uploads and fusions followed by reads of what they answered (links from the schema)."""

    class Workflow(api_schema.as_state_machine()):
        def get_call_kwargs(self, case):
            return {"headers": PLAIN}

    Workflow.run(settings=settings(max_examples=15, stateful_step_count=4, deadline=None,
                                   suppress_health_check=list(HealthCheck)))
