"""A large category of a crafted run is one query: its mean names a relevant document.

The submission page of a released run on a hidden split showed the means of
every category of at least ``category_min_queries`` (here 10) evaluated
queries: a mean over ten queries was taken to be safe. But the attacker
decides what nine of them score. The crafted run (first submission of a
fresh account):

* the ten topics of the category "work": the attacker's good ranking
  (anchors);
* one topic of the category "family": the good ranking — the probe;
* the nine other "family" topics: *pads*, the good ranking behind ten
  documents outside the corpus, 0 on MRR@10 (nothing in the top 10 is
  relevant) but the good run's R@100.

The run scores on every topic's R@100 (the Ladder's measure), so the Ladder's
noisy margin releases it against an empty run (net 20 of 20 topics, where a
first run needs net + Laplace noise ≥ 8: the five anchors of this attack's
first version no longer pass). The family mean of MRR@10 is then the probe's
MRR@10 / 10: ten times it is 1 / the rank of its first relevant document. The
Ladder guards the mean over the split (a sum over the anchors, the pads and
the probe); the category mean has no anchor in it.
"""

from __future__ import annotations

import re
from html import unescape

import pytest

from .conftest import Secret, submit

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _category(topic_index: int) -> str:
    return "family" if topic_index % 2 else "work"  # as conftest._build_secret sets them


def _crafted(secret: Secret) -> tuple[bytes, str]:
    topics = sorted(secret.run)
    work = [q for i, q in enumerate(topics) if _category(i) == "work"]
    family = [q for i, q in enumerate(topics) if _category(i) == "family"]
    anchors, probe = work, family[0]
    rankings = {q: secret.run[q] for q in anchors + [probe]}
    # Pads: ten documents outside the corpus first (0 on MRR@10), then the good run (its R@100).
    rankings.update({q: [f"x{q}n{i}" for i in range(10)] + secret.run[q][:90] for q in family[1:]})
    lines = [f"{q} Q0 {d} {i + 1} {1000 - i}.0 crafted" for q, docs in rankings.items() for i, d in enumerate(docs)]
    return ("\n".join(lines) + "\n").encode(), probe


def _category_means(page: str) -> dict[str, dict[str, float]]:
    """{category: {measure: mean as a fraction}} from the page's "By category" table (empty when not shown)."""
    section = re.search(r"By category.*?</table>", page, flags=re.S)
    if not section:
        return {}
    head = re.search(r"<thead>(.*?)</thead>", section.group(0), flags=re.S)
    measures = [unescape(m) for m in re.findall(r'<th scope="col" class="num">([^<]+)</th>', head.group(1))][1:]
    out = {}
    for label, cells in re.findall(r'<tr><th scope="row">([^<]+)</th><td class="num">\d+</td>(.*?)</tr>',
                                   section.group(0), flags=re.S):
        values = [float(v) / 100 for v in re.findall(r'<td class="num">([\d.]+)</td>', cells)]
        out[unescape(label)] = dict(zip(measures, values, strict=False))
    return out


def test_a_category_of_a_crafted_run_names_no_relevant_document(secret, person):
    mallory = person("mallory")
    content, probe = _crafted(secret)
    submission_id, answer = submit(mallory, secret, content, system_name="crafted", visibility="private")
    assert submission_id is not None and answer["status"] == "scored", answer
    assert answer["released"] is True, answer  # every topic scores: the Ladder releases a first run
    page = mallory.get(f"/submissions/{submission_id}/").body
    found = set()
    mrr = _category_means(page).get("family", {}).get("MRR@10")
    if mrr:
        rank = round(1 / (10 * mrr))
        if 1 <= rank <= 10 and abs(1 / rank - 10 * mrr) < 1e-3:
            found.add(secret.run[probe][rank - 1])
    recovered = found & secret.relevant[probe]
    assert not recovered, (f"the family mean of one released run named {len(recovered)} relevant document of {probe}: "
                           f"{sorted(recovered)} ({len(found - recovered)} wrong guesses)")
