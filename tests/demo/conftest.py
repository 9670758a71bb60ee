"""Fixtures of the demo tests: the generated benchmark and its runs, built once per module."""

from __future__ import annotations

import pytest

#: Shallow runs keep the tests quick; the measures stop at 100 anyway.
TEST_DEPTH = 100


@pytest.fixture(scope="module")
def demo_data():
    from demo.generator import generate

    return generate()


@pytest.fixture(scope="module")
def demo_runs(demo_data):
    from demo.baselines import baseline_runs

    return baseline_runs(demo_data, depth=TEST_DEPTH)


@pytest.fixture
def private_storage(settings, tmp_path):
    """Run files of the baselines go to a temporary folder, not the checkout's var/."""
    storages = dict(settings.STORAGES)
    storages["private"] = {**storages["private"], "OPTIONS": {"location": str(tmp_path / "private"), "base_url": None}}
    settings.STORAGES = storages
    return tmp_path / "private"
