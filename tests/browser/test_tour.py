"""A tour of every kind of page in a real browser: no script error, no refusal by the strict
Content-Security-Policy, no failed request, and the basic landmarks and labels.

Header checks (tests/ops) see the policy; only a browser sees what it refuses — an inline
style attribute in an SVG plot, an inline script, a stylesheet from another origin.
"""

from __future__ import annotations

import pytest

from tests.users import participant

from .helpers import accessibility_problems

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.slow]

PASSWORD = "a long pass phrase for the tests"


def test_every_kind_of_page_loads_cleanly_in_the_browser(demo, browser_page, django_user_model, shoot):
    from submissions.models import Submission

    from .test_visitor import add_fused_entries

    add_fused_entries(demo)
    participant("tourist", PASSWORD)
    test_entries = list(
        Submission.objects.filter(split__dataset=demo, split__name="test", status="scored").values_list("pk", flat=True)
    )
    dev_entry = Submission.objects.filter(split__dataset=demo, split__name="dev", status="scored").first()
    page = browser_page

    public = [
        ("/", "home"),
        (f"/b/{demo.benchmark.slug}/", "benchmark"),
        (f"/d/{demo.slug}/", "dataset-test"),
        (f"/d/{demo.slug}/?split=dev", "dataset-dev"),
        (f"/submissions/{dev_entry.pk}/", "submission-dev"),  # per-query analyses and plots
        (f"/submissions/{test_entries[0]}/", "submission-test"),
        (f"/submissions/compare/?ids={test_entries[0]}&ids={test_entries[1]}", "compare"),
        ("/docs/metrics/", "docs-metrics"),
        ("/api/v1/docs/", "api-docs"),
        ("/accounts/login/", "login"),
        ("/accounts/signup/", "signup"),
        ("/accounts/password/reset/", "password-reset"),
    ]
    private = [
        ("/accounts/profile/", "profile"),
        ("/submissions/mine/", "mine"),
        (f"/submissions/new/{demo.slug}/?split=test", "upload"),
        (f"/submissions/fusion/?split={dev_entry.split_id}", "fusion"),
    ]
    problems: dict[str, list[str]] = {}

    def visit(url: str, name: str, *, status: int = 200) -> None:
        page.js_errors.clear()
        response = page.goto(url)
        found = [f"HTTP {response.status}"] if response.status != status else []
        own = f"{response.status} {response.url}"  # the 404 page's own answer is the point, not a problem
        found += [e for e in page.js_errors if e != own] + accessibility_problems(page)
        if found:
            problems[url] = found
        shoot(page, f"tour-{name}", full_page=True)

    for url, name in public:
        visit(url, name)
    visit("/no/such/page/", "404", status=404)
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("tourist")
    page.get_by_label("Password").fill(PASSWORD)
    page.locator("main form button[type=submit]").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    for url, name in private:
        visit(url, name)

    assert problems == {}, "\n".join(f"{url}: {found}" for url, found in problems.items())
