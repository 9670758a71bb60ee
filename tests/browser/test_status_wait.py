"""The run page on a server that holds its status answers (static/js/status.js, ``?wait=``; issue #39).

The session's own gunicorn (``live_site``) runs sync workers, which hold nothing: the other browser tests see the
page's fallback schedule. Here a gunicorn of gthread workers (as the deployment's) serves the test database, and the
test moves a public run's row itself (no worker): the page keeps one request held while nothing changes, shows a
change within a fraction of a second, and reloads on the score.
"""

from __future__ import annotations

import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.services import submission_create
from tests.fixtures_site import serve_site

from .conftest import new_page, watch_errors
from .helpers import accessibility_problems

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.slow]

expect = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed").expect

RUN = b"q1 Q0 d1 1 3.0 sys\nq2 Q0 d3 1 2.0 sys\nq3 Q0 d4 1 1.0 sys\n"


@pytest.fixture(scope="module")
def threaded_site(django_db_setup, django_db_blocker, private_data_dir, worker_queue, tmp_path_factory):
    """gunicorn with 2 gthread workers of 4 threads on the test database (``GUNICORN_CMD_ARGS`` adds the threads to
    serve_site's command line)."""
    from django.conf import settings
    from django.db import connection

    from tests.fixtures_worker import database_url

    with django_db_blocker.unblock():
        url = database_url(connection.settings_dict)
    with serve_site(database_url=url, data_dir=private_data_dir, worker_queue=worker_queue, var_dir=settings.VAR_DIR,
                    folder=tmp_path_factory.mktemp("gunicorn-threads"), GUNICORN_CMD_ARGS="--threads 4") as site:
        yield site


@pytest.mark.django_db(transaction=True)
def test_the_run_page_waits_on_the_server_and_follows_the_run(chromium_browser, threaded_site, tiny_dataset, alice):
    submission = submission_create(user=alice, split=tiny_dataset.splits.get(name="dev"),
                                   upload=SimpleUploadedFile("run.txt", RUN), metadata={"system_name": "held",
                                                                                        "visibility": "public"})
    context, page = new_page(chromium_browser, threaded_site)
    try:
        watch_errors(page)
        asked: list[float] = []
        page.on("request", lambda r: asked.append(time.monotonic()) if "/status.json?wait=5" in r.url else None)
        page.goto(f"/submissions/{submission.pk}/")
        status = page.locator("#status")
        expect(status).to_have_attribute("data-status", "queued")
        time.sleep(3)
        # Held: one request in 3 s (its answer is due at 5 s); the fallback schedule would have asked 6 times.
        assert len(asked) == 1, len(asked)

        assert submission.claim()  # queued -> scoring, as a worker does
        changed = time.monotonic()
        expect(status).to_have_attribute("data-status", "scoring", timeout=1000)
        shown = time.monotonic() - changed

        with page.expect_navigation(timeout=5000):  # the page reloads itself once the run is scored
            assert submission.mark_scored(warnings=[])
        page.wait_for_load_state()
        expect(page.locator("[data-status-text]")).to_have_text("scored", timeout=3000)
        assert shown < 0.5, shown
        assert page.js_errors == []
        assert accessibility_problems(page) == []
    finally:
        context.close()
