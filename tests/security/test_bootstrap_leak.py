"""The bootstrap intervals of a crafted run name relevant documents, with one released submission.

The submission page of a released run on a hidden split showed, for every
measure, its mean and a 95% percentile bootstrap interval, and said how they
are computed: 10,000 resamples, seed 0. With the seed known, the attacker
recomputes the interval of any candidate vector of per-query values exactly,
so the two endpoints are two more equations on the run's values, and they
tell apart vectors that have the same rounded mean.

The crafted run (first submission of a fresh account, so the Ladder compares
it with an empty run and releases it):

* five *anchor* topics: the attacker's good ranking, with its ranks 4 to 10
  replaced by documents outside the corpus (they count as non-relevant). On
  R@100 they score well, which gets the run released; on MRR@10 each is 0,
  1, 1/2 or 1/3;
* seven *probe* topics: one guessed document each, at rank r = 4, …, 10
  behind r − 1 documents outside the corpus, so the topic's MRR@10 is 1/r if
  the guess is relevant and 0 otherwise — values no anchor can take;
* the other eight topics: *pads*, the good ranking behind ten documents
  outside the corpus, so their MRR@10 is 0 (as known to the attacker as a
  topic holding one document outside the corpus, the first version of this
  attack), while their R@100 keeps the good run's credit.

The Ladder's noisy margin releases a first run only when it improves on an
empty run on clearly more topics than eight (net + Laplace noise ≥ 8): the
anchors and pads score on thirteen topics, the relevant probes on three more,
so the run is released (net 16 of 20) and its MRR@10 is the same unknown
as before: five anchors and seven probes, every other topic 0.

The mean of MRR@10 alone fits several assignments (its rounded sum); the
interval's endpoints leave one, which says for each probe whether its
document is relevant. Here the attacker's guesses for three of the probes
happen to be relevant (the test picks them so that both answers are read).
"""

from __future__ import annotations

import itertools
import re
from html import unescape

import numpy as np
import pytest

from catalogue.models import format_percent
from evaluation.stats import bootstrap_ci

from .conftest import Secret, submit

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ANCHOR_VALUES = (0.0, 1.0, 1 / 2, 1 / 3)  # MRR@10 of an anchor: first relevant document at rank 1, 2, 3 or none
PROBE_RANKS = tuple(range(4, 11))


def _outside(q: str, n: int, start: int = 0) -> list[str]:
    return [f"x{q}n{i}" for i in range(start, start + n)]  # not in the corpus: non-relevant, with a warning


def _crafted(secret: Secret) -> tuple[bytes, list[str], dict[str, tuple[str, int]]]:
    topics = sorted(secret.run)
    anchors = topics[:5]
    probes: dict[str, tuple[str, int]] = {}
    for i, (q, rank) in enumerate(zip(topics[5:12], PROBE_RANKS, strict=True)):
        relevant = sorted(secret.relevant[q])
        wrong = next(d for d in secret.run[q] if d not in secret.relevant[q])
        probes[q] = (relevant[0] if i in (0, 3, 5) else wrong, rank)
    rankings: dict[str, list[str]] = {}
    for q in anchors:
        rankings[q] = secret.run[q][:3] + _outside(q, 7) + secret.run[q][3:90]
    for q, (doc, rank) in probes.items():
        rankings[q] = _outside(q, rank - 1) + [doc]
    for q in topics[12:]:  # pads: 0 on MRR@10 (nothing relevant in the top 10), the good run's R@100
        rankings[q] = _outside(q, 10) + secret.run[q][:90]
    lines = [f"{q} Q0 {d} {i + 1} {1000 - i}.0 crafted" for q, docs in rankings.items() for i, d in enumerate(docs)]
    return ("\n".join(lines) + "\n").encode(), anchors, probes


def _interval(page: str, measure: str) -> tuple[str, str, str] | None:
    """(mean, low, high) of ``measure`` as the page prints them (percent), or None when it shows no interval."""
    match = re.search(rf'<th scope="row">{re.escape(measure)}</th><td class="num">([^<]+)</td>'
                      rf'<td class="num">\[([^,\]]+), ([^\]]+)\]</td>', unescape(page))
    return (match.group(1), match.group(2), match.group(3)) if match else None


def _decode(shown: tuple[str, str, str], topics: list[str], anchors: list[str],
            probes: dict[str, tuple[str, int]]) -> dict[str, set[int]]:
    """For each probe, the outcomes (1 relevant, 0 not) of every assignment that reproduces the page's numbers."""
    position = {q: i for i, q in enumerate(topics)}
    probe_values = np.array([1 / rank for _, rank in probes.values()])
    outcomes: dict[str, set[int]] = {q: set() for q in probes}
    for a in itertools.product(ANCHOR_VALUES, repeat=len(anchors)):
        for bits in itertools.product((0, 1), repeat=len(probes)):
            x = np.zeros(len(topics))
            x[[position[q] for q in anchors]] = a
            x[[position[q] for q in probes]] = probe_values * np.array(bits)
            if format_percent(float(x.mean())) != shown[0]:
                continue
            low, high = bootstrap_ci(x)  # the page's own computation: 10,000 resamples, seed 0
            if (format_percent(low), format_percent(high)) == shown[1:]:
                for q, bit in zip(probes, bits, strict=True):
                    outcomes[q].add(bit)
    return outcomes


def test_the_bootstrap_intervals_of_a_crafted_run_name_no_relevant_document(secret, person):
    mallory = person("mallory")
    content, anchors, probes = _crafted(secret)
    submission_id, answer = submit(mallory, secret, content, system_name="crafted", visibility="private")
    assert submission_id is not None and answer["status"] == "scored", answer
    assert answer["released"] is True, answer  # a first run that scores on enough topics: the Ladder releases it
    page = mallory.get(f"/submissions/{submission_id}/").body
    shown = _interval(page, "MRR@10")
    learnt: dict[str, bool] = {}
    if shown is not None:
        outcomes = _decode(shown, sorted(secret.run), anchors, probes)
        learnt = {q: bool(next(iter(found))) for q, found in outcomes.items() if len(found) == 1}
    right = {q: v for q, v in learnt.items() if v == (probes[q][0] in secret.relevant[q])}
    recovered = sorted(probes[q][0] + "@" + q for q, v in right.items() if v)
    assert not right, (f"one released run's bootstrap interval told whether {len(right)} of {len(probes)} guessed "
                       f"documents are relevant ({len(learnt) - len(right)} wrong): relevant {recovered}")
