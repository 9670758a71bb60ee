"""Browser tests: headless Chromium (Playwright) against a real gunicorn and a real Celery worker.

One gunicorn (``DEBUG=0``, static files collected and served by WhiteNoise,
as in production) and one worker process serve the whole session, both on the
test database (``transactional_db``: they must see the rows a test commits),
the session's own queue and the session's private run folder. Each test gets a
fresh browser context (no cookies carried over), 1280×900 and light unless it
asks for something else.

Screenshots go to a folder of the session (``LEXBOARD_SCREENSHOT_DIR`` to
choose it); with ``LEXBOARD_UPDATE_SCREENSHOTS=1`` the canonical ones are also
written to ``docs/screenshots/`` — the README's pictures — so a normal test run
never changes the working tree. See docs/testing.md.

Skipped with a reason when Chromium (``LEXBOARD_CHROMIUM``, default
/usr/bin/chromium) or Playwright for Python is not installed. Playwright's own
browser downloads are never used.
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest

from tests.fixtures_site import LiveSite

BASE_DIR = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("LEXBOARD_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
DOCS_SCREENSHOTS = BASE_DIR / "docs" / "screenshots"
#: The README's pictures stay small enough for a repository.
MAX_SCREENSHOT_BYTES = 300 * 1024
VIEWPORT = {"width": 1280, "height": 900}


# --- The browser ---------------------------------------------------------------------------


def _skip_without_chromium() -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set LEXBOARD_CHROMIUM)")
    pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")


@pytest.fixture(autouse=True)
def _chromium_available():
    """Skip before the server and the worker are started, not after."""
    _skip_without_chromium()


@pytest.fixture(scope="module")
def chromium_browser():
    """Debian's Chromium driven by Playwright, for one test module; skipped when either is missing.

    Playwright's sync API keeps an asyncio loop running in this thread, which
    Django takes for an async context and refuses ORM calls. The tests are
    synchronous and the loop only drives the browser, so Django's escape hatch
    is set while a module's browser is open, and both end with the module:
    the tests after it run with neither.
    """
    _skip_without_chromium()
    from playwright import sync_api

    saved = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            yield browser
            browser.close()
    finally:
        if saved is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = saved


# --- The site: gunicorn and a worker on the test database (tests/fixtures_site.py) ----------------------




@pytest.fixture
def site(live_site, transactional_db, celery_worker_process) -> LiveSite:
    """The running site for one test; the test's rows are committed, so gunicorn and the worker see them."""
    assert celery_worker_process.alive, celery_worker_process.log()[-3000:]
    return live_site


@pytest.fixture
def demo(site):
    """The demo benchmark with its scored baselines (BM25, TF-IDF, random), loaded as ``make run`` does."""
    from django.core.management import call_command

    call_command("load_demo", stdout=io.StringIO())
    from catalogue.models import Dataset

    return Dataset.objects.get(slug="demo")


# --- Pages and screenshots -------------------------------------------------------------------


@pytest.fixture(scope="session")
def screenshot_dir(tmp_path_factory) -> Path:
    chosen = os.environ.get("LEXBOARD_SCREENSHOT_DIR")
    if chosen:
        path = Path(chosen)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("screenshots")


def _shrink(png: bytes) -> bytes:
    """A palette PNG when the full-colour one is over the limit (text pages lose nothing visible)."""
    if len(png) <= MAX_SCREENSHOT_BYTES:
        return png
    try:
        from PIL import Image
    except ImportError:
        return png
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue() if len(out.getvalue()) < len(png) else png


@pytest.fixture
def shoot(screenshot_dir):
    """``shoot(page, "name", canonical=True)``: save a screenshot; canonical ones feed docs/screenshots/."""
    update_docs = os.environ.get("LEXBOARD_UPDATE_SCREENSHOTS") == "1"

    def take(page, name: str, *, canonical: bool = False, full_page: bool = False, keep_focus: bool = False) -> Path:
        if not keep_focus:  # a focus ring left by typing is noise in a picture
            page.evaluate("() => document.activeElement && document.activeElement.blur()")
        png = _shrink(page.screenshot(full_page=full_page, animations="disabled", caret="hide"))
        path = screenshot_dir / f"{name}.png"
        path.write_bytes(png)
        if canonical and update_docs:
            DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, DOCS_SCREENSHOTS / f"{name}.png")
        return path

    return take


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.browser_failed = report.failed
    return report


def new_page(browser, site: LiveSite, **context_options):
    options = {"base_url": site.url, "viewport": VIEWPORT, "color_scheme": "light", **context_options}
    context = browser.new_context(**options)
    page = context.new_page()
    page.set_default_timeout(15_000)
    return context, page


def watch_errors(page) -> None:
    """Collect in ``page.js_errors`` script errors, console errors (CSP refusals among them) and answers ≥ 400 to
    any request of the page."""
    errors: list[str] = []

    def on_console(msg) -> None:
        # Failed loads are reported below with their URLs; CSP refusals and script errors land here.
        if msg.type == "error" and not msg.text.startswith("Failed to load resource"):
            errors.append(msg.text)

    def on_response(response) -> None:
        # Chromium asks for /favicon.ico on pages without <link rel=icon> (plain-text exports).
        if response.status >= 400 and not response.url.endswith("/favicon.ico"):
            errors.append(f"{response.status} {response.url}")

    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", on_console)
    page.on("response", on_response)
    page.js_errors = errors


@pytest.fixture
def browser_page(request, chromium_browser, site, screenshot_dir):
    """A fresh context and page on the site; on failure, a screenshot and the server log are kept.

    ``page.js_errors`` collects script errors, console errors (CSP refusals among them) and
    answers ≥ 400 to any request of the page, for the tests to assert empty where they expect
    a clean run.
    """
    context, page = new_page(chromium_browser, site)
    watch_errors(page)
    yield page
    if getattr(request.node, "browser_failed", False):
        try:
            page.screenshot(path=str(screenshot_dir / f"FAILED-{request.node.name}.png"), full_page=True)
        except Exception:  # the page may be gone; the failure itself is what matters
            pass
        print(f"gunicorn log:\n{site.log()}")
    context.close()


def pages_on(chromium_browser, site):
    """A fixture's body: ``make(**options)`` opens a page on ``site`` with its own options (errors watched); every
    page is closed after the test."""
    contexts = []

    def make(**options):
        context, page = new_page(chromium_browser, site, **options)
        watch_errors(page)
        contexts.append(context)
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def page_factory(chromium_browser, site):
    """More pages with their own options (``page_factory(color_scheme="dark")``); closed after the test."""
    yield from pages_on(chromium_browser, site)

