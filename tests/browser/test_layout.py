"""Every main page at a phone's width (390 px) and a laptop's (1366 px): no horizontal page overflow.

Tables scroll inside their own box; the leaderboard keeps a score column in
view on the phone; row actions look like buttons. A screenshot of each page at
each width is saved (``layout-<page>-<width>.png``, docs/testing.md).
"""

from __future__ import annotations

import pytest

from .test_participant import PASSWORD, log_in
from .test_visitor import add_fused_entries

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.slow]

WIDTHS = (390, 1366)


def _pages(demo, user) -> dict[str, str]:
    from submissions.models import Submission

    mine = list(Submission.objects.filter(user=user).order_by("pk").values_list("pk", flat=True))
    first = Submission.objects.get(pk=mine[0])
    baseline = Submission.objects.filter(split=first.split, is_baseline=True).order_by("pk").first()
    return {
        "home": "/",
        "benchmark": f"/b/{demo.benchmark.slug}/",
        "leaderboard": f"/d/{demo.slug}/",
        "leaderboard-filtered": f"/d/{demo.slug}/?family=hybrid&best=1",
        "docs": "/docs/metrics/",
        "api-docs": "/api/v1/docs/",
        "submission": f"/submissions/{mine[0]}/",
        "compare": f"/submissions/compare/?ids={mine[0]},{baseline.pk}",
        "mine": "/submissions/mine/",
        "upload": f"/submissions/new/{demo.slug}/",
        "profile": "/accounts/profile/",
    }


def _overflow(page) -> tuple[int, int]:
    return page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")


def test_every_main_page_fits_a_phone_and_a_laptop(demo, page_factory, django_user_model, shoot):
    add_fused_entries(demo)
    user = django_user_model.objects.get(username="marie")
    user.set_password(PASSWORD)
    user.save()
    pages = _pages(demo, user)
    too_wide = []
    for width in WIDTHS:
        mobile = width < 600
        page = page_factory(viewport={"width": width, "height": 844 if mobile else 900}, is_mobile=mobile,
                            has_touch=mobile)
        log_in(page, "marie")
        for name, url in pages.items():
            response = page.goto(url)
            assert response.status < 400, f"{name}: {url} answered {response.status}"
            scroll_width, inner_width = _overflow(page)
            if scroll_width > inner_width:
                too_wide.append(f"{name} at {width}: {scroll_width} px > {inner_width} px")
            shoot(page, f"layout-{name}-{width}", full_page=True)
    assert not too_wide, "pages wider than the window:\n" + "\n".join(too_wide)


def test_the_leaderboard_shows_a_score_on_a_phone(demo, page_factory, shoot):
    page = page_factory(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page.goto(f"/d/{demo.slug}/")
    box = page.locator("table.lb tbody tr").first.locator("td.primary").bounding_box()
    assert box is not None and box["x"] + box["width"] <= 390, f"the primary score is off screen: {box}"
    page.locator("table.lb").scroll_into_view_if_needed()
    shoot(page, "leaderboard-phone-score")
    page.locator("svg.plot-progress").scroll_into_view_if_needed()
    shoot(page, "leaderboard-phone-progress")


def test_row_actions_look_like_buttons(demo, page_factory, django_user_model):
    add_fused_entries(demo)
    user = django_user_model.objects.get(username="marie")
    user.set_password(PASSWORD)
    user.save()
    page = page_factory()
    log_in(page, "marie")
    page.goto("/submissions/mine/")
    for label in ("Make private", "Withdraw"):
        button = page.get_by_role("button", name=label).first
        border = button.evaluate("b => getComputedStyle(b).borderTopWidth")
        assert border != "0px", f"{label} has no border: it reads as text, not a button"


def test_the_progress_chart_and_filters_work_in_a_browser(demo, browser_page, shoot):
    add_fused_entries(demo)
    page = browser_page
    page.goto(f"/d/{demo.slug}/")
    assert page.locator("svg.plot-progress").count() == 1
    page.locator(".lb-filters summary").click()
    page.get_by_label("hybrid").check()
    page.get_by_label("best entry per participant").check()
    page.get_by_role("button", name="Apply filters").click()
    page.wait_for_url("**family=hybrid**")
    systems = page.locator("table.lb tbody td.system > :first-child").all_inner_texts()
    assert len(systems) == 2, systems  # two participants' hybrid entries (marie's and jules's), one each
    assert "family=hybrid" in page.locator(".exports a").first.get_attribute("href")
    shoot(page, "leaderboard-filtered")
    assert not page.js_errors, page.js_errors
