"""Public pages: home, benchmarks, datasets and their leaderboards, exports, docs.

Thin views: look the thing up (404 with a message otherwise), call a
selector, render. Nothing here computes a score.
"""

from __future__ import annotations

from django.http import Http404, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import render
from django.template import loader
from django.templatetags.static import static
from django.views import defaults
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from evaluation.measures import DEFAULT_MEASURES, macro_f1_description
from leaderboard.selectors import DatasetNotFound, SplitNotFound, dataset_for_page, measure_info, split_for_page
from submissions.api.errors import api_error_response, is_api_path

from . import exports
from .downloads import dataset_file_chunks, dataset_files
from .page_cache import anonymous_page_cache
from .selectors import (
    benchmark_for_page,
    dataset_page_cache_key,
    home_datasets,
    home_page_cache_key,
    leaderboard_rows,
    resolve_sort,
)
from .significance import power_context, significance_context


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
@anonymous_page_cache(lambda request: home_page_cache_key(path=request.get_full_path()), name="home")
def home(request):
    return render(request, "leaderboard/home.html", {"benchmarks": home_datasets(user=request.user)})


@require_safe
def benchmark(request, slug: str):
    summary = benchmark_for_page(slug)
    if summary is None:
        raise Http404(f"There is no benchmark called {slug!r}.")
    return render(request, "leaderboard/benchmark.html", {"summary": summary, "benchmark": summary.benchmark})


def _format_cells(dataset, rows, *, sort: str) -> None:
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
    for row in rows:
        row.cells = [(css, dataset.format_value(row.scores.get(m))) for css, m in zip(classes, names, strict=True)]


@require_safe
@anonymous_page_cache(lambda request, slug: dataset_page_cache_key(slug=slug, path=request.get_full_path()),
                      name="dataset")
def dataset(request, slug: str):
    dataset, split = _dataset_and_split(request, slug)
    measure = resolve_sort(dataset, request.GET.get("sort"))
    rows = leaderboard_rows(split=split, user=request.user, sort=measure) if split is not None else []
    _format_cells(dataset, rows, sort=measure)
    context = {
        "dataset": dataset,
        "split": split,
        "splits": list(dataset.splits.all()),
        "rows": rows,
        "measures": list(dataset.measures or []),
        "measure_info": _measure_info(dataset),
        "sort": measure,
        "has_scored": any(r.kind != "reported" for r in rows),
        "has_submissions": any(r.kind == "scored" for r in rows),
        "has_reported": any(r.kind == "reported" for r in rows),
        "has_baseline": any(r.kind == "baseline" for r in rows),
        "has_private": any(r.is_private for r in rows),
        # Compare needs two entries with a submission behind them (not rows reported in papers).
        # Only retrieval runs can be compared query by query (and fused): no dead-end button elsewhere.
        "n_comparable": sum(1 for r in rows if r.submission_id) if dataset.task == "retrieval" else 0,
        # New judgments being rescored: the table stays on the current version until the switch.
        "pending_qrels": split.pending_qrels if split is not None and split.pending_qrels_id else None,
        "export_formats": [("csv", "CSV"), ("json", "JSON"), ("tex", "LaTeX")],
        # The "Participate" section: the files to download and the rules.
        "files": dataset_files(dataset),
        # Significance markers and tiers: ?sig=MEASURE, default the ranked-by measure.
        **significance_context(split=split, rows=rows, sort=measure, sig=request.GET.get("sig")),
        # How small a difference of the primary measure this split can detect (Sakai 2016).
        **power_context(split=split),
    }
    return render(request, "leaderboard/dataset.html", context)


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
            rows = leaderboard_rows(split=split, user=None, sort=resolve_sort(dataset, request.GET.get("sort")))
            if fmt == "csv":
                body = exports.to_csv(rows, measures=measures)
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
    return render(request, "leaderboard/docs_metrics.html", {"measure_info": measure_info(names)})


@require_safe
@cache_control(max_age=86400, public=True)
def favicon(request):
    """``/favicon.ico``, which browsers and feed readers ask for on their own (pages name the SVG icon)."""
    return HttpResponseRedirect(static("img/favicon.ico"))


def page_not_found(request, exception=None):
    if is_api_path(request):
        return api_error_response(404, "Nothing here: GET /api/v1/schema/ lists the API's URLs.")
    message = ""
    if exception is not None and exception.args and isinstance(exception.args[0], str):
        message = exception.args[0]
    return render(request, "404.html", {"message": message}, status=404)


def server_error(request):
    if is_api_path(request):
        return api_error_response(500, "Something went wrong on our side; the error was logged. Please try again later.")
    # No request context: whatever broke the page may break a context processor too.
    return HttpResponse(loader.get_template("500.html").render({}), status=500)


def bad_request(request, exception=None):
    """Django's own refusals outside a view (a malformed request, a body over the size cap)."""
    if is_api_path(request):
        return api_error_response(400, "The request is malformed and was not processed.")
    return defaults.bad_request(request, exception)


def permission_denied(request, exception=None):
    if is_api_path(request):
        return api_error_response(403, "You may not do this.")
    return defaults.permission_denied(request, exception)
