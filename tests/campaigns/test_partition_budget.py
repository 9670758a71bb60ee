"""While a shared task runs, every score shown anywhere is on the public topics only.

The walk covers every URL of the site (the resolver's list, as the access
matrix walks it): a URL that can show a score is opened for the task's
entries as an anonymous visitor, a member of each team and a curator, and no
answer may contain a value of the private part or of all topics, at the
display precision (fraction with 4 decimals, percent with 2). A URL that
shows no score of any split is listed in ``NO_SCORES``; a new URL fails the
walk until it is declared in one or the other. The admin is the curators'
(it shows the stored Result, the public part, and never the parts).
"""

from __future__ import annotations

import gzip
import re

import pytest
from django.test import Client
from django.urls import reverse

from snapshots.models import Snapshot
from snapshots.services import snapshot_take
from submissions.models import Result, ResultPart
from tests.robustness.test_access_matrix import url_patterns

from .conftest import ALICE_RANKS, BOB_RANKS, close, upload

pytestmark = pytest.mark.django_db

SLUG = "coliee-t3"


def _subs(w):
    return w["subs"]


def _snapshot(w):
    return Snapshot.objects.filter(split=w["split"]).first() or snapshot_take(split=w["split"])


#: Every URL that can show a score, and the URLs to open for the task's world.
PROBES = {
    "leaderboard:home": lambda w: [reverse("leaderboard:home")],
    "leaderboard:benchmark": lambda w: [reverse("leaderboard:benchmark", args=["coliee"])],
    "leaderboard:dataset": lambda w: [reverse("leaderboard:dataset", args=[SLUG]) + q for q in
                                      ("", "?split=test", "?split=test&sort=MRR@10", "?split=test&sig=nDCG@10",
                                       "?split=test&best=1")],
    "leaderboard:export": lambda w: [reverse("leaderboard:export", args=[SLUG, f]) + "?split=test"
                                     for f in ("csv", "json", "tex")],
    "leaderboard:dataset_file": lambda w: [reverse("leaderboard:dataset_file", args=[SLUG, "topics-test.tsv.gz"])],
    "api:leaderboard": lambda w: [reverse("api:leaderboard", args=[SLUG]) + q for q in ("", "?split=test")],
    "api:datasets": lambda w: [reverse("api:datasets")],
    "api:dataset_files": lambda w: [reverse("api:dataset_files", args=[SLUG])],
    "api:submissions": lambda w: [reverse("api:submissions") + "?mine=1"],
    "api:submission": lambda w: [reverse("api:submission", args=[s.pk]) for s in _subs(w)],
    "api:compare": lambda w: [reverse("api:compare") + f"?submissions={_subs(w)[0].pk},{_subs(w)[1].pk}"],
    "participants:detail": lambda w: [reverse("participants:detail", args=[s.pk]) for s in _subs(w)],
    "participants:status": lambda w: [reverse("participants:status", args=[s.pk]) for s in _subs(w)],
    "participants:edit": lambda w: [reverse("participants:edit", args=[s.pk]) for s in _subs(w)],
    "participants:resubmit": lambda w: [reverse("participants:resubmit", args=[s.pk]) for s in _subs(w)],
    "participants:per_query_csv": lambda w: [reverse("participants:per_query_csv", args=[s.pk]) for s in _subs(w)],
    "participants:mine": lambda w: [reverse("participants:mine")],
    "participants:upload": lambda w: [reverse("participants:upload", args=[SLUG]) + "?split=test"],
    "participants:compare": lambda w: [reverse("participants:compare") + f"?ids={_subs(w)[0].pk},{_subs(w)[1].pk}"],
    "participants:fusion": lambda w: [reverse("participants:fusion") + f"?split={w['split'].pk}"],
    "leaderboard:task": lambda w: [reverse("leaderboard:task", args=[w["phase"].pk])],
    "leaderboard:board_export": lambda w: [reverse("leaderboard:board_export", args=[w["phase"].pk, f])
                                           for f in ("csv", "json", "tex")],
    # A snapshot of the task's board taken during the phase: what the board showed (the public part), no more.
    "snapshots:board": lambda w: [reverse("snapshots:board", args=[SLUG]) + "?split=test"],
    "snapshots:detail": lambda w: [reverse("snapshots:detail", args=[_snapshot(w).key])],
    "snapshots:diff": lambda w: [reverse("snapshots:diff", args=[_snapshot(w).key])],
    "snapshots:export": lambda w: [reverse("snapshots:export", args=[_snapshot(w).key, f])
                                   for f in ("csv", "json", "tex", "bib")],
    "accounts:participation": lambda w: [reverse("accounts:participation", args=[w["split"].pk])],
    "api:dataset": lambda w: [reverse("api:dataset", args=[SLUG])],
    "api:dataset_tasks": lambda w: [reverse("api:dataset_tasks", args=[SLUG])],
    "api:submission_per_query": lambda w: [reverse("api:submission_per_query", args=[s.pk]) for s in _subs(w)],
}

#: URLs that show no score of any split (accounts, documentation, POST-only actions, team actions).
NO_SCORES = {
    "healthz", "leaderboard:docs", "leaderboard:favicon", "api:schema", "api:docs", "api:fusions",
    "participants:visibility", "participants:withdraw",
    # POST only; answers with api:submission's serializer, which the walk reads through api:submission.
    "api:submission_final",
    "accounts:profile", "accounts:token_create", "accounts:token_revoke",
    "campaigns:team_create", "campaigns:invite", "campaigns:new_link", "campaigns:leave",
    "campaigns:join", "campaigns:invitation", "leaderboard:mark_final", "campaigns:notifications",
    # The release ledger (curators only): counts of releases and bits, never a score.
    "participants:ledger",
    # A dataset's data terms (the text, its versions, who accepted: no score).
    "leaderboard:data_terms", "leaderboard:data_terms_version", "api:dataset_terms", "api:dataset_terms_accept",
    # POST only: a withdrawal, an upload slot (an address to PUT a file to), an upload from it (the answer is
    # api:submission's serializer, read through api:submission).
    "api:submission_withdraw", "api:upload_slots", "api:submissions_from_upload",
    # The sandbox's pages: the form to send an image, a run's status and limits (its entry's scores are read
    # through participants:detail), and the POST that cancels it.
    "sandbox:upload", "sandbox:run", "sandbox:cancel",
    # The same through the API: an image sent (POST), a run's status and limits (its submission's scores are read
    # through api:submission), its cancel (POST).
    "api:sandbox_runs", "api:sandbox_run", "api:sandbox_run_cancel",
    # POST only (staff): takes a snapshot, answers with a redirect to it (read through snapshots:detail).
    "snapshots:take",
}


def _declared(key: str, full: str) -> bool:
    # The admin and the assessment pages are the curators' and assessors' (they work on the judgments
    # themselves, like the admin); accounts' pages show no score.
    return key in PROBES or key in NO_SCORES or key.startswith(("account_", "admin:", "socialaccount_", "assessment:")) \
        or full.startswith("admin/")


def test_every_url_is_declared_as_showing_scores_or_not():
    missing = [key for key, full in url_patterns() if not _declared(key, full)]
    assert not missing, ("declare these URLs in tests/campaigns/test_partition_budget.py (PROBES if they can "
                         "show a score, NO_SCORES if not): " + ", ".join(missing))


def _formatted(value: float) -> set[str]:
    return {f"{value:.4f}", f"{100 * value:.2f}"}


#: Values too common on any page to mean anything (0, 1, one half).
TRIVIAL = {"0.0000", "0.00", "1.0000", "100.00", "0.5000", "50.00"}


@pytest.fixture
def running(task_world, alice, bob, carol):
    subs = [upload(alice, task_world.split, ALICE_RANKS, "red public"),
            upload(bob, task_world.split, BOB_RANKS, "blue public"),
            upload(carol, task_world.split, {**ALICE_RANKS, "q9": 2}, "red private", visibility="private")]
    shown = set()
    for result in Result.objects.filter(submission__in=subs):
        for value in result.scores.values():
            shown |= _formatted(value)
    secret = set()
    for part in ResultPart.objects.filter(submission__in=subs).exclude(part=ResultPart.Part.PUBLIC):
        for value in part.scores.values():
            secret |= _formatted(value)
    secret -= shown | TRIVIAL
    assert {"88.89", "0.8889", "55.56"} <= secret  # alice's and bob's R@10 on all topics: distinct, non-trivial
    return {"subs": subs, "split": task_world.split, "phase": task_world.phase, "secret": secret, "shown": shown}


def _body(response) -> str:
    raw = b"".join(response.streaming_content) if response.streaming else response.content
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8", "replace")


def _walk(world, client: Client) -> list[str]:
    found = []
    for key, _full in url_patterns():
        if key not in PROBES:
            continue
        for url in PROBES[key](world):
            response = client.get(url)
            assert response.status_code < 500, url
            body = _body(response)
            # A whole number as written, not digits inside another (a timestamp's seconds "56.675").
            leaked = sorted(v for v in world["secret"] if re.search(rf"(?<![\d.]){re.escape(v)}(?!\d)", body))
            if leaked:
                found.append(f"{url}: {leaked}")
    return found


@pytest.mark.parametrize("role", ["anonymous", "alice", "bob", "staff"])
def test_no_url_shows_a_score_of_the_private_part_or_of_all_topics_during_the_phase(running, role, alice, bob,
                                                                                      staff):
    client = Client()
    if role != "anonymous":
        client.force_login({"alice": alice, "bob": bob, "staff": staff}[role])
    leaks = _walk(running, client)
    assert not leaks, "private-part or all-topic scores shown during the phase:\n" + "\n".join(leaks)


def test_the_pages_show_the_public_part(running, client):
    """Positive control: the public part's values are what the board shows."""
    page = client.get(reverse("leaderboard:dataset", args=[SLUG])).content.decode()
    # Alice's R@10 on the public topics (3 of 4 = 75) on the grid of 4 topics (50 points).
    assert "±25 points: hidden split" in page and ">100<" in page
    api = client.get(reverse("api:submission", args=[running["subs"][0].pk])).json()
    assert api["scores"]["R@10"] == 1.0 and api["grid"] == 0.5


def test_the_walk_would_see_all_topic_scores_after_the_reveal(running, client):
    """Control of the detector: once the task is revealed and the split made public, the living board shows all
    topics at full precision (88.89). (Hidden, it shows them on the grid of 9 topics: 20 points.)"""
    from leaderboard.private_board import phase_reveal

    close(running["phase"])
    assert phase_reveal(phase_id=running["phase"].pk).created
    running["split"].refresh_from_db()
    running["split"].hidden = False
    running["split"].save(update_fields=["hidden"])
    leaks = _walk(running, client)
    assert any("88.89" in line or "0.8889" in line for line in leaks)
