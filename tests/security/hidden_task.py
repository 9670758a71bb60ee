"""Fixtures for the leak tests of #24: the shared task of ``tests/campaigns/conftest.py`` (a small hidden split,
9 topics, 4 of them public; two teams whose runs rank differently on the public and the private topics), for the
tests here that use it: ``from .hidden_task import task_world``."""

from __future__ import annotations

from tests.campaigns.conftest import (
    ALICE_RANKS,
    BOB_RANKS,
    PRIVATE,
    PUBLIC,
    QIDS,
    QRELS,
    TaskWorld,
    carol,
    close,
    run_bytes,
    task_world,
    upload,
)

__all__ = ["ALICE_RANKS", "BOB_RANKS", "PRIVATE", "PUBLIC", "QIDS", "QRELS", "TaskWorld", "carol", "close",
           "run_bytes", "task_world", "upload"]
