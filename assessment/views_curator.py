"""The curators' pool pages: statistics, progress, agreement, adjudication, files, bias, new qrels.

Staff only (everyone else gets a 404). Pools are built in the admin
(``assessment/admin.py``); everything after that happens here.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from .access import pool_for, staff_required
from .bias import pool_bias
from .consensus import judgment_adjudicate, pool_agreement, pool_disagreements
from .errors import AssessmentError
from .files import JudgmentFormatError, judgments_import, pool_export, problems_of
from .forms import AdjudicateForm, AssignForm, ImportForm, MergeForm
from .judging import progress_per_assessor, progress_per_query
from .merging import pool_qrels_make, pool_qrels_preview
from .models import GRADES
from .pools import pool_assign


@never_cache
@staff_required
def pool(request: HttpRequest, pool_id: int) -> HttpResponse:
    """Everything about one pool for its curator."""
    p = pool_for(pool_id)
    return render(request, "assessment/pool.html", {
        "pool": p, "stats": p.statistics, "n_items": p.items.count(),
        "assessors": progress_per_assessor(p), "queries": progress_per_query(p),
        "agreement": pool_agreement(p), "disagreements": pool_disagreements(p), "grades": GRADES,
        "assign_form": AssignForm(initial={"overlap_share": p.overlap_share or 0.1}), "import_form": ImportForm(),
        "runs": sorted(p.statistics.get("unjudged_per_run", {}).items()),
    })


@require_POST
@staff_required
def assign(request: HttpRequest, pool_id: int) -> HttpResponse:
    p = pool_for(pool_id)
    form = AssignForm(request.POST)
    if form.is_valid():
        try:
            made = pool_assign(pool=p, assessors=list(form.cleaned_data["assessors"]),
                               overlap_share=form.cleaned_data["overlap_share"])
            messages.success(request, f"Assigned the pool to {len(made)} assessor(s).")
        except AssessmentError as exc:
            messages.error(request, str(exc))
    else:
        messages.error(request, "Choose the assessors and an overlap share between 0 and 1.")
    return redirect(p)


@require_POST
@staff_required
def adjudicate(request: HttpRequest, pool_id: int, item_id: int) -> HttpResponse:
    p = pool_for(pool_id)
    it = get_object_or_404(p.items, pk=item_id)
    form = AdjudicateForm(request.POST)
    if form.is_valid():
        judgment_adjudicate(item=it, user=request.user, grade=form.cleaned_data["grade"])
        messages.success(request, f"{it.qid} {it.docid}: grade {form.cleaned_data['grade']} is the one used.")
    else:
        messages.error(request, f"Choose a grade {GRADES[0]}–{GRADES[-1]}.")
    return redirect(p.get_absolute_url() + "#disagreements")


@require_GET
@staff_required
def export(request: HttpRequest, pool_id: int, fmt: str) -> HttpResponse:
    """The pool as a TREC qrels-style file (grades -1) or a CSV with an empty grade column."""
    p = pool_for(pool_id)
    try:
        body = pool_export(pool=p, fmt=fmt)
    except AssessmentError as exc:
        raise Http404(str(exc)) from exc
    ext, ctype = ("txt", "text/plain") if fmt == "trec" else ("csv", "text/csv")
    response = HttpResponse(body, content_type=f"{ctype}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="pool-{p.pk}.{ext}"'
    return response


@require_POST
@staff_required
def import_judgments(request: HttpRequest, pool_id: int) -> HttpResponse:
    """Judgments from an external tool, checked against the pool; every wrong line named, nothing stored then."""
    p = pool_for(pool_id)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, "Choose the judgments file (the exported pool with grades filled in).")
        return redirect(p)
    upload = form.cleaned_data["file"]
    try:
        n = judgments_import(pool=p, data=upload.read(), assessor=form.cleaned_data["assessor"] or request.user,
                             name=upload.name)
    except JudgmentFormatError as exc:
        for line in problems_of(exc):
            messages.error(request, line)
        return redirect(p)
    messages.success(request, f"Imported {n} judgment(s).")
    return redirect(p)


@never_cache
@staff_required
def bias(request: HttpRequest, pool_id: int) -> HttpResponse:
    """Zobel's leave-one-run-out test on the pool's runs."""
    p = pool_for(pool_id)
    try:
        rows, error = pool_bias(pool=p), ""
    except AssessmentError as exc:
        rows, error = [], str(exc)
    return render(request, "assessment/bias.html", {"pool": p, "rows": rows, "error": error,
                                                    "dataset": p.split.dataset})


@never_cache
@staff_required
def make_qrels(request: HttpRequest, pool_id: int) -> HttpResponse:
    """What the merge would store under the chosen rules (GET, or POST without confirm); POST with confirm stores it."""
    p = pool_for(pool_id)
    data = request.POST if request.method == "POST" else None
    form = MergeForm(data)
    if data is not None and form.is_valid():
        rules = {"conflict_rule": form.cleaned_data["conflict_rule"],
                 "disagreement_rule": form.cleaned_data["disagreement_rule"]}
    else:
        rules = {"conflict_rule": "pool", "disagreement_rule": "leave_out"}
    if request.method == "POST" and form.is_valid() and request.POST.get("confirm") == "yes":
        try:
            version, rescored = pool_qrels_make(pool=p, user=request.user, note=form.cleaned_data["note"],
                                                publish=form.cleaned_data["publish"],
                                                small_change_reason=form.cleaned_data["small_change_reason"],
                                                **rules)
        except AssessmentError as exc:
            messages.error(request, str(exc))
        else:
            what = f"published; {rescored} entr{'y' if rescored == 1 else 'ies'} sent for rescoring" \
                if form.cleaned_data["publish"] else "stored, not published"
            messages.success(request, f"Made {version} ({what}).")
            return redirect(p)
    try:
        preview, error = pool_qrels_preview(pool=p, **rules), ""
    except AssessmentError as exc:
        preview, error = None, str(exc)
    if data is None:
        form = MergeForm(initial={**rules, "publish": True})
    return render(request, "assessment/make_qrels.html", {"pool": p, "form": form, "preview": preview,
                                                          "error": error})
