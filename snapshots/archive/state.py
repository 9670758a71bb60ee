"""A benchmark's boards, snapshots and scores, with identities that do not depend on the host's primary keys.

Two hosts that hold the same benchmark give the same :func:`benchmark_state` (after a move, the test compares
the exporting host's with the importing host's). Entries are named by their split, system name, run sha256 and
upload time; snapshots by their key (their content is compared as stored, with its digest).
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.contrib.auth import get_user_model

from assessment.models import Judgment, Pool
from campaigns.models import Phase, Team
from catalogue.models import Dataset, Split
from leaderboard.selectors import leaderboard_rows
from submissions.models import LadderBest, Release, Result, ResultPart, Submission

from ..models import Snapshot, entry_ids


def _entry(sub: Submission) -> str:
    return f"{sub.split.dataset.slug}/{sub.split.name}|{sub.system_name}|{sub.sha256}|{sub.created_at.isoformat()}"


def benchmark_state(*, dataset_slugs: list[str]) -> dict[str, Any]:
    """Every board (the anonymous visitor's rows of every split), snapshot, result and qrels version."""
    datasets = list(Dataset.objects.filter(slug__in=dataset_slugs).order_by("slug"))
    subs = {s.pk: _entry(s) for s in Submission.objects.filter(split__dataset__in=datasets)
            .select_related("split__dataset")}
    boards: dict[str, Any] = {}
    for split in Split.objects.filter(dataset__in=datasets).select_related("dataset", "current_qrels").order_by(
            "dataset__slug", "name"):
        rows = []
        for row in leaderboard_rows(split=split, user=None):
            data = row.to_dict()
            data["submission_id"] = subs.get(data["submission_id"]) if data["submission_id"] else None
            rows.append(data)
        boards[f"{split.dataset.slug}/{split.name}"] = {
            "rows": rows, "qrels_version": split.current_qrels.version if split.current_qrels else None,
            "accepts_submissions": split.accepts_submissions,
        }
    snapshots = {}
    for snap in Snapshot.objects.filter(split__dataset__in=datasets).order_by("key"):
        ids = entry_ids(snap)
        snapshots[snap.key] = {
            "content": snap.content(), "digest": snap.digest, "intact": snap.intact,
            # The entries its rows cite, as this host finds them.
            "entries": [subs.get(ids.get(r["submission_id"], r["submission_id"])) if r.get("submission_id") else None
                        for r in snap.rows],
        }
    results = {}
    for model in (Result, ResultPart):
        for res in model.objects.filter(submission__split__dataset__in=datasets).select_related("qrels_version"):
            part = getattr(res, "part", "result")
            key = f"{subs[res.submission_id]}|qrels v{res.qrels_version.version}|{part}"
            results[key] = {
                "scores": res.scores, "primary_score": res.primary_score, "n_queries": res.n_queries,
                "per_query_sha256": hashlib.sha256(bytes(res.per_query)).hexdigest(),
                **({"released": res.released, "released_score": res.released_score,
                    "released_step": res.released_step} if isinstance(res, Result) else {}),
            }
    qrels = {}
    for split in Split.objects.filter(dataset__in=datasets).select_related("dataset"):
        for version in split.qrels_versions.all():
            qrels[f"{split.dataset.slug}/{split.name} v{version.version}"] = {
                "sha256": version.sha256, "gz_sha256": hashlib.sha256(bytes(version.qrels_gz)).hexdigest()}
    judgments = {
        f"{j.item.pool.name}|{j.item.qid}|{j.item.docid}|{j.assessor.get_username()}|{j.created_at.isoformat()}":
            {"grade": j.grade, "kind": j.kind, "superseded": j.superseded_by_id is not None}
        for j in Judgment.objects.filter(item__pool__split__dataset__in=datasets).select_related("item__pool",
                                                                                                  "assessor")}
    pools = {
        pool.name: {"split": str(pool.split), "method": pool.describe, "statistics": pool.statistics,
                    "items": sorted(f"{i.qid} {i.docid} {i.position}" for i in pool.items.all()),
                    "assignments": sorted(f"{a.assessor.get_username()}: {a.items.count()}"
                                          for a in pool.assignments.select_related("assessor"))}
        for pool in Pool.objects.filter(split__dataset__in=datasets).select_related("split__dataset")}
    teams = {t.pk: t.name for t in Team.objects.filter(phase__split__dataset__in=datasets)}
    users = {u.pk: u.get_username() for u in get_user_model().objects.all()}

    def who(identity: str) -> str:
        kind, _, pk = identity.partition(":")
        names = teams if kind == "team" else users
        return f"{kind}:{names.get(int(pk), '?')}" if pk.isdigit() else identity

    tasks = {
        phase.title: {
            "split": str(phase.split), "public_qids": phase.public_qids, "revealed": phase.revealed_at is not None,
            "teams": {team.name: sorted(m.user.get_username() for m in team.memberships.all())
                      for team in phase.teams.all()},
            "private_board": (phase.private_board.rows if hasattr(phase, "private_board") else None),
            "entries": sorted(subs[s.pk] for s in Submission.objects.filter(entrant_team__phase=phase)),
        }
        for phase in Phase.objects.filter(split__dataset__in=datasets).select_related("split__dataset")
    }
    ledger = sorted(
        [f"release {subs.get(r.submission_id)} {who(r.identity)} {r.identity_label} {r.bits} {r.measures} {r.first}"
         for r in Release.objects.filter(split__dataset__in=datasets)]
        + [f"best {b.split} {users[b.user_id]} {teams.get(b.team_id or 0)} "
           f"{subs.get(b.result.submission_id) if b.result else None}"
           for b in LadderBest.objects.filter(split__dataset__in=datasets).select_related("split__dataset", "result")])
    return {"boards": boards, "snapshots": snapshots, "results": results, "qrels": qrels, "judgments": judgments,
            "tasks": tasks, "ledger": ledger, "pools": pools}
