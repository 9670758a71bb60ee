"""A shared task's page: timeline and countdown, teams, a team's runs and final runs, the private board.

Server-rendered (the site's CSP allows no inline script): the countdown is
text computed at render time. Scores on this page follow every page's rules:
a team's runs show their public-part score while the phase runs (the stored
result holds nothing else); the private board appears at the reveal, from its
snapshot. Its exports (CSV, JSON, LaTeX) are the snapshot's rows.
"""

from __future__ import annotations

import datetime as dt
import json
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST, require_safe

from campaigns.errors import TaskRefused
from campaigns.models import Phase, PrivateBoard
from campaigns.selectors import team_members, team_of
from submissions import disclosure
from submissions.models import Result, Submission
from submissions.selectors import primary_score_of
from submissions.services.finals import submission_mark_final, team_final_runs, team_task_runs

from . import exports
from .private_board import private_board_rescored
from .selectors import LeaderboardRow


def countdown(delta: timedelta) -> str:
    """A time left as a person reads it: "2 days 3 hours", "4 hours 12 minutes", "less than a minute"."""
    seconds = int(delta.total_seconds())
    if seconds < 60:
        return "less than a minute"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60

    def unit(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"
    if days:
        return unit(days, "day") + (f" {unit(hours, 'hour')}" if hours else "")
    if hours:
        return unit(hours, "hour") + (f" {unit(minutes, 'minute')}" if minutes else "")
    return unit(minutes, "minute")


def phase_timeline(phase: Phase, now=None) -> dict:
    """What the dataset page and the task page show of a phase's dates: state, both dates, the countdown."""
    now = now or timezone.now()
    state = phase.state(now)
    if state == "upcoming":
        left = f"opens in {countdown(phase.opens_at - now)}"
    elif state == "open":
        left = f"closes in {countdown(phase.closes_at - now)}"
    elif state == "closed":
        left = "closed; the private board is being computed"
    else:
        left = f"closed; private board published {phase.local(phase.revealed_at or now):%Y-%m-%d %H:%M} {phase.time_zone}"
    span = max((phase.closes_at - phase.opens_at).total_seconds(), 1.0)
    done = min(max((now - phase.opens_at).total_seconds() / span, 0.0), 1.0)
    return {"phase": phase, "state": state, "countdown": left, "opens": phase.when(phase.opens_at),
            "closes": phase.when(phase.closes_at), "percent_done": round(100 * done)}


def _board_rows(board: PrivateBoard, dataset) -> list[LeaderboardRow]:
    return _rows_of(board.rows)


def board_measures(board: PrivateBoard, split) -> list[str]:
    """The private board's columns: the measures its snapshot holds that the split releases (a hidden split: the
    primary one; a snapshot published before #37 holds all of them, and shows the primary one only)."""
    shown = set(disclosure.released_measures(split))
    return [m for m in board.measures if m in shown]


def board_grid(board: PrivateBoard) -> float | None:
    """The step the board's values sit on (the private part's grid), as its rows state it; None when not stated."""
    return next((float(g) for r in board.rows if (g := (r.get("extra") or {}).get("grid"))), None)


def board_format(board: PrivateBoard, split):
    """How the private board's values are printed, on its page, CSV and LaTeX alike: on the grid its rows state (the
    private topics' share) on a hidden split, at full precision on a public one (``evaluation.ladder.percent_text``)."""
    if not disclosure.hidden(split):
        return disclosure.formatter(None)
    return disclosure.formatter(split, step=board_grid(board))


def board_caption(board: PrivateBoard, phase: Phase, measures: list[str]) -> str:
    """What the LaTeX caption says of the board's columns: true of them (the measures, the topics, the grid)."""
    split = phase.split
    caption = (f"Private board of {exports.latex_escape(phase.title)}: each team's best final run on the task's "
               f"{board.n_queries} private topics (qrels v{board.qrels_version}), "
               f"{exports.latex_escape(', '.join(measures))} in percent.")
    if disclosure.hidden(split):
        grid = board_grid(board)
        caption += (" Hidden split: the primary measure only"
                    + (f", on a grid of {exports.latex_escape(disclosure.points(grid))} (the private topics' share)"
                       if grid else "") + ".")
    return caption + " Best value in bold."


def _rows_of(stored: list[dict]) -> list[LeaderboardRow]:
    rows = []
    for data in stored:
        data = dict(data)
        data["date"] = dt.date.fromisoformat(data["date"]) if data.get("date") else None
        rows.append(LeaderboardRow(**data))
    return rows


@require_safe
def task(request: HttpRequest, phase_id: int) -> HttpResponse:
    phase = get_object_or_404(Phase.objects.select_related("split__dataset"), pk=phase_id)
    dataset = phase.split.dataset
    team = team_of(user=request.user, phase=phase)
    measures = list(dataset.measures or [])
    context: dict[str, object] = {
        "phase": phase, "split": phase.split, "dataset": dataset, "timeline": phase_timeline(phase),
        "teams": phase.teams.annotate(n_members=Count("memberships")).order_by("name"),
        "team": team, "measures": measures,
        "public_percent": round(100 * phase.public_share),
    }
    if team is not None:
        runs = list(team_task_runs(team=team, phase=phase).select_related("split__dataset", "user")
                    .prefetch_related(Prefetch("results", queryset=Result.objects.defer("per_query")))
                    .order_by("-created_at"))
        finals, marked = team_final_runs(team=team, phase=phase)
        final_ids = {s.pk for s in finals}
        context.update(
            members=team_members(team=team),
            invite_link=request.build_absolute_uri(team.invite_url()),
            runs=[{"submission": s, "score": disclosure.formatter(s.split)(primary_score_of(s))
                   if s.status == Submission.Status.SCORED else "", "counts_as_final": s.pk in final_ids}
                  for s in runs],
            finals_marked=marked,
        )
    board = PrivateBoard.objects.filter(phase=phase).first()
    if board is not None:
        rows = _board_rows(board, dataset)
        shown = board_measures(board, phase.split)
        show = board_format(board, phase.split)
        context.update(board=board, board_measures=shown, board_rows=[
            {"row": r, "cells": [show(r.scores.get(m)) for m in shown]} for r in rows])
        rescored = private_board_rescored(phase=phase, board=board)
        if rescored is not None:
            context.update(rescored=rescored, rescored_rows=[
                {"row": r, "cells": [dataset.format_value(r.scores.get(m)) for m in measures]}
                for r in _rows_of(rescored.rows)])
    return render(request, "leaderboard/task.html", context)


@login_required
@require_POST
def mark_final(request: HttpRequest, submission_id: int) -> HttpResponse:
    """Mark one of one's team's runs final (``final=1``) or not (``final=0``)."""
    submission = get_object_or_404(Submission.objects.select_related("entrant_team"), pk=submission_id)
    phase = Phase.objects.filter(split_id=submission.split_id).first()
    if phase is None or submission.entrant_team_id is None:
        raise Http404("No such run in a shared task.")
    try:
        submission_mark_final(submission=submission, user=request.user, final=request.POST.get("final") == "1")
        messages.success(request, f"\u201c{submission.system_name}\u201d is {'now' if submission.final_run else 'no longer'} "
                                  "one of your team's final runs.")
    except TaskRefused as exc:
        messages.error(request, exc.message)
    return redirect(phase.get_absolute_url())


_TYPES = {"csv": "text/csv; charset=utf-8", "json": "application/json; charset=utf-8",
          "tex": "application/x-tex; charset=utf-8"}


@require_safe
def board_export(request: HttpRequest, phase_id: int, fmt: str) -> HttpResponse:
    """The private board's snapshot as a file (404 before the reveal: there is nothing to export)."""
    if fmt not in _TYPES:
        raise Http404("The private board exports as csv, json or tex.")
    phase = get_object_or_404(Phase.objects.select_related("split__dataset", "split__current_qrels"), pk=phase_id)
    board = PrivateBoard.objects.filter(phase=phase).first()
    if board is None:
        raise Http404("The private board is published at the close of the task.")
    dataset, split = phase.split.dataset, phase.split
    rows = _board_rows(board, dataset)
    measures = board_measures(board, split)
    show = board_format(board, split)
    if fmt == "csv":
        body = exports.to_csv(rows, measures=measures, fmt_value=show)
    elif fmt == "json":
        payload = json.loads(exports.to_json(rows, dataset=dataset, split=split, measures=measures))
        payload.update(board="private", task=phase.title, published_at=board.published_at.isoformat(),
                       qrels_version=board.qrels_version, n_queries=board.n_queries, method=board.method,
                       grid=board_grid(board) if disclosure.hidden(split) else None,
                       note="Scored on the task's private topics; a dated snapshot that later judgments do not change."
                            + (" Hidden split: the primary measure only, on the grid of the private topics (grid)."
                               if disclosure.hidden(split) else ""))
        for entry, row in zip(payload["entries"], rows):
            entry["tier"] = row.extra.get("tier")
            entry["vs_leader"] = row.extra.get("leader_text")
        body = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
    else:
        body = exports.to_latex(rows, dataset=dataset, split=split, measures=measures,
                                caption=board_caption(board, phase, measures),
                                fmt_value=show).replace(
            "% Requires", f"% Private board of {exports.latex_escape(phase.title)}, published "
                          f"{board.published_at:%Y-%m-%d} (qrels v{board.qrels_version}).\n% Requires", 1)
    response = HttpResponse(body, content_type=_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{dataset.slug}-{split.name}-private-board.{fmt}"'
    return response
