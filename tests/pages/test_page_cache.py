"""The anonymous whole-page cache of the home and dataset pages: served from the cache, never stale."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from leaderboard.page_cache import page_key


@pytest.fixture(autouse=True, params=["digest", "generation"])
def cache_kind(request, settings, tmp_path):
    """Both ways of keying pages: a per-process cache (database digest) and a shared one (page generation).

    A file-based cache stands for Redis: shared by processes, not local memory.
    """
    if request.param == "digest":
        backend = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": uuid.uuid4().hex}
    else:
        backend = {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": str(tmp_path)}
    settings.CACHES = {"default": backend}
    return request.param


def _get(client, url):
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200
    return response.content.decode(), len(ctx.captured_queries)


def test_it_serves_a_repeated_anonymous_visit_from_the_cache(client, split_test, alice, make_entry, reported):
    for i in range(30):
        make_entry(split_test, alice, f"s{i}", {"R@10": i / 100})
    url = reverse("leaderboard:dataset", args=["tiny"])
    first, _ = _get(client, url)
    second, queries = _get(client, url)
    assert second == first
    assert queries <= 3  # the dataset, its splits, the reported rows: the key's reads only


def test_it_shows_a_new_score_at_once(client, split_test, alice, make_entry):
    url = reverse("leaderboard:dataset", args=["tiny"])
    make_entry(split_test, alice, "first", {"R@10": 0.3})
    assert "second" not in _get(client, url)[0]
    make_entry(split_test, alice, "second", {"R@10": 0.5})
    assert "second" in _get(client, url)[0]


def test_it_shows_a_curators_edit_at_once(client, split_test, alice, make_entry, reported, tiny_dataset):
    url = reverse("leaderboard:dataset", args=["tiny"])
    make_entry(split_test, alice, "mine", {"R@10": 0.3})
    _get(client, url)
    reported.system = "Renamed by a curator"
    reported.save()
    assert "Renamed by a curator" in _get(client, url)[0]
    tiny_dataset.description = "A description edited in the admin."
    tiny_dataset.save()
    assert "A description edited in the admin." in _get(client, url)[0]


def test_it_keys_the_page_by_its_query_string(client, split_test, alice, make_entry):
    make_entry(split_test, alice, "a", {"R@10": 0.3, "MAP@10": 0.9})
    make_entry(split_test, alice, "b", {"R@10": 0.5, "MAP@10": 0.1})
    url = reverse("leaderboard:dataset", args=["tiny"])
    by_recall, _ = _get(client, url)
    by_map, _ = _get(client, url + "?sort=MAP@10")
    assert by_recall.index(">b<") < by_recall.index(">a<")
    assert by_map.index(">a<") < by_map.index(">b<")


def test_it_never_serves_a_logged_in_user_from_the_cache(client, split_test, alice, bob, make_entry):
    url = reverse("leaderboard:dataset", args=["tiny"])
    make_entry(split_test, bob, "public one", {"R@10": 0.3})
    make_entry(split_test, alice, "alice private", {"R@10": 0.4}, visibility="private")
    assert "alice private" not in _get(client, url)[0]
    client.force_login(alice)
    html, _ = _get(client, url)
    assert "alice private" in html and "Log out" in html
    client.logout()
    assert "alice private" not in _get(client, url)[0]


def test_it_answers_an_unknown_dataset_with_a_404(client, db):
    assert client.get(reverse("leaderboard:dataset", args=["nope"])).status_code == 404


def test_it_shows_a_new_best_entry_on_the_home_page_at_once(client, split_test, alice, make_entry):
    url = reverse("leaderboard:home")
    make_entry(split_test, alice, "first", {"R@10": 0.3})
    html, _ = _get(client, url)
    assert "first" in html
    make_entry(split_test, alice, "better", {"R@10": 0.9})
    html, queries = _get(client, url)
    assert "better" in html
    _, queries = _get(client, url)
    assert queries <= 4


def test_it_serves_the_api_leaderboard_from_the_cache_but_not_to_a_token(client, split_test, alice, bob, make_entry):
    from accounts.models import ApiToken

    make_entry(split_test, bob, "public one", {"R@10": 0.3})
    make_entry(split_test, alice, "alice private", {"R@10": 0.4}, visibility="private")
    url = reverse("api:leaderboard", args=["tiny"])
    first = client.get(url)
    assert first.status_code == 200 and first["Content-Type"] == "application/json"
    with CaptureQueriesContext(connection) as ctx:
        again = client.get(url)
    assert again.json() == first.json() and len(ctx.captured_queries) <= 3
    assert [e["system"] for e in again.json()["entries"]] == ["public one"]
    _token, key = ApiToken.issue(user=alice)
    mine = client.get(url, HTTP_AUTHORIZATION=f"Token {key}").json()
    assert {e["system"] for e in mine["entries"]} == {"public one", "alice private"}
    make_entry(split_test, bob, "new score", {"R@10": 0.9})
    assert client.get(url).json()["entries"][0]["system"] == "new score"


def test_it_restarts_a_lost_generation_past_the_old_ones(cache_kind):
    from django.core.cache import cache

    from catalogue.page_generation import GENERATION_KEY, page_generation, page_generation_bump

    first = page_generation()
    page_generation_bump()
    assert page_generation() == first + 1
    cache.delete(GENERATION_KEY)  # Redis flushed or the key evicted
    page_generation_bump()
    assert page_generation() >= first + 1


def test_it_serves_the_cached_page_gzip_compressed_to_clients_that_accept_it(client, split_test, alice, make_entry):
    import gzip

    make_entry(split_test, alice, "mine", {"R@10": 0.3})
    url = reverse("leaderboard:dataset", args=["tiny"])
    plain, _ = _get(client, url)
    response = client.get(url, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert response["Content-Encoding"] == "gzip" and "Accept-Encoding" in response["Vary"]
    assert gzip.decompress(response.content).decode() == plain
    assert "Content-Encoding" not in client.get(url)


def test_the_redis_cache_backend_reuses_one_client_and_still_works():
    import redis

    from lexboard.redis_cache import RedisCache

    try:
        redis.Redis.from_url("redis://127.0.0.1:6379/15", socket_timeout=1).ping()
    except redis.RedisError:
        pytest.skip("no Redis on 127.0.0.1:6379")
    backend = RedisCache("redis://127.0.0.1:6379/15", {"KEY_PREFIX": f"test-redis-cache-{uuid.uuid4().hex[:8]}"})
    backend.set("k", {"a": 1}, 30)
    assert backend.get("k") == {"a": 1}
    assert backend.add("n", 1, 30) and backend.incr("n") == 2
    assert backend._cache.get_client() is backend._cache.get_client(write=True)
    backend.delete_many(["k", "n"])


def test_it_bumps_the_generation_again_when_the_transaction_commits(cache_kind, db, django_capture_on_commit_callbacks):
    from django.db import transaction

    from catalogue.page_generation import page_generation, page_generation_bump

    first = page_generation()
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            page_generation_bump()
            assert page_generation() == first + 1  # at once: new renders start on the new generation
    assert page_generation() == first + 2  # and after the commit: a render in between is stale too


class _SlowPage:
    """A page view that counts its renders and, when asked, blocks inside the render until released."""

    def __init__(self):
        import threading

        self.renders = 0
        self.tag = "digest-1"  # what the per-process cache's key function reads
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def view(self, request):
        from django.http import HttpResponse

        self.renders += 1
        version = self.renders
        self.entered.set()
        assert self.release.wait(10)
        return HttpResponse(f"render {version}")


def _serve(slow: _SlowPage):
    from django.contrib.auth.models import AnonymousUser
    from django.test import RequestFactory

    from leaderboard.page_cache import anonymous_page_cache

    cached_view = anonymous_page_cache(lambda request: slow.tag)(slow.view)

    def get():
        request = RequestFactory().get("/slow/")
        request.user = AnonymousUser()
        return cached_view(request).content.decode()

    return get


def _stale(slow: _SlowPage) -> None:
    """A score lands: the page generation moves (shared cache) and the rows' digest changes (per-process)."""
    from catalogue.page_generation import page_generation_bump

    page_generation_bump()
    slow.tag = "digest-2"


def test_a_stale_page_is_rendered_once_while_a_concurrent_request_gets_the_previous_one(cache_kind):
    import threading

    slow = _SlowPage()
    get = _serve(slow)
    assert get() == "render 1"
    _stale(slow)
    slow.release.clear()
    slow.entered.clear()
    first: list[str] = []
    renderer = threading.Thread(target=lambda: first.append(get()))
    renderer.start()
    assert slow.entered.wait(10)  # the first request is rendering the new page

    assert get() == "render 1"  # the second gets the previous page and renders nothing

    slow.release.set()
    renderer.join(10)
    assert first == ["render 2"] and slow.renders == 2
    assert get() == "render 2"  # the new page, from the cache
    assert slow.renders == 2


def test_concurrent_requests_on_a_cold_cache_wait_for_the_one_render(cache_kind):
    import threading

    slow = _SlowPage()
    get = _serve(slow)
    slow.release.clear()
    answers: list[str] = []
    threads = [threading.Thread(target=lambda: answers.append(get())) for _ in range(2)]
    threads[0].start()
    assert slow.entered.wait(10)
    threads[1].start()  # finds the render lock taken and no previous page: waits for the render
    threads[1].join(0.3)  # (give it the time to get there; without the lock it would be rendering now)
    slow.release.set()
    for t in threads:
        t.join(10)

    assert answers == ["render 1", "render 1"] and slow.renders == 1


def test_a_request_alone_after_a_score_gets_the_new_page_at_once(cache_kind):
    slow = _SlowPage()
    get = _serve(slow)
    assert get() == "render 1"
    _stale(slow)
    assert get() == "render 2"  # nobody else rendering: never the stale page


def test_a_page_key_is_short_and_plain_whatever_the_query_string(rf):
    """Fuzzers send long query strings of control bytes: the key stays a valid memcached key (≤ 250, no spaces)."""
    odd = rf.get("/api/v1/datasets/system_name/leaderboard", {"@\x10\x08" * 40: "{'\x9d': -1440}", "sort": "MAP@10"})
    key = page_key(odd)
    assert len(key) <= 250 and key.isascii() and key.isprintable() and " " not in key
    same = rf.get("/api/v1/datasets/system_name/leaderboard", {"sort": "MAP@10", "@\x10\x08" * 40: "{'\x9d': -1440}"})
    assert page_key(same) == key
    assert page_key(rf.get("/api/v1/datasets/system_name/leaderboard", {"sort": "R@10"})) != key


#: A per-process cache is not the web's: there the worker only bumps (the key is a digest of the rows).
SHARED_ONLY = pytest.mark.parametrize("cache_kind", ["generation"], indirect=True)


def _landing(split, user, make_entry, system: str) -> None:
    """A score lands the way the worker stores one: the rows' version moves, the pages' generation not yet."""
    from catalogue.models import Split

    make_entry(split, user, system, {"R@10": 0.9})
    Split.objects.filter(pk=split.pk).update(cache_version=split.cache_version + 100)


@SHARED_ONLY
def test_the_worker_renders_the_busiest_pages_ahead_of_the_first_visitor(client, split_test, alice, make_entry,
                                                                         cache_kind):
    from django.core.cache import cache

    from catalogue.page_generation import page_generation, pages_renew

    urls = [reverse("leaderboard:dataset", args=["tiny"]), reverse("api:leaderboard", args=["tiny"]),
            reverse("leaderboard:home")]
    make_entry(split_test, alice, "before", {"R@10": 0.3})
    for url in urls:
        assert "before" in _get(client, url)[0]
    _landing(split_test, alice, make_entry, "landed")

    pages_renew(split_test.pk)  # what the worker does once the score is committed

    generation = page_generation()
    for url in urls:
        for variant in ("", ":gz"):
            tag, _, _ = cache.get(page_key(RequestFactory().get(url)) + variant)
            assert tag == generation, f"{url}{variant} was not rendered ahead"
        page, queries = _get(client, url)
        assert queries == 0, f"{url} was rendered by the web after the landing"
    assert "landed" in _get(client, urls[0])[0]


@SHARED_ONLY
def test_while_the_worker_renders_ahead_a_visitor_gets_the_previous_page_and_renders_nothing(
    client, split_test, alice, make_entry, cache_kind
):
    from catalogue.page_generation import page_generation_bump
    from leaderboard.page_cache import render_ahead

    url = reverse("leaderboard:dataset", args=["tiny"])
    make_entry(split_test, alice, "before", {"R@10": 0.3})
    assert "landed" not in _get(client, url)[0]
    _landing(split_test, alice, make_entry, "landed")
    seen: list[tuple[str, int]] = []

    def bump_then_visit() -> None:
        page_generation_bump()  # every page is stale now; the worker holds the busiest pages' locks
        seen.append(_get(client, url))

    render_ahead(split_test.pk, bump_then_visit)

    (page, queries), = seen
    assert "landed" not in page and queries == 0  # the previous page, from the cache, no render
    page, queries = _get(client, url)
    assert "landed" in page and queries == 0  # then the worker's page


@SHARED_ONLY
def test_an_unpublished_dataset_is_not_rendered_ahead(client, split_test, alice, make_entry, cache_kind,
                                                      tiny_dataset, caplog):
    from django.core.cache import cache

    from catalogue.page_generation import pages_renew

    tiny_dataset.is_published = False
    tiny_dataset.save()
    _landing(split_test, alice, make_entry, "landed")
    with caplog.at_level("INFO", logger="leaderboard.page_cache"):
        pages_renew(split_test.pk)
    # Not even tried (an anonymous render would answer 404 and store nothing, so the cache alone cannot tell).
    assert [r.getMessage() for r in caplog.records if "ahead" in r.getMessage()] == []
    url = reverse("leaderboard:dataset", args=["tiny"])
    assert cache.get(page_key(RequestFactory().get(url))) is None


def test_a_render_reads_the_boards_per_query_values_once(client, split_test, alice, make_entry, cache_kind):
    """The markers and the power analysis start from the same vectors: one read of the stored results, not two."""
    for i in range(3):
        make_entry(split_test, alice, f"s{i}", {"R@10": i / 10})
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(reverse("leaderboard:dataset", args=["tiny"])).status_code == 200
    reads = [q["sql"] for q in ctx.captured_queries if '"per_query"' in q["sql"]]
    assert len(reads) == 1, reads


@SHARED_ONLY
def test_no_header_makes_the_page_render_instead_of_being_served_from_the_cache(client, split_test, alice, make_entry,
                                                                               cache_kind):
    """The worker's render-ahead marker is an environ key: a header of any spelling is just a header."""
    url = reverse("leaderboard:dataset", args=["tiny"])
    make_entry(split_test, alice, "mine", {"R@10": 0.3})
    _get(client, url)
    for header in ("lexboard.render_ahead", "Lexboard-Render-Ahead", "render_ahead"):
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(url, headers={header: "True"}).status_code == 200
        assert len(ctx.captured_queries) == 0, header  # served from the cache, nothing rendered


@SHARED_ONLY
def test_a_site_url_django_does_not_answer_for_renders_nothing_ahead_and_says_so_once(
    client, split_test, alice, make_entry, cache_kind, settings, caplog, monkeypatch
):
    from django.core.cache import cache

    from catalogue.page_generation import page_generation, pages_renew
    from leaderboard import page_cache

    monkeypatch.setattr(page_cache, "_site_refused", [])
    settings.LEXBOARD_SITE_URL = "https://internal-name.invalid"
    url = reverse("leaderboard:dataset", args=["tiny"])
    make_entry(split_test, alice, "before", {"R@10": 0.3})
    _get(client, url)
    before = page_generation()
    _landing(split_test, alice, make_entry, "landed")
    for _ in range(2):
        pages_renew(split_test.pk)
    assert page_generation() > before  # the pages still move on: the web renders them
    entry = cache.get(page_key(RequestFactory().get(url)))
    assert entry is None or entry[0] != page_generation()
    said = [r for r in caplog.records if "internal-name.invalid" in r.getMessage()]
    assert len(said) == 1 and "LEXBOARD_SITE_URL" in said[0].getMessage()  # once, naming the setting to fix
    assert "landed" in _get(client, url)[0]


@SHARED_ONLY
def test_while_a_shared_task_runs_its_dataset_page_is_not_rendered_ahead(client, split_test, alice, make_entry,
                                                                        cache_kind, caplog):
    """That page carries the task's countdown and is never stored: rendering it would only hold its lock."""
    from datetime import timedelta

    from django.core.cache import cache
    from django.utils import timezone

    from campaigns.models import Phase
    from catalogue.page_generation import page_generation, pages_renew

    now = timezone.now()
    Phase.objects.create(split=split_test, title="Task", opens_at=now - timedelta(days=1),
                         closes_at=now + timedelta(days=1))
    _landing(split_test, alice, make_entry, "landed")
    with caplog.at_level("INFO", logger="leaderboard.page_cache"):
        pages_renew(split_test.pk)
    rendered = [r.getMessage() for r in caplog.records if "ahead" in r.getMessage()]
    assert not [m for m in rendered if "/d/tiny/" in m], rendered
    assert [m for m in rendered if "/api/v1/datasets/tiny/leaderboard" in m], rendered
    generation = page_generation()
    api = cache.get(page_key(RequestFactory().get(reverse("api:leaderboard", args=["tiny"]))))
    assert api is not None and api[0] == generation
    url = reverse("leaderboard:dataset", args=["tiny"])
    assert cache.get(page_key(RequestFactory().get(url)) + ":render") is None  # no lock left behind
    assert cache.get(page_key(RequestFactory().get(url))) is None


def test_a_redelivered_score_task_moves_the_pages_on(split_test, alice, make_entry, cache_kind):
    """The worker that stored the score may have died before the bump; its redelivered task does it."""
    from catalogue.page_generation import page_generation
    from submissions.services import submission_score

    submission = make_entry(split_test, alice, "scored", {"R@10": 0.3})
    before = page_generation()
    submission_score(submission.pk)  # not queued: nothing is scored again
    assert page_generation() > before


@SHARED_ONLY
def test_a_cached_page_is_served_before_the_session_and_the_view_with_the_full_stacks_headers(
    client, split_test, alice, make_entry, cache_kind, monkeypatch
):
    from leaderboard import page_cache

    url = reverse("leaderboard:dataset", args=["tiny"])
    make_entry(split_test, alice, "mine", {"R@10": 0.3})
    client.get(url, headers={"accept-encoding": "gzip"})  # rendered and stored
    reached: list[str] = []
    real = page_cache._cacheable_request
    monkeypatch.setattr(page_cache, "_cacheable_request", lambda request: reached.append(request.path) or real(request))

    fast = client.get(url, headers={"accept-encoding": "gzip"})
    assert fast.status_code == 200 and reached == []  # the view's decorator was not reached
    client.cookies["theme"] = "dark"  # any other cookie: the full stack decides (and serves the same page)
    full = client.get(url, headers={"accept-encoding": "gzip"})
    assert reached == [url]
    assert fast.content == full.content
    ignored = {"Date"}
    assert {k: v for k, v in fast.items() if k not in ignored} == {k: v for k, v in full.items() if k not in ignored}
    assert fast["Vary"] == "Accept-Encoding, Cookie" and fast["X-Frame-Options"] == "DENY"


@SHARED_ONLY
def test_a_visitor_with_a_session_or_messages_is_never_served_by_the_fast_path(client, split_test, alice, bob,
                                                                             make_entry, cache_kind, monkeypatch):
    from django.contrib.messages.storage.cookie import CookieStorage

    from leaderboard import page_cache

    url = reverse("leaderboard:dataset", args=["tiny"])
    make_entry(split_test, alice, "alice's private run", {"R@10": 0.3}, visibility="private")
    anonymous = client.get(url).content.decode()
    assert "alice&#x27;s private run" not in anonymous and "alice's private run" not in anonymous
    client.force_login(alice)  # a session cookie
    assert "private run" in client.get(url).content.decode()  # her own row: not the anonymous page
    client.logout()
    reached: list[str] = []
    real = page_cache._cacheable_request
    monkeypatch.setattr(page_cache, "_cacheable_request", lambda request: reached.append(request.path) or real(request))
    assert client.get(url).status_code == 200 and reached == []  # no cookie: the fast path
    client.cookies[CookieStorage.cookie_name] = "anything"
    assert client.get(url).status_code == 200 and reached == [url]  # a messages cookie: the full stack decides
