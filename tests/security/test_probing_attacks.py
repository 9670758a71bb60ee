"""The two probing attacks on a hidden split, run against the live site: nothing may be recovered.

* The single-query attack: upload a run holding one query only and read
  everything its owner is shown — the page (recall curve points, histogram,
  bucket table, judged@10), the status JSON, the API's means — to find which
  of its documents are relevant.
* Differencing: a run over the split without one query, then the same run
  with that query added; the difference of the two answers is that query's
  values.

The attacker's reading is spelled out (``recall_curve``, ``steps``, MRR@10 ×
queries = 1 / first relevant rank), and each test asserts it finds no
relevant document and learns no per-query fact. Both failed before
the budget of docs/security.md was enforced (4 of 4 relevant documents
recovered, with one and two submissions); they pass with no per-query view
and the Ladder on hidden splits.
"""

from __future__ import annotations

import re

import pytest

from .conftest import Http, Secret, evaluated_queries, recall_curve, steps, submit

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

#: 0.5 px of the plot's 252 px height: far below one relevant document's step (1 / (4 × 20) = 3 px at least).
STEP = 0.5 / 252


def _target(secret: Secret) -> str:
    """The query with the most relevant documents (the attacker picks one; the test knows its answer)."""
    return max(sorted(secret.relevant), key=lambda q: len(secret.relevant[q]))


def _n_queries(client: Http, secret: Secret, page: str) -> int:
    """How many evaluated queries the means are over: the page says it, else the dataset's API."""
    n = evaluated_queries(page)
    if n:
        return n
    for dataset in client.get("/api/v1/datasets/").json():
        if dataset["slug"] == secret.slug:
            return next(s["n_topics"] for s in dataset["splits"] if s["name"] == "test")
    raise AssertionError("the split's size is public; the attacker cannot be without it")


def _first_rank(mrr_sum: float) -> int | None:
    """MRR@10 summed over queries, for a run whose other queries add nothing: 1 / the first relevant rank."""
    if mrr_sum <= 0:
        return None
    rank = round(1 / mrr_sum)
    return rank if 1 <= rank <= 10 and abs(1 / rank - mrr_sum) < 0.01 else None


def _facts(page: str) -> dict[str, str]:
    """Per-query facts a one-query run's page gives away besides documents: judged@10, the bucket, the histogram."""
    facts = {}
    judged = re.search(r"Judged@10: <strong>([\d.]+)</strong>", page)
    if judged:
        facts["judged@10"] = judged.group(1)
    if re.search(r"By number of relevant documents", page):
        facts["bucket table"] = "shown"
    if "Distribution of per-query" in page:
        facts["histogram"] = "shown"
    if recall_curve(page):
        facts["recall curve"] = "shown"
    return facts


def test_a_one_query_run_reveals_no_relevant_document(secret, person):
    mallory = person("mallory")
    q = _target(secret)
    submission_id, answer = submit(mallory, secret, secret.run_text([q]), visibility="private")
    found: set[str] = set()
    facts: dict[str, str] = {}
    if submission_id is not None:  # refused at upload: nothing to read, nothing learnt
        page = mallory.get(f"/submissions/{submission_id}/").body
        status = mallory.get(f"/submissions/{submission_id}/status.json").json()
        n = _n_queries(mallory, secret, page)
        found |= {secret.run[q][k - 1] for k in steps(recall_curve(page), at_least=STEP) if k <= len(secret.run[q])}
        rank = _first_rank(float(answer.get("scores", {}).get("MRR@10") or 0) * n)
        if rank:
            found.add(secret.run[q][rank - 1])
        facts = _facts(page)
        assert set(status) <= {"id", "status", "progress", "attempts", "updated_at", "error", "is_final", "message"}
    recovered = found & secret.relevant[q]
    assert not recovered, (f"the one-query run of {q} gave away {len(recovered)} of its {len(secret.relevant[q])} "
                           f"relevant documents: {sorted(recovered)} ({len(found - recovered)} wrong guesses)")
    assert not facts, f"the one-query run's page gave away per-query facts: {facts}"


def test_two_runs_differing_in_one_query_reveal_nothing_about_it(secret, person):
    mallory = person("mallory")
    q = _target(secret)
    others = [t for t in sorted(secret.run) if t != q]  # 19 of 20 topics: 95% of the split
    base_id, base = submit(mallory, secret, secret.run_text(others), system_name="base", visibility="private")
    assert base_id is not None and base["status"] == "scored", base  # a legitimate run over the split
    probe_id, probe = submit(mallory, secret, secret.run_text(others + [q]), system_name="probe",
                             visibility="private")
    assert probe_id is not None, probe
    base_page = mallory.get(f"/submissions/{base_id}/").body
    probe_page = mallory.get(f"/submissions/{probe_id}/").body
    n = _n_queries(mallory, secret, probe_page)

    found: set[str] = set()
    base_scores, probe_scores = base.get("scores") or {}, probe.get("scores") or {}
    if "MRR@10" in base_scores and "MRR@10" in probe_scores:
        rank = _first_rank((float(probe_scores["MRR@10"]) - float(base_scores["MRR@10"])) * n)
        if rank:
            found.add(secret.run[q][rank - 1])
    base_curve, probe_curve = recall_curve(base_page), recall_curve(probe_page)
    difference = {k: probe_curve[k] - base_curve[k] for k in probe_curve.keys() & base_curve.keys()}
    found |= {secret.run[q][k - 1] for k in steps(difference, at_least=STEP) if k <= len(secret.run[q])}
    learnt = {}
    for measure in ("R@10", "R@100", "nDCG@10"):
        if measure in base_scores and measure in probe_scores and probe_scores[measure] != base_scores[measure]:
            learnt[measure] = (float(probe_scores[measure]) - float(base_scores[measure])) * n

    recovered = found & secret.relevant[q]
    assert not recovered, (f"differencing gave away {len(recovered)} of the {len(secret.relevant[q])} relevant "
                           f"documents of {q}: {sorted(recovered)} ({len(found - recovered)} wrong guesses)")
    assert not learnt, f"differencing gave away {q}'s own values: {learnt}"
