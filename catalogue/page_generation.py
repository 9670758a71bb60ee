"""The page generation, and THE key of everything the pages cache (:func:`cache_key`).

**The page generation**: a counter in the shared cache that versions every cached page.
Bumped by ``Split.bump_cache_version()`` (each new score, entry change, qrels
publication) and by saves of what the pages show from the curated side
(``leaderboard.page_cache.connect_signals``); the whole-page cache
(:mod:`leaderboard.page_cache`) treats an entry tagged with an older generation as
stale. Here, below the models, so that the models can bump it; the cache of
pages itself lives with the pages.

**The keys**: every page, fragment and value computed for the pages that is
cached is cached under a key built by :func:`cache_key`, of one of the kinds of
:class:`CacheKind` (``tests/architecture/test_cache_keys.py`` fails on a key
built anywhere else). Here, in the lowest Django app, so that every layer that
caches (catalogue, submissions' disclosure, the leaderboards, the participants'
pages) may import it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any, NewType, Protocol

from django.core.cache import cache
from django.db import transaction

logger = logging.getLogger(__name__)


# --- the keys of the pages' cache -------------------------------------------------------------------


class CacheKind(StrEnum):
    """Every kind of thing the pages cache, as its key's name and format version.

    Change a kind's version when what is cached under it changes shape (an entry cached before would otherwise be
    read as the new shape). The kinds of :data:`SPLIT_KINDS` are computed from one split's entries and judgments.
    """

    #: The page generation's counter itself (the tag of every whole page, not a part of its key: a page stored
    #: under an older generation stays readable, and is served while its new render is under way).
    GENERATION = "page:generation"
    #: A whole anonymous page (``leaderboard.page_cache``): its path and query digest; variants gzip and lock.
    PAGE = "page:v6"
    #: The tags of whole pages when the cache is per-process (``leaderboard.selectors``): a digest of the rows shown.
    DATASET_PAGE_TAG = "page:v1:dataset"
    API_LEADERBOARD_TAG = "page:v1:api-leaderboard"
    HOME_PAGE_TAG = "page:v1:home"
    #: A board's scored public rows (``leaderboard.selectors.leaderboard_rows``).
    LEADERBOARD_ROWS = "lb:v5"
    #: Significance markers and tiers on one measure (``leaderboard.significance``); v5: one Bonferroni family.
    SIGNIFICANCE = "sig:v5"
    #: A sign-flip p-value, named by what it is a function of: the differences, the flips, the seed.
    P_VALUE = "sigp:v1"
    #: The power analysis of a board (``leaderboard.significance.leaderboard_power``).
    POWER = "power:v4"
    #: A shared task's private board rescored on newer judgments (``leaderboard.private_board``).
    PRIVATE_BOARD = "private-board:v3"
    #: A run's analysis page but its per-query rows (``participants.analysis``); v7: charts in percent.
    ANALYSIS = "analysis:v7"
    #: A hidden split's grid step and released scope (``submissions.disclosure``).
    DISCLOSURE_STEP = "disclosure-step:v2"
    DISCLOSURE_N = "disclosure-n:v2"
    #: A run's top-k documents per query (``participants.compare``): named by the run file's sha256.
    TOP_K = "topk:v1"
    #: The size and sha256 of a file a dataset page offers (``leaderboard.downloads``): named by a digest of what
    #: the file is made of (the split's version, the judgments' or the baseline run's sha256).
    DATASET_FILE = "dataset-file:v1"


#: The kinds computed from one split's entries and judgments: their key holds the split's version.
SPLIT_KINDS = frozenset({
    CacheKind.LEADERBOARD_ROWS, CacheKind.SIGNIFICANCE, CacheKind.POWER, CacheKind.PRIVATE_BOARD,
    CacheKind.ANALYSIS, CacheKind.DISCLOSURE_STEP, CacheKind.DISCLOSURE_N,
})


class Variant(StrEnum):
    """A second entry beside a key's own: a whole page's compressed copy, its render lock."""

    GZIP = "gz"
    RENDER_LOCK = "render"


#: A key :func:`cache_key` built (the one type a cache call of the pages takes: tests/architecture/test_cache_keys.py).
CacheKey = NewType("CacheKey", str)


class SplitVersion(Protocol):
    """What a split-derived key reads of a split (``catalogue.models.Split``: the models import this module)."""

    @property
    def pk(self) -> Any: ...

    @property
    def cache_version(self) -> int: ...

    @property
    def current_qrels_id(self) -> int | None: ...

    @property
    def hidden(self) -> bool: ...


def cache_key(kind: CacheKind, *parts: object, split: SplitVersion | None = None,
              variant: Variant | None = None) -> CacheKey:
    """THE cache key of a page, a fragment of one, or a value computed for the pages.

    ``lexboard:<kind>[:<split's version>][:<part>…][:<variant>]``. A kind of :data:`SPLIT_KINDS` takes its
    ``split`` (and no other kind does): the split's id, ``cache_version`` (bumped by every new score, entry
    change and qrels publication), current qrels and hidden flag make a stale value unreachable. ``parts`` add
    what else the value depends on (a measure, a result, a digest of the rows shown). A whole page is not keyed
    by the page generation: its entry is tagged with it (:func:`page_generation`, read with the page in one
    round trip), so that the previous page can be served while the new one renders.

    Not built here, because they are not caches of what a page shows: the rescoring's deduplication marks
    (``submissions/services/queue.py``, ``submissions/services/rescoring.py``) and the rate limits' counters
    (``submissions/throttling.py``, allauth's), which ``lexboard.shared_counters_cache`` routes by their
    ``lexboard:rl:`` prefix.
    """
    if (kind in SPLIT_KINDS) != (split is not None):
        raise ValueError(f"a key of kind {kind.name} takes a split" if split is None
                         else f"a key of kind {kind.name} takes no split")
    key = f"lexboard:{kind.value}"
    if split is not None:
        key += f":{split.pk}:{split.cache_version}:{split.current_qrels_id}:{int(split.hidden)}"
    key += "".join(f":{part}" for part in parts)
    if variant is not None:
        key += f":{variant.value}"
    return CacheKey(key)


# --- the page generation ------------------------------------------------------------------------------

GENERATION_KEY = cache_key(CacheKind.GENERATION)

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
