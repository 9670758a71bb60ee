"""The dark-mode toggle: it follows prefers-color-scheme until the visitor chooses, and the choice persists."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api").expect

DARK_BG = "rgb(15, 20, 25)"
LIGHT_BG = "rgb(255, 255, 255)"


def _background(page) -> str:
    return page.evaluate("() => getComputedStyle(document.body).backgroundColor")


def test_the_toggle_switches_to_dark_and_the_choice_persists(browser_page, shoot):
    page = browser_page  # a light system scheme
    page.goto("/")
    toggle = page.locator("#theme-toggle")
    expect(toggle).to_be_visible()
    expect(toggle).to_have_attribute("aria-pressed", "false")
    assert _background(page) == LIGHT_BG
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true")
    assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
    assert _background(page) == DARK_BG
    page.goto("/docs/metrics/")  # another page: the stored choice applies
    assert _background(page) == DARK_BG
    expect(page.locator("#theme-toggle")).to_have_attribute("aria-pressed", "true")
    shoot(page, "theme-toggled-dark")
    page.locator("#theme-toggle").click()
    assert _background(page) == LIGHT_BG
    page.reload()
    assert _background(page) == LIGHT_BG
    assert page.js_errors == []


def test_without_a_choice_it_follows_the_system_scheme(page_factory):
    page = page_factory(color_scheme="dark")
    page.goto("/")
    assert page.evaluate("() => document.documentElement.dataset.theme") is None
    assert _background(page) == DARK_BG
    expect(page.locator("#theme-toggle")).to_have_attribute("aria-pressed", "true")
    page.locator("#theme-toggle").click()  # a visitor on a dark system who wants light
    assert _background(page) == LIGHT_BG
    assert page.js_errors == []
