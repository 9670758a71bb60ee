"""Statistical power on the dataset page: from the scored public entries (a hidden split: its baselines), cached."""

from __future__ import annotations

import numpy as np

from evaluation.power import power_analysis
from leaderboard.significance import leaderboard_power
from submissions.selectors import load_per_query


def test_the_dataset_page_shows_the_minimum_detectable_difference_and_topics_needed(client, scored, alice, bob,
                                                                                     analysis_dataset):
    runs = [scored("dev", alice, "perfect"), scored("dev", bob, "random", seed=1), scored("dev", bob, "shifted")]
    split = analysis_dataset.splits.get(name="dev")
    vectors = [load_per_query(run.results.get())["R@10"] for run in runs]
    expected = power_analysis(np.stack(vectors))

    analysis = leaderboard_power(split=split)

    assert analysis.n_systems == 3 and analysis.n_topics == len(vectors[0])
    assert analysis.min_detectable == expected.min_detectable
    assert analysis.topics_needed == expected.topics_needed
    html = client.get(analysis_dataset.get_absolute_url() + "?split=dev").content.decode()
    assert f"the smallest difference in R@10 a paired test detects at α = 0.05 with power 0.8 is <strong>" \
           f"{100 * expected.min_detectable:.2f} points</strong>" in html
    n1, n2 = expected.topics_needed[0.01], expected.topics_needed[0.02]
    assert f"Detecting 1 point needs <strong>{n1:,}</strong> topics, 2 points needs " \
           f"<strong>{n2:,}</strong> topics" in html
    assert "Topic set size design" in html and "Sakai" in html


def test_power_is_cached_per_split_version_and_recomputed_after_a_new_score(
        scored, alice, bob, analysis_dataset, django_assert_max_num_queries):
    scored("dev", alice, "perfect")
    scored("dev", bob, "random", seed=2)
    split = analysis_dataset.splits.get(name="dev")
    first = leaderboard_power(split=split)
    with django_assert_max_num_queries(0):
        assert leaderboard_power(split=split) == first
    scored("dev", bob, "shifted")
    split.refresh_from_db()
    assert leaderboard_power(split=split).n_systems == 3


def test_a_split_with_one_scored_entry_shows_no_power(client, scored, alice, analysis_dataset):
    scored("dev", alice, "perfect")
    assert leaderboard_power(split=analysis_dataset.splits.get(name="dev")) is None
    assert "Statistical power" not in client.get(analysis_dataset.get_absolute_url() + "?split=dev").content.decode()


def test_private_entries_do_not_count(scored, alice, bob, analysis_dataset):
    scored("dev", alice, "perfect")
    scored("dev", bob, "random", seed=1, visibility="private")
    assert leaderboard_power(split=analysis_dataset.splits.get(name="dev")) is None


def test_a_hidden_split_shows_coarser_figures_from_its_baselines(client, scored, alice, bob, analysis_dataset):
    from submissions import disclosure

    scored("test", alice, "perfect", is_baseline=True, name="base-perfect")
    scored("test", bob, "random", seed=2, is_baseline=True, name="base-random")
    split = analysis_dataset.splits.get(name="test")
    analysis = leaderboard_power(split=split)
    assert analysis.n_systems == 2

    html = client.get(analysis_dataset.get_absolute_url() + "?split=test").content.decode()

    step = disclosure.grid_step(split)
    shown = max(step, disclosure.on_grid(analysis.min_detectable, step))
    # Printed on the grid as every value of the split (#38: "8.00 points" on a 1-point grid).
    text = disclosure.format_released(shown, split=split)
    assert "." not in text and f"is <strong>{text} point" in html and "2 baselines" in html
    n1 = analysis.topics_needed[0.01]
    scale = 10 ** max(len(str(n1)) - 2, 0)
    assert f"Detecting 1 point needs <strong>{int(round(n1 / scale) * scale):,}</strong> topics" in html


def test_a_hidden_split_with_fewer_than_two_baselines_shows_no_power(client, scored, alice, bob, analysis_dataset):
    scored("test", alice, "perfect")
    scored("test", bob, "random", seed=2)
    assert leaderboard_power(split=analysis_dataset.splits.get(name="test")) is None
