"""The page generation: a counter in the shared cache that versions every cached page.

Bumped by ``Split.bump_cache_version()`` (each new score, entry change, qrels
publication) and by saves of what the pages show from the curated side
(``leaderboard.page_cache.connect_signals``); the whole-page cache
(:mod:`leaderboard.page_cache`) treats an entry tagged with an older generation as
stale. Here, below the models, so that the models can bump it; the cache of
pages itself lives with the pages.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.core.cache import cache
from django.db import transaction

logger = logging.getLogger(__name__)

GENERATION_KEY = "lexboard:page:generation"

#: Renders a split's busiest pages ahead of the crowd around a bump it is given (leaderboard.page_cache registers it).
RenderAhead = Callable[[int, Callable[[], None]], None]
_render_ahead: RenderAhead | None = None


def page_generation() -> int:
    generation = cache.get(GENERATION_KEY)
    if generation is None:
        cache.add(GENERATION_KEY, time.time_ns() // 1000, None)
        generation = cache.get(GENERATION_KEY, 0)
    return generation


def _bump() -> None:
    try:
        cache.incr(GENERATION_KEY)
    except ValueError:  # missing: start from the clock, past any generation used before
        cache.add(GENERATION_KEY, time.time_ns() // 1000, None)
    except Exception:
        logger.warning("could not bump the page generation; cached pages may lag", exc_info=True)


def page_generation_bump(**_signal_kwargs) -> None:
    """Make every cached page stale (never raises: a cache outage must not fail a save or a score).

    Inside a transaction it bumps now and again once committed: a page
    rendered in between still reads the old rows, and would otherwise stay
    cached under the new generation.
    """
    _bump()
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(_bump)


def register_render_ahead(render_ahead: RenderAhead) -> None:
    """Let the pages' layer render the busiest pages itself when a score lands (the last one registered)."""
    global _render_ahead
    _render_ahead = render_ahead


def pages_renew(split_id: int) -> None:
    """A score has landed on ``split_id`` and is committed: make every cached page stale, the busiest rendered here.

    Called by the worker that stored the score, after its commit (never
    inside a transaction: the render must read the new rows). With the
    pages' render-ahead registered (:func:`leaderboard.page_cache.render_ahead`),
    it takes those pages' render locks, bumps the generation and renders
    them in this process, so the web processes keep serving the previous
    pages meanwhile and render none of them after a landing. Never raises:
    whatever fails, the generation is bumped.
    """
    bumped = False

    def bump() -> None:
        nonlocal bumped
        if not bumped:
            bumped = True
            _bump()

    try:
        if _render_ahead is not None:
            _render_ahead(split_id, bump)
    except Exception:
        logger.warning("could not render the pages of split %s ahead; the web renders them", split_id, exc_info=True)
    bump()
