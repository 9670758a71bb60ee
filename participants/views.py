"""The participant's pages: upload, status, my submissions, edit, withdraw, resubmit.

Thin views: fetch with a permission check (another person's private
submission is a 404, never a 403), validate a form, call a service, respond.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from accounts.policy import upload_refusal
from accounts.terms import TermsPending, terms_pending
from campaigns.selectors import UploadPlace, upload_place
from catalogue.models import Dataset, Split
from lexboard import long_poll
from submissions import disclosure, selectors, services
from submissions.errors import ActionRefused, TermsRequired, UploadRefused
from submissions.models import NOT_FINAL, Submission
from submissions.throttling import upload_check

from .analysis import submission_analysis
from .forms import ResubmitForm, SubmissionMetadataForm, UploadForm, VisibilityForm

EXAMPLE_LINE = "{qid} Q0 {docid} 1 14.2 my-system"


def _split_for_upload(dataset_slug: str, split_name: str | None) -> Split:
    dataset = get_object_or_404(Dataset, slug=dataset_slug, is_published=True)
    if split_name:
        return get_object_or_404(Split.objects.select_related("dataset"), dataset=dataset, name=split_name)
    split = dataset.default_split
    if split is None:
        raise Http404("This dataset has no split to submit to.")
    return split


def _refusal_to_form(form, exc: UploadRefused) -> None:
    """The refusal as form errors: the message, then one line per kind of problem (its lines and how many, the first
    one's line and reason); a problem of a field
    (``training_data: say what …``) beside that field."""
    form.add_error(None, exc.message)
    for detail in exc.details[:20]:
        line = detail.get("line")
        reason = detail.get("reason", "")
        name, _, rest = reason.partition(": ")
        if rest and name in form.fields and name != "run":
            form.add_error(name, rest)
        elif reason and reason != exc.message:
            count, lines = detail.get("count") or 1, detail.get("lines") or []
            if count > 1:  # a kind of problem on many lines: how many, the first of them, the first one's reason
                shown = ", ".join(str(n) for n in lines[:5]) + (", …" if count > len(lines[:5]) else "")
                text = f"{count:,} lines ({shown}); line {line}: {reason}"
            else:
                text = f"line {line}: {reason}" if line else reason
            form.add_error("run" if "run" in form.fields else None, text)


def _upload_context(split: Split, user) -> dict:
    first_topic = split.topics.order_by("qid").values_list("qid", flat=True).first() or "q1"
    return {
        "split": split,
        "dataset": split.dataset,
        "quota": selectors.submission_quota(user=user, split=split),
        # The account policy (verified e-mail, curator approval), said before the form is filled in.
        "account_refusal": upload_refusal(user=user, split=split),
        # A shared task's rule (before the opening, or in no team), said before the form is filled in too.
        "task_refusal": _task_refusal(user, split),
        "example_line": EXAMPLE_LINE.format(qid=first_topic, docid=split.dataset.docid_example or "doc1"),
    }


def _task_refusal(user, split: Split) -> UploadPlace | None:
    place = upload_place(user=user, split=split) if user.is_authenticated else UploadPlace()
    return place if place.refusal else None


def _throttled(request: HttpRequest, form) -> bool:
    verdict = upload_check(request)
    if verdict.allowed:
        return False
    form.add_error(None, verdict.message)
    return True


def upload(request: HttpRequest, dataset_slug: str) -> HttpResponse:
    """Upload a run for a dataset split (``?split=NAME``, default: the hidden test split)."""
    split = _split_for_upload(dataset_slug, request.GET.get("split") or request.POST.get("split"))
    if not request.user.is_authenticated:
        # The log-in page says why it is there (not a bare form).
        what = "a run" if split.dataset.task == "retrieval" else "predictions"
        messages.info(request, f"Log in to upload {what} to {split.dataset.name} ({split.name} split).")
        return redirect_to_login(request.get_full_path())
    if pending := terms_pending(user=request.user, dataset=split.dataset):  # before the form: nothing chosen yet
        return _to_the_terms(request, pending)
    if request.method == "POST":
        form = UploadForm(request.POST, request.FILES)
        if form.is_valid() and not _throttled(request, form):
            try:
                submission = services.submission_create(
                    user=request.user, split=split, upload=form.cleaned_data["run"], metadata=form.metadata()
                )
            except TermsRequired as exc:  # new terms while the form was open
                return _to_the_terms(request, exc.pending)
            except UploadRefused as exc:
                _refusal_to_form(form, exc)
            else:
                if submission.status == Submission.Status.WAITING:
                    messages.success(request, "Your run was received. The split's judgments are not published yet: "
                                              "it waits and is scored when the curators publish them.")
                else:
                    messages.success(request, "Your run was received and is queued for scoring.")
                return redirect(submission)
        status = 400
    else:
        form = UploadForm(initial={"visibility": Submission.Visibility.PRIVATE})  # private first
        status = 200
    context = {"form": form, **_upload_context(split, request.user)}
    return render(request, "participants/upload.html", context, status=status)


def _to_the_terms(request: HttpRequest, pending: TermsPending) -> HttpResponse:
    """To the dataset's terms, and back to this upload page once they are accepted."""
    messages.info(request, pending.summary)
    return redirect(f"{pending.page}?{urlencode({'next': request.get_full_path()})}")


def _status_payload(submission: Submission, *, is_owner: bool) -> dict:
    """The status JSON (no value of the run); why a run failed (which quotes the file) goes to its owner and staff only."""
    error = submission.error or None
    if error and not is_owner:
        error = {"message": "Scoring this run failed.", "details": []}
    result = selectors.current_result_of(submission) if submission.status == Submission.Status.SCORED else None
    return {
        "id": submission.pk,
        "status": submission.status,
        "progress": round(submission.progress, 4),
        "attempts": submission.attempts,
        "updated_at": submission.updated_at.isoformat(),
        "error": error,
        # Final for a page that polls: a run waiting for judgments may wait for weeks.
        "is_final": submission.status not in NOT_FINAL,
        "message": disclosure.ladder_note(result, split=submission.split, is_owner=is_owner),
    }


def _result_history(submission: Submission) -> list[dict]:
    """The submission's released scores by qrels version, newest first, as its page shows them.

    A hidden split shows the current version's value only: an earlier version's beside it is a before/after
    pair, and a version that changed one judgment made their difference tell that topic's relevant count and
    whether this run holds the new document (the budget's ``version_deltas``). The versions stay listed.
    """
    split = submission.split
    deltas = disclosure.shows(split, "version_deltas")
    rows = []
    for r in selectors.submission_result_history(submission=submission):
        if not disclosure.result_released(r, split=split):
            continue
        current = r.qrels_version_id == split.current_qrels_id
        if deltas:
            primary = split.dataset.format_value(r.primary_score)
        elif current:
            primary = disclosure.format_released(disclosure.released_primary(r, split=split), split=split)
        else:
            primary = "not shown"
        rows.append({"version": r.qrels_version.version, "at": r.created_at, "current": current, "primary": primary})
    return rows


def detail(request: HttpRequest, submission_id: int) -> HttpResponse:
    """A submission's page: metadata, live status, warnings, errors, scores."""
    submission = selectors.submission_for_viewer(submission_id=submission_id, user=request.user)
    is_owner = submission.manageable_by(request.user)
    found = selectors.submission_result(submission=submission)
    split = submission.split
    dataset = split.dataset
    scores = []
    # Hidden split: a result the Ladder did not release shows no number of its own (docs/security.md).
    shown = found.result if disclosure.result_released(found.result, split=split) else None
    fmt = disclosure.formatter(split)
    if shown is not None:
        released = disclosure.released_scores(shown, split=split, viewer=request.user)
        for name in disclosure.released_measures(split):
            scores.append({"name": name, "value": fmt(released.get(name)), "primary": name == dataset.primary_measure})
    evaluated = disclosure.evaluated_count(shown, split=split,
                                           partitioned=shown is not None and selectors.partition_in_use(split_id=split.pk))
    context = {
        "submission": submission,
        "split": submission.split,
        "dataset": dataset,
        "is_owner": is_owner,
        "result": shown,
        "shown_warnings": disclosure.budget_warnings(submission.warnings, split=split),
        "ladder_note": disclosure.ladder_note(found.result, split=split, is_owner=is_owner),
        "per_query": found.per_query if disclosure.shows(split, "per_query") else {},
        "grid_note": disclosure.grid_note(split),
        "grid_docs": disclosure.GRID_DOCS,
        "scores": scores,
        "events": selectors.submission_events(submission=submission),
        "ordinal": selectors.submission_ordinal(submission=submission),
        # Scores on every qrels version it was scored on: older judgments' numbers stay visible on public splits.
        "result_history": _result_history(submission),
        "version_deltas": disclosure.shows(split, "version_deltas"),
        # During a shared task a run's values are its public part's: its evaluated count beside the split's
        # (public) one would give the private part's by difference, so it is not shown then (the module decides).
        "evaluated_count": evaluated,
        "evaluated_shown": evaluated is not None,
        # What the second implementation checked (results.py _double_entry: every stored measure, every evaluated
        # topic): the count only where the evaluated count itself is shown.
        "verified_measures": len(shown.scores) if shown is not None else 0,
        "verified_values": len(shown.scores) * evaluated if shown is not None and evaluated is not None else None,
        # A publication being rescored: these scores stay on the current version until the switch.
        "pending_qrels": submission.split.pending_qrels if submission.split.pending_qrels_id else None,
        "resubmit_form": ResubmitForm() if is_owner and submission.status == Submission.Status.FAILED
        and submission.file_removed_at is None else None,
        "status_json": _status_payload(submission, is_owner=is_owner),
        # Analyses: aggregates on every split, per-query rows on dev/train only (hidden splits never show them).
        **submission_analysis(submission=submission, result=shown, vectors=found.per_query if shown else {}),
    }
    return render(request, "participants/detail.html", context)


@never_cache
@require_GET
def status(request: HttpRequest, submission_id: int) -> JsonResponse:
    """The status as JSON, asked by ``static/js/status.js``.

    ``?wait=<seconds>`` (lexboard/long_poll.py): a run still queued or scoring is answered once its status or its
    progress has changed, or after ``wait`` seconds (at once when the process holds as many answers as it allows);
    the answer is then read again through the same path, the same as an ordinary request's at that moment.
    """
    try:
        seconds = long_poll.parse_wait(request.GET.get(long_poll.PARAMETER))
    except long_poll.WaitRefused as exc:
        # The API's one error shape (api/errors.py): the script reads JSON whatever the answer.
        return JsonResponse({"error": {"message": exc.message, "details": [{"line": None, "reason": exc.reason}]}},
                            status=400)
    submission = selectors.submission_for_viewer(submission_id=submission_id, user=request.user)
    seen = (submission.status, submission.progress)
    # Held only once it is known to be visible: no id is probed by the time of its answer.
    if seconds and submission.status in NOT_FINAL and long_poll.hold(
            request.META, seconds=seconds,
            settled=lambda: selectors.submission_progress_now(submission_id=submission_id) != seen,
            wakes=lambda key, status: key == str(submission_id)):
        submission = selectors.submission_for_viewer(submission_id=submission_id, user=request.user)
    user = request.user
    is_owner = user.is_authenticated and (user.pk == submission.user_id or user.is_staff)
    return JsonResponse(_status_payload(submission, is_owner=is_owner))


@login_required
def mine(request: HttpRequest) -> HttpResponse:
    """All of the user's submissions with status, primary score and actions."""
    rows = []
    for submission in selectors.submissions_of_user(user=request.user):
        dataset = submission.split.dataset
        rows.append(
            {
                "submission": submission,
                "primary_measure": dataset.primary_measure,
                "primary_score": disclosure.formatter(submission.split)(selectors.primary_score_of(submission))
                if submission.status == Submission.Status.SCORED
                else "",
            }
        )
    # An empty page says where one can upload: the splits that take submissions, one link each.
    open_splits = [] if rows else list(
        Split.objects.filter(dataset__is_published=True, accepts_submissions=True)
        .filter(Q(current_qrels__isnull=False) | Q(open_before_judgments=True))
        .select_related("dataset").order_by("dataset__name", "-hidden", "name")
    )
    return render(request, "participants/mine.html", {"rows": rows, "open_splits": open_splits})


@login_required
def edit(request: HttpRequest, submission_id: int) -> HttpResponse:
    """Edit the metadata (and visibility) of one's own submission."""
    submission = selectors.submission_for_owner(submission_id=submission_id, user=request.user)
    if request.method == "POST":
        form = SubmissionMetadataForm(request.POST, instance=Submission.objects.get(pk=submission.pk))
        if form.is_valid():
            try:
                services.submission_update_metadata(submission=submission, data=form.cleaned_data)
            except UploadRefused as exc:
                _refusal_to_form(form, exc)
            else:
                messages.success(request, "Saved.")
                return redirect(submission)
    else:
        form = SubmissionMetadataForm(instance=submission)
    return render(request, "participants/edit.html", {"form": form, "submission": submission})


@login_required
@require_POST
def visibility(request: HttpRequest, submission_id: int) -> HttpResponse:
    """Make one's submission public, anonymous or private (a button on “My submissions”)."""
    submission = selectors.submission_for_owner(submission_id=submission_id, user=request.user)
    form = VisibilityForm(request.POST)
    if form.is_valid():
        services.submission_set_visibility(submission=submission, visibility=form.cleaned_data["visibility"])
        messages.success(request, f"#{submission.pk} is now {submission.get_visibility_display()}.")
    else:
        messages.error(request, "Choose public, anonymous or private.")
    return redirect(_next_or(request, reverse("participants:mine")))


@login_required
@require_POST
def withdraw(request: HttpRequest, submission_id: int) -> HttpResponse:
    """Take one's submission off the leaderboard for good."""
    submission = selectors.submission_for_owner(submission_id=submission_id, user=request.user)
    try:
        services.submission_withdraw(submission=submission)
    except ActionRefused as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"#{submission.pk} was withdrawn; it no longer appears on the leaderboard.")
    return redirect(_next_or(request, reverse("participants:mine")))


@login_required
def resubmit(request: HttpRequest, submission_id: int) -> HttpResponse:
    """Upload a corrected file: a new submission with the same metadata."""
    submission = selectors.submission_for_owner(submission_id=submission_id, user=request.user)
    form = ResubmitForm(request.POST or None, request.FILES or None)
    if request.method == "POST":
        if form.is_valid() and not _throttled(request, form):
            try:
                new = services.submission_resubmit(submission=submission, upload=form.cleaned_data["run"])
            except (UploadRefused, ActionRefused) as exc:
                if isinstance(exc, UploadRefused):
                    _refusal_to_form(form, exc)
                else:
                    form.add_error(None, exc.message)
            else:
                messages.success(request, f"The corrected file was received as #{new.pk}.")
                return redirect(new)
    context = {"form": form, "submission": submission, **_upload_context(submission.split, request.user)}
    return render(request, "participants/resubmit.html", context, status=400 if form.errors else 200)


def _next_or(request: HttpRequest, default: str) -> str:
    """A local ``next`` path from the form, else ``default`` (never an outside URL)."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                                  require_https=request.is_secure()):
        return target
    return default
