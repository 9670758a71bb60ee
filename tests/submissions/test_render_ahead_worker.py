"""Through a real worker process and Redis: after a score lands, the worker has rendered the leaderboard itself.

No web request renders the page after a landing: the first anonymous visitor
is served the worker's page from the cache (``leaderboard.page_cache.render_ahead``).
The session's worker renders nothing ahead (tests/fixtures_worker.py: that
work outlives the "scored" other tests wait for); this test starts a worker of
its own, on a queue of its own, with render-ahead on, and waits for its task
to end before the teardown empties the tables.
"""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from catalogue.page_generation import page_generation
from leaderboard.page_cache import page_key, shared_cache
from submissions.models import Submission
from tests.waiting import wait_until, wait_until_final

from .conftest import GOOD_RUN
from .test_e2e_worker import post_run

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_the_worker_renders_the_leaderboard_a_new_score_changes(transactional_db, unread_queue, worker_factory,
                                                                  client, alice, tiny_dataset):
    if not shared_cache():
        pytest.skip("needs a cache the worker shares with the web (CACHE_URL=redis://…)")
    worker = worker_factory(queues=[unread_queue], extra_env={"LEXBOARD_RENDER_AHEAD": "1"})
    split = tiny_dataset.splits.get(name="test")
    url = reverse("leaderboard:dataset", args=[tiny_dataset.slug])
    visitor = Client()
    assert "BM25 e2e" not in visitor.get(url).content.decode()  # cached for anonymous visitors

    client.force_login(alice)
    assert post_run(client, split, GOOD_RUN).status_code == 302
    submission = wait_until_final(Submission.objects.get().pk, worker)
    assert submission.status == Submission.Status.SCORED, submission.error

    key = page_key(RequestFactory().get(url)) + ":gz"
    # The worker renders once its commit is done, just after "scored"; until it bumps the generation, the page
    # the visitor cached above looks current too: so the worker's word first, then the cache.
    wait_until(lambda: f"rendered {url} ahead" in worker.log() and (entry := cache.get(key)) is not None
               and entry[0] == page_generation(), timeout=30, what="a current page in the cache", worker=worker)
    with CaptureQueriesContext(connection) as queries:
        page = visitor.get(url).content.decode()
    assert "BM25 e2e" in page
    assert len(queries) == 0  # served the worker's page: nothing rendered here
    # The task's end (the other pages): then the teardown may flush.
    wait_until(lambda: "succeeded in" in worker.log(), timeout=30, what="the task's end", worker=worker)
    assert f"rendered {url} ahead" in worker.log()
