"""A snapshot's permanent page, its exports and BibTeX, its diff with the living board; a board's snapshots.

Thin views: look the snapshot up (404 when its dataset is not published, for
all but staff), render stored rows. Taking one is staff-only and a POST.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from catalogue.selectors import DatasetNotFound, SplitNotFound, dataset_for_page, split_for_page
from leaderboard.exports import ExportError, to_bibtex as dataset_bibtex

from . import exports
from .diff import board_diff
from .models import Snapshot, entry_ids
from .services import snapshot_take

_CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json; charset=utf-8",
    "tex": "application/x-tex; charset=utf-8",
    "bib": "application/x-bibtex; charset=utf-8",
}


def _snapshot_for(request, key: str) -> Snapshot:
    snapshot = Snapshot.objects.select_related("split__dataset__benchmark", "split__current_qrels").filter(
        key=key).first()
    if snapshot is None:
        raise Http404(f"There is no snapshot {key!r}.")
    if not snapshot.split.dataset.is_published and not getattr(request.user, "is_staff", False):
        raise Http404(f"There is no snapshot {key!r}.")
    return snapshot


def _citation(snapshot: Snapshot) -> str:
    try:
        return dataset_bibtex(snapshot.split.dataset)
    except ExportError:  # the dataset has no citation yet
        return ""


@require_safe
def detail(request, key: str):
    snapshot = _snapshot_for(request, key)
    url = request.build_absolute_uri(snapshot.get_absolute_url())
    measures = [m for m in snapshot.measures if any(r["cells"].get(m) for r in snapshot.rows)] or \
        [snapshot.primary_measure]
    moved = entry_ids(snapshot)  # an imported snapshot cites the ids of the host that took it
    rows = [{**r, "shown": [r["cells"].get(m, "") for m in measures],
             "entry_id": moved.get(r["submission_id"], r["submission_id"]) if r.get("submission_id") else None}
            for r in snapshot.rows]
    later = Snapshot.objects.filter(split_id=snapshot.split_id).exclude(pk=snapshot.pk).only(
        "key", "taken_at", "reason", "qrels_version")[:20]
    return render(request, "snapshots/detail.html", {
        "snapshot": snapshot, "dataset": snapshot.split.dataset, "rows": rows, "measures": measures, "url": url,
        "bibtex": exports.to_bibtex(snapshot, url=url), "intact": snapshot.intact, "others": later,
        "formats": [("csv", "CSV"), ("json", "JSON"), ("tex", "LaTeX"), ("bib", "BibTeX")],
    })


@require_safe
def export(request, key: str, fmt: str):
    snapshot = _snapshot_for(request, key)
    url = request.build_absolute_uri(snapshot.get_absolute_url())
    if fmt == "json":
        body = exports.to_json(snapshot, url=url)
    elif fmt == "csv":
        body = exports.to_csv(snapshot)
    elif fmt == "tex":
        body = exports.to_latex(snapshot)
    else:
        body = exports.to_bibtex(snapshot, url=url, dataset_citation=_citation(snapshot))
    inline = bool(request.GET.get("inline"))
    response = HttpResponse(body, content_type="text/plain; charset=utf-8" if inline else _CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'{"inline" if inline else "attachment"}; filename="lexboard-{snapshot.key}.{fmt}"'
    return response


@require_safe
def diff(request, key: str):
    snapshot = _snapshot_for(request, key)
    return render(request, "snapshots/diff.html", {
        "snapshot": snapshot, "dataset": snapshot.split.dataset, "split": snapshot.split,
        "diff": board_diff(snapshot=snapshot, split=snapshot.split),
    })


def _board(request, slug: str):
    try:
        dataset = dataset_for_page(slug, user=request.user)
        split = split_for_page(dataset, request.GET.get("split") or request.POST.get("split"))
    except (DatasetNotFound, SplitNotFound) as exc:
        raise Http404(str(exc)) from exc
    if split is None:
        raise Http404(f"{dataset.name} has no split yet.")
    return dataset, split


@require_safe
def board_list(request, slug: str):
    """The snapshots of one board (a dataset's split), newest first, and the button that takes one (staff)."""
    dataset, split = _board(request, slug)
    snapshots = Snapshot.objects.filter(split=split).only("key", "title", "taken_at", "reason", "qrels_version",
                                                          "note", "made_by")
    return render(request, "snapshots/board_list.html", {
        "dataset": dataset, "split": split, "snapshots": snapshots, "splits": list(dataset.splits.all()),
    })


@require_POST
@staff_member_required
def take(request, slug: str):
    """A curator's snapshot of the board as it reads now (the board page's button and the admin's form)."""
    dataset, split = _board(request, slug)
    try:
        snapshot = snapshot_take(split=split, note=request.POST.get("note", "")[:2000],
                                 made_by=request.user.get_username())
    except ValueError as exc:
        messages.error(request, str(exc))
        return HttpResponseRedirect(reverse("snapshots:board", args=[dataset.slug]) + f"?split={split.name}")
    messages.success(request, f"Snapshot {snapshot.key} taken: this is its permanent address.")
    return HttpResponseRedirect(snapshot.get_absolute_url())
