"""The participant's sandbox pages: send an image to a split, follow its run (queue place, outcome), cancel it."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from catalogue.models import Split
from submissions.errors import UploadRefused
from submissions.throttling import upload_check

from .forms import ImageUploadForm
from .models import SandboxRun
from .selectors import run_queue_place, sandbox_worker_refusal, sandbox_worker_silence
from .services import image_submission_create, sandbox_run_cancel, split_policy


@login_required
def upload(request: HttpRequest, split_id: int) -> HttpResponse:
    split = get_object_or_404(Split.objects.select_related("dataset"), pk=split_id)
    policy = split_policy(split)
    # Said before the upload, and refused if sent anyway: an image would wait for ever where no worker runs it.
    no_worker = sandbox_worker_refusal()
    if no_worker is not None:
        form = ImageUploadForm()  # a post is not read: the page's alert says why nothing was taken
        return render(request, "sandbox/upload.html", {
            "split": split, "dataset": split.dataset, "policy": policy, "form": form, "no_worker": no_worker,
            "registry": settings.LEXBOARD_SANDBOX_REGISTRY.strip()}, status=409 if request.method == "POST" else 200)
    form = ImageUploadForm(request.POST or None, request.FILES or None)
    status = 200
    if request.method == "POST":
        status = 400
        # The uploads' throttle, per account and per client network (an IPv6 /64), as every other door (#24 item 5).
        verdict = upload_check(request) if form.is_valid() else None
        if verdict is not None and not verdict.allowed:
            form.add_error(None, verdict.message)
            status = 429
        elif verdict is not None:
            try:
                run = image_submission_create(user=request.user, split=split, upload=form.cleaned_data["archive"],
                                              reference=form.cleaned_data["reference"], metadata=form.metadata())
            except UploadRefused as exc:
                form.add_error(None, exc.message)
            else:
                messages.success(request, "Your image was received and waits in the sandbox queue.")
                return redirect("sandbox:run", run.pk)
    return render(request, "sandbox/upload.html", {"split": split, "dataset": split.dataset, "policy": policy,
                                                   "form": form, "registry": settings.LEXBOARD_SANDBOX_REGISTRY.strip()},
                  status=status)


def _own_run(request: HttpRequest, run_id: int) -> SandboxRun:
    """The run, for its participant and staff; anyone else is told it does not exist (ids are not revealed)."""
    run = SandboxRun.objects.select_related("split__dataset", "image", "submission").filter(pk=run_id).first()
    if run is None or not (request.user.is_staff or run.user_id == request.user.pk):
        raise Http404("No such sandbox run.")
    return run


@login_required
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _own_run(request, run_id)
    return render(request, "sandbox/run.html", {"run": run, "place": run_queue_place(run=run),
                                                "silence": sandbox_worker_silence(run),
                                                "limits": run.limits, "split": run.split})


@require_POST
@login_required
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _own_run(request, run_id)
    if sandbox_run_cancel(run=run):
        messages.success(request, "Cancelled: a running container is stopped and removed within seconds.")
    else:
        messages.info(request, f"This run is {run.get_status_display()}: there is nothing to cancel.")
    return redirect("sandbox:run", run.pk)
