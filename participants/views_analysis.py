"""Pages of the analyses: compare submissions, the fusion explorer, the per-query CSV.

Thin views: check who may see what, call :mod:`participants.compare`,
:mod:`submissions.services.fusion` or :mod:`participants.analysis`, render.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from catalogue.models import Split
from submissions import selectors
from submissions.models import Result, Submission, scored_live_q
from submissions.services.fusion import (
    DEFAULT_K,
    MAX_PARTS,
    METHODS,
    FusionRefused,
    fusable_by,
    fusion_create,
    fusion_task_check,
)
from submissions.throttling import upload_check

from .analysis import per_query_allowed, per_query_csv as build_per_query_csv
from .compare import (
    CompareRefused,
    check_task,
    comparable_with,
    compare as compare_submissions,
    parse_ids,
    visible_submissions,
)


@require_safe
def compare(request: HttpRequest) -> HttpResponse:
    """``?ids=1,2[,3…]&measure=R@100``: each submission against the first, with significance tests.

    With one id, the page offers the other entries of its split, one click each.
    """
    # Every ?ids= value (checkboxes send one each), as typed until they parse: a refused list stays in the box.
    raw_ids = ",".join(v.strip() for v in request.GET.getlist("ids") if v.strip())
    context: dict = {"comparison": None, "error": "", "ids": raw_ids, "reference": None, "others": []}
    status = 200
    try:
        ids = parse_ids(request.GET.getlist("ids"))
        context["ids"] = ",".join(str(i) for i in ids)
        submissions = visible_submissions(ids=ids, user=request.user)
        if len(submissions) == 1:
            check_task(submissions[0].split.dataset)
            context["reference"] = submissions[0]
            context["others"] = comparable_with(submission=submissions[0], user=request.user)
        elif submissions:
            context["comparison"] = compare_submissions(submissions=submissions,
                                                        measure=request.GET.get("measure") or None)
    except CompareRefused as exc:
        context["error"] = exc.message
        status = 400
    return render(request, "participants/compare.html", context, status=status)


@require_safe
def per_query_csv(request: HttpRequest, submission_id: int) -> HttpResponse:
    """The per-query table as CSV; dev and train splits only (404 on hidden splits, like a missing page)."""
    submission = selectors.submission_for_viewer(submission_id=submission_id, user=request.user)
    if not per_query_allowed(submission.split):
        raise Http404("Per-query values are shown only for dev and train splits.")
    found = selectors.submission_result(submission=submission)
    if found.result is None or not found.per_query:
        raise Http404("This submission has no scores yet.")
    body = build_per_query_csv(split=submission.split, vectors=found.per_query,
                               measures=list(submission.split.dataset.measures or []))
    response = HttpResponse(body, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="submission-{submission.pk}-per-query.csv"'
    return response


def _fusion_candidates(split: Split, user) -> list[Submission]:
    """The split's runs ``user`` may fuse, newest first, in three queries however many there are."""
    qs = (Submission.objects.filter(scored_live_q(), split=split)
          .select_related("split__dataset", "user__profile")
          .prefetch_related(Prefetch("results", queryset=Result.objects.defer("per_query")))
          .order_by("-created_at"))
    return [s for s in qs if fusable_by(s, user)]


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def fusion(request: HttpRequest) -> HttpResponse:
    """Choose 2–5 public runs of a split (``?split=<id>`` or ``?ids=…``) and fuse them; POST creates the fusion."""
    data = request.POST if request.method == "POST" else request.GET
    error = ""
    split = None
    chosen: list[int] = []
    try:
        chosen = parse_ids(data.getlist("ids"))
    except CompareRefused as exc:
        error = exc.message
    if data.get("split", "").isdigit():
        splits = Split.objects.select_related("dataset")
        if not request.user.is_staff:
            splits = splits.filter(dataset__is_published=True)  # an unpublished dataset is not named to others
        split = splits.filter(pk=int(data["split"])).first()
    if split is None and chosen:
        first = Submission.objects.select_related("split__dataset").filter(pk=chosen[0]).first()
        if first is not None and fusable_by(first, request.user):
            split = first.split
    status = 200
    if split is not None:
        try:
            fusion_task_check(split.dataset)
        except FusionRefused as exc:
            error, split, status = exc.message, None, 400
    method = data.get("method", "rrf")
    k_text = str(data.get("k", DEFAULT_K)).strip() or str(DEFAULT_K)
    if request.method == "POST" and not error:
        try:
            if not k_text.isdigit():
                raise FusionRefused("k must be a whole number (60 is the usual choice).")
            parts_by_id = {s.pk: s for s in Submission.objects.select_related("split__dataset").filter(pk__in=chosen)}
            parts = []
            for pk in chosen:
                if pk not in parts_by_id:
                    raise FusionRefused(f"No public submission #{pk} is available to fuse.", status=404)
                parts.append(parts_by_id[pk])
            verdict = upload_check(request)  # the same throttle as uploads and the API
            if not verdict.allowed:
                raise FusionRefused(verdict.message, status=429)
            submission = fusion_create(user=request.user, parts=parts, method=method, k=int(k_text),
                                       system_name=data.get("system_name", ""))
        except FusionRefused as exc:
            error = exc.message
            status = exc.status if exc.status in (403, 429) else 400
        else:
            messages.success(request, "The fusion is queued: a worker fuses the chosen runs and scores the result. "
                                      "It is private until you make it public.")
            return redirect(submission)
    context = {
        "split": split,
        "candidates": _fusion_candidates(split, request.user) if split is not None else [],
        "chosen": chosen,
        "method": method,
        "methods": METHODS,
        "k": k_text,
        "max_parts": MAX_PARTS,
        "error": error,
        "splits": [] if split is not None else list(
            Split.objects.filter(dataset__is_published=True, dataset__task="retrieval")
            .select_related("dataset").order_by("dataset__name", "kind", "name")
        ),
    }
    return render(request, "participants/fusion.html", context, status=status)
