"""Public pages: home, benchmarks, datasets and their leaderboards, exports, docs.

Thin views: look the thing up (404 with a message otherwise), call a
selector, render. Nothing here computes a score.
"""

from __future__ import annotations

import math
from urllib.parse import urlencode

from django.http import Http404, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.utils.cache import add_never_cache_headers
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from campaigns.selectors import phases_for_dataset
from catalogue.selectors import (
    DatasetNotFound,
    SplitNotFound,
    data_terms_in_force,
    dataset_for_page,
    measure_info,
    split_for_page,
)
from evaluation.measures import DEFAULT_MEASURES, FAMILIES, macro_f1_description
from presentation.plots import progress_chart
from submissions import disclosure
from submissions.models import Submission

from . import exports
from .downloads import dataset_file_chunks, dataset_files
from .page_cache import anonymous_page_cache
from .qrels_history import qrels_history
from .selectors import (
    KIND_CHOICES,
    PARAM_RANGES,
    SEEN_CHOICES,
    TRAINING_CHOICES,
    LeaderboardFilters,
    benchmark_for_page,
    cell_format,
    dataset_page_cache_key,
    filter_rows,
    home_datasets,
    home_page_cache_key,
    leaderboard_rows,
    progress_points,
    resolve_sort,
)
from .significance import PublicBoard, power_context, significance_context
from .views_tasks import phase_timeline
from .views_terms import terms_gate


def _measure_info(dataset) -> list[dict[str, str]]:
    """The dataset's measures with their definitions; macro-F1 and macro-F1/<language> explained here.

    The metric core declares the retrieval measures; the classification scores
    are not declared measures there, and a bare "See how we score" under each
    of them read like an unfinished page.
    """
    info = measure_info(list(dataset.measures or []))
    for m in info:
        if not (m["description"] or m["formula"]):
            m["description"] = macro_f1_description(m["name"], dataset.task)
    return info


def _dataset_and_split(request, slug: str):
    try:
        dataset = dataset_for_page(slug, user=request.user)
        split = split_for_page(dataset, request.GET.get("split"))
    except (DatasetNotFound, SplitNotFound) as exc:
        raise Http404(str(exc)) from exc
    return dataset, split


@require_safe
@anonymous_page_cache(lambda request: home_page_cache_key(path=request.get_full_path()))
def home(request):
    return render(request, "leaderboard/home.html", {"benchmarks": home_datasets(user=request.user)})


@require_safe
def benchmark(request, slug: str):
    summary = benchmark_for_page(slug)
    if summary is None:
        raise Http404(f"There is no benchmark called {slug!r}.")
    return render(request, "leaderboard/benchmark.html", {"summary": summary, "benchmark": summary.benchmark})


def _format_cells(dataset, rows, *, sort: str, split=None) -> None:
    """Each row's score cells as (CSS class, text), formatted here rather than by a template tag per cell.

    1,600 cells on a 200-entry board with 8 measures: a loop, two comparisons
    and a tag call per cell were a large part of the page's rendering time for
    logged-in users, who are not served the cached page (docs/performance.md).
    """
    classes = [
        "num" + (" primary" if m == dataset.primary_measure else "") + (" sorted" if m == sort else "")
        for m in dataset.measures or []
    ]
    names = list(dataset.measures or [])
    # A hidden split's entries at the precision of its grid; papers' reported numbers as printed.
    fmt = cell_format(split)
    for row in rows:
        row.cells = [(css, fmt(row, row.scores.get(m))) for css, m in zip(classes, names, strict=True)]


def _filter_choices(filters: LeaderboardFilters) -> dict:
    """The filter form's options, each with whether it is chosen."""
    return {
        "family": [(c.value, c.label, c.value in filters.family) for c in Submission.Family],
        "params": [(key, label, key in filters.params) for key, label, *_ in PARAM_RANGES],
        "training_data": [(key, label, key in filters.training_data) for key, label in TRAINING_CHOICES],
        "could_have_seen": [(key, label, key in filters.could_have_seen) for key, label in SEEN_CHOICES],
        "kind": [(key, label, key == filters.kind) for key, label in KIND_CHOICES],
    }


def _progress(dataset, split, rows) -> dict | None:
    """The progress chart of the primary measure over the whole public board (filters aside), or None."""
    if split is None:
        return None
    measure = dataset.primary_measure
    public = [r for r in rows if not r.is_private]
    points, undated = progress_points(public, measure=measure)
    if not points:
        return None
    values = [100 * p.value for p in points]
    fmt = cell_format(split)  # each value as the board prints it (a hidden split's grid; papers' as printed)
    shown = [(p, fmt(p, p.value)) for p in points]
    top = min(100.0, max(10.0, math.ceil(max(values) / 10) * 10))
    svg = progress_chart(
        [(p.when, 100 * p.value, f"{p.system} ({p.label}, {'reported' if p.kind == 'reported' else 'scored here'})")
         for p in points],
        title=f"Best {measure} over time on {dataset.name}, {split.name} split",
        desc=(f"A step line of the best {measure} (percent) reached so far: "
              + "; ".join(f"{p.label} {p.system} {text}" for p, text in shown) + "."),
        x_label="year", y_label=f"best {measure} (%)", y_range=(0.0, float(top)), texts=[text for _, text in shown],
    )
    # The list under the chart: ``shown``.
    return {"svg": svg, "points": shown, "undated": undated, "measure": measure}


@require_safe
@anonymous_page_cache(lambda request, slug: dataset_page_cache_key(slug=slug, path=request.get_full_path()))
def dataset(request, slug: str):
    dataset, split = _dataset_and_split(request, slug)
    measure = resolve_sort(dataset, request.GET.get("sort"))
    all_rows = leaderboard_rows(split=split, user=request.user, sort=measure) if split is not None else []
    filters = LeaderboardFilters.from_query(request.GET)
    rows = filter_rows(all_rows, filters, measure=measure)
    _format_cells(dataset, rows, sort=measure, split=split)
    export_query = urlencode([("split", split.name)] + filters.query_items()) if split is not None else ""
    board = PublicBoard(split) if split is not None else None  # the markers and the power analysis read it once
    context = {
        "dataset": dataset,
        "split": split,
        "splits": list(dataset.splits.all()),
        "rows": rows,
        "measures": list(dataset.measures or []),
        "measure_info": _measure_info(dataset),
        # A hidden split's values on its grid: "±0.5 points: hidden split", linked to the metrics docs.
        "grid_note": disclosure.grid_note(split) if split is not None else "",
        "grid_docs": disclosure.GRID_DOCS,
        "sort": measure,
        "has_scored": any(r.kind != "reported" for r in rows),
        "has_submissions": any(r.kind == "scored" for r in rows),
        "has_reported": any(r.kind == "reported" for r in rows),
        "has_baseline": any(r.kind == "baseline" for r in rows),
        "has_private": any(r.is_private for r in rows),
        "has_disclosed": any(r.disclosed for r in rows),
        # Compare needs two entries with a submission behind them (not rows reported in papers).
        # Only retrieval runs can be compared query by query (and fused): no dead-end button elsewhere.
        "n_comparable": sum(1 for r in rows if r.submission_id) if dataset.task == "retrieval" else 0,
        # New judgments being rescored: the table stays on the current version until the switch.
        "pending_qrels": split.pending_qrels if split is not None and split.pending_qrels_id else None,
        "export_formats": [("csv", "CSV"), ("json", "JSON"), ("tex", "LaTeX")],
        # The "Participate" section: the files to download and the rules.
        "files": dataset_files(dataset),
        # Its terms (accepted once per version before a download or an upload: the file links lead there first).
        "data_terms": data_terms_in_force(dataset_id=dataset.pk),
        "export_query": export_query,
        "filters": filters,
        "filter_choices": _filter_choices(filters),
        "n_all_rows": len(all_rows),
        "progress": _progress(dataset, split, all_rows),
        # Significance markers and tiers: ?sig=MEASURE, default the ranked-by measure.
        **significance_context(split=split, rows=rows, sort=measure, sig=request.GET.get("sig"), board=board),
        # How small a difference of the primary measure this split can detect (Sakai 2016).
        **power_context(split=split, board=board),
        # Versions of the judgments, what each added and how the ranking moved (leaderboard/qrels_history.py).
        "qrels_history": qrels_history(split=split) if split is not None else [],
    }
    # Shared tasks on the dataset's splits: timeline and countdown (rendered now, so never from the page cache).
    context["task_timelines"] = [phase_timeline(p) for p in phases_for_dataset(dataset_id=dataset.pk)]
    context["task_running"] = next((t for t in context["task_timelines"]
                                    if split is not None and t["phase"].split_id == split.pk
                                    and t["state"] in ("open", "closed")), None)
    response = render(request, "leaderboard/dataset.html", context)
    if any(t["state"] != "revealed" for t in context["task_timelines"]):
        add_never_cache_headers(response)  # a clock on the page: neither our page cache nor a browser keeps it
    return response


_CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json; charset=utf-8",
    "tex": "application/x-tex; charset=utf-8",
    "bib": "application/x-bibtex; charset=utf-8",
}


@require_safe
def dataset_file(request, slug: str, name: str):
    """One of the dataset's files (corpus, topics, public judgments, a baseline run), streamed as gzip."""
    try:
        dataset = dataset_for_page(slug, user=request.user)
    except DatasetNotFound as exc:
        raise Http404(str(exc)) from exc
    if (gate := terms_gate(request, dataset)) is not None:  # the dataset's terms, accepted once per version
        return gate
    chunks = dataset_file_chunks(dataset, name)
    if chunks is None:
        raise Http404(f"{dataset.name} offers no file named {name}; the dataset page lists its files.")
    response = StreamingHttpResponse(chunks, content_type="application/gzip")
    response["Content-Disposition"] = f'attachment; filename="{dataset.slug}-{name}"'
    return response


@require_safe
def export(request, slug: str, fmt: str):
    """The public leaderboard as a file. Private rows are never exported, even to their owner."""
    dataset, split = _dataset_and_split(request, slug)
    try:
        if fmt == "bib":
            body = exports.to_bibtex(dataset)
            filename = f"{dataset.slug}.bib"
        else:
            if split is None:
                raise exports.ExportError(f"{dataset.name} has no split yet, so there is no table to export.")
            # ?measures=R@100,MAP@100 from a script, or one checkbox per measure from the page's form.
            measures = exports.choose_measures(dataset, ",".join(request.GET.getlist("measures")))
            measure = resolve_sort(dataset, request.GET.get("sort"))
            rows = leaderboard_rows(split=split, user=None, sort=measure)
            # The page's filters (?family=dense&best=1 …) give the same rows in the file.
            rows = filter_rows(rows, LeaderboardFilters.from_query(request.GET), measure=measure)
            if fmt == "csv":
                body = exports.to_csv(rows, measures=measures, split=split)
            elif fmt == "json":
                body = exports.to_json(rows, dataset=dataset, split=split, measures=measures)
            else:
                body = exports.to_latex(rows, dataset=dataset, split=split, measures=measures)
            filename = f"{dataset.slug}-{split.name}.{fmt}"
    except exports.ExportError as exc:
        return HttpResponse(str(exc) + "\n", status=400, content_type="text/plain; charset=utf-8")
    inline = bool(request.GET.get("inline"))
    # Inline means "let me read it in the browser": plain text displays everywhere.
    response = HttpResponse(body, content_type="text/plain; charset=utf-8" if inline else _CONTENT_TYPES[fmt])
    disposition = "inline" if inline else "attachment"
    response["Content-Disposition"] = f'{disposition}; filename="{filename}"'
    return response


@require_safe
def docs(request):
    """The metric semantics of the design brief, with each measure's formula from the metric core."""
    names = [m.name for m in DEFAULT_MEASURES]
    # Every family of the measure registry, in its order: the table is the registry, never a copy of it.
    families = [{"name": f"{f.family}@k" if f.takes_k else f.family, "formula": f.formula,
                 "trec_eval": f.trec_eval.replace("{k}", "k"), "citation": f.citation} for f in FAMILIES.values()]
    return render(request, "leaderboard/docs_metrics.html", {"measure_info": measure_info(names), "families": families})


@require_safe
@cache_control(max_age=86400, public=True)
def favicon(request):
    """``/favicon.ico``, which browsers and feed readers ask for on their own (pages name the SVG icon)."""
    return HttpResponseRedirect(static("img/favicon.ico"))
