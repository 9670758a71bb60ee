"""Writes of the sandbox: an image stored and queued, run by a sandbox worker, its run scored as an upload.

* ``image_submission_create`` — the request's cheap checks (the split takes
  images, the archive's size before anything is stored, the account, task
  and quota checks of an upload, the participant's runs in flight), the
  archive stored once by its sha256, a queued ``SandboxRun``, the message sent
  after commit on the sandbox queue.
* ``sandbox_run_execute`` — the task's body, on a sandbox worker: claim the
  row, load the image into the sandbox's own store, write ``/input``, run it
  (``sandbox.runner``), and hand the run to ``submissions.services.
  submission_create``: the same checks, queue and scoring as an uploaded run.
* ``sandbox_run_cancel``, ``sandbox_rerun_create`` (a curator's re-run,
  compared byte for byte and, if it differs, by score), ``sandbox_sweep`` (lost
  messages, runs whose worker died twice, unused images).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import shutil
import socket
import tarfile
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from celery import current_app
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from catalogue.models import Corpus, Dataset, Split
from evaluation.runs import read_run
from submissions import services as submission_services
from submissions.errors import UploadRefused
from submissions.selectors import pick_current_result
from submissions.services.inspection import clean_metadata

from . import registry, runner
from .models import SandboxRun, SoftwareImage, SplitSandbox

logger = logging.getLogger(__name__)

#: The registered task names (sandbox/tasks.py): the wire format of queued messages.
RUN_TASK = "sandbox.run_image"
SWEEP_TASK = "sandbox.sweep"
MAX_ATTEMPTS = 2  # the first attempt and one retry after its worker died
SEND_RETRY_POLICY = {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 2}
_PROJECT_DIR = Path(__file__).resolve().parent.parent


def sandbox_config() -> runner.Sandbox:
    """This host's podman settings (the runner knows no Django)."""
    return runner.Sandbox(
        containers_conf=runner.default_containers_conf(_PROJECT_DIR),
        uid_base=settings.LEXBOARD_SANDBOX_UID_BASE,
        storage_root=str(settings.LEXBOARD_SANDBOX_STORAGE_ROOT),
    )


def _human_bytes(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _refuse(message: str) -> UploadRefused:
    return UploadRefused(message, [{"line": None, "reason": message}])


def split_policy(split: Split) -> SplitSandbox | None:
    return SplitSandbox.objects.filter(split=split).first()


#: Outcomes of a run that failed for the image's own reasons (not the platform's, not a cancel): each counts
#: against the participant's quota like a judged upload, so a refused run is not a free probe of the box.
IMAGE_FAULTS = frozenset({runner.Status.TIMEOUT, runner.Status.OOM, runner.Status.PIDS, runner.Status.DISK_FULL,
                          runner.Status.OUTPUT_TOO_LARGE, runner.Status.NO_RUN, runner.Status.NOT_A_FILE,
                          runner.Status.NETWORK, runner.Status.FAILED, "refused"})


def failed_tries(*, users: list, split: Split) -> list:
    """When each of ``users``' images failed on ``split`` for its own reasons (registered in the submissions'
    ``QUOTA_TRIES``): an image whose run went to scoring is counted as its submission instead."""
    return list(SandboxRun.objects.filter(user__in=users, split=split, status=SandboxRun.Status.FAILED,
                                          outcome__in=IMAGE_FAULTS, rerun_of__isnull=True)
                .values_list("created_at", flat=True))


def software_only_refusal(*, user, split: Split) -> str | None:
    """A person's run file refused on a software-only split (registered in submissions' UPLOAD_RULES)."""
    if SplitSandbox.objects.filter(split=split, software_only=True).exists():
        return (f"The split {split} takes software only: submit a container image "
                f"(/sandbox/splits/{split.pk}/submit/), which the platform runs on its hidden topics.")
    return None


# --- taking an image -----------------------------------------------------------------------------------------


def _check_archive(upload: UploadedFile) -> None:
    """An OCI layout (``oci-layout`` and ``index.json``) or a Docker archive (``manifest.json``) at the top."""
    upload.seek(0)
    try:
        with tarfile.open(fileobj=upload, mode="r|*") as tar:
            names = set()
            for count, member in enumerate(tar):
                names.add(member.name.lstrip("./"))
                if {"oci-layout", "index.json"} <= names or "manifest.json" in names or count > 10000:
                    break
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise _refuse(
            f"The file is not a tar archive ({exc}). Upload what `podman save --format oci-archive -o image.tar "
            "IMAGE` or `docker save -o image.tar IMAGE` writes."
        ) from None
    finally:
        upload.seek(0)
    if not ({"oci-layout", "index.json"} <= names or "manifest.json" in names):
        raise _refuse(
            "The archive holds no image: neither oci-layout and index.json (an OCI archive) nor manifest.json (a "
            "Docker archive) at its top. Upload what `podman save --format oci-archive -o image.tar IMAGE` writes."
        )


def image_store(*, upload: UploadedFile) -> SoftwareImage:
    """The archive stored once by the sha256 of its bytes: a second upload of the same bytes reuses it."""
    digest = hashlib.sha256()
    upload.seek(0)
    for chunk in upload.chunks():
        digest.update(chunk)
    sha = digest.hexdigest()
    upload.seek(0)
    image = SoftwareImage.objects.filter(sha256=sha).first()
    if image is not None and image.archive and image.archive.storage.exists(image.archive.name):
        SoftwareImage.objects.filter(pk=image.pk).update(last_used_at=timezone.now())
        return image
    if image is None:
        image = SoftwareImage(sha256=sha, size=upload.size or 0)
    image.archive.save(f"{sha}.tar", upload, save=False)
    image.last_used_at = timezone.now()
    image.save()
    return image


def image_size_refusal(size: int, *, what: str = "The image archive is") -> str | None:
    """Why an image of ``size`` bytes is refused (over ``LEXBOARD_SANDBOX_MAX_IMAGE_BYTES``); None if it is not.

    Asked of an archive's size, of a registry image's compressed layers, and of a request's declared length
    before its body is read (the API), so an oversized image is refused before a byte of it is stored."""
    cap = settings.LEXBOARD_SANDBOX_MAX_IMAGE_BYTES
    if size <= cap:
        return None
    return (f"{what} {_human_bytes(size)}; the limit is {_human_bytes(cap)}. Build on a slim base "
            "image, leave build tools and caches out (a multi-stage build), or ask the curators.")


def registry_config() -> registry.Registry | None:
    """The deployment's registry (``LEXBOARD_SANDBOX_REGISTRY``), or None: images by reference are off."""
    host = settings.LEXBOARD_SANDBOX_REGISTRY.strip().rstrip("/")
    if not host:
        return None
    return registry.Registry(host=host, insecure=settings.LEXBOARD_SANDBOX_REGISTRY_INSECURE)


REGISTRY_OFF = ("This site has no image registry, so it takes images as archives only: upload what `podman save "
                "--format oci-archive -o image.tar IMAGE` writes.")


def _reference_parse(reference: str) -> tuple[registry.Registry, registry.Reference]:
    config = registry_config()
    if config is None:
        raise _refuse(REGISTRY_OFF)
    try:
        return config, registry.reference_parse(reference, registry=config)
    except registry.RegistryError as exc:
        raise _refuse(exc.message) from None


def _reference_resolve(reference: str, config: registry.Registry) -> registry.Resolved:
    """The reference pinned by the registry's API, its compressed size held to the cap; nothing stored yet."""
    try:
        resolved = registry.resolve(reference, registry=config)
    except registry.RegistryError as exc:
        raise _refuse(exc.message) from None
    if refusal := image_size_refusal(resolved.compressed_bytes,
                                     what=f"The image {resolved.reference} is, its layers compressed,"):
        raise _refuse(refusal)
    return resolved


def image_store_reference(*, resolved: registry.Resolved, config: registry.Registry) -> SoftwareImage:
    """A registry image stored once by its manifest's digest; the row keeps the latest pinned reference to it."""
    sha = resolved.manifest_digest.removeprefix("sha256:")
    pinned = resolved.pinned(config)
    image, created = SoftwareImage.objects.get_or_create(sha256=sha, defaults=dict(
        reference=pinned, size=resolved.compressed_bytes,
        image_id=resolved.config_digest.removeprefix("sha256:"), last_used_at=timezone.now()))
    if not created:
        SoftwareImage.objects.filter(pk=image.pk).update(last_used_at=timezone.now(), reference=pinned)
        image.refresh_from_db()
    return image


def image_submission_create(*, user, split: Split, metadata: dict[str, Any], upload: UploadedFile | None = None,
                            reference: str = "") -> SandboxRun:
    """Check an image cheaply, store it once, queue its run; the sandbox worker runs it after commit.

    The image is an archive (``upload``) or a reference to an image of the
    deployment's registry (``reference``: ``NAME:TAG`` or ``NAME@sha256:…``),
    resolved here to its digest and size by the registry's API before
    anything is stored. Raises ``UploadRefused`` (nothing stored) with a
    message naming the limit or the field to fix.
    """
    policy = split_policy(split)
    if policy is None or not policy.accepts_images:
        raise _refuse(f"The split {split} does not take container images: upload a run file instead.")
    if (upload is None) == (not reference):
        raise _refuse("Give the image either as an archive or as a reference to the site's registry "
                      "(NAME:TAG), not both." if reference else
                      "Give the image: an archive (what `podman save --format oci-archive` writes) or a reference "
                      "to the site's registry (NAME:TAG).")
    config: registry.Registry | None = None
    if upload is not None:
        size = upload.size or 0
        if refusal := image_size_refusal(size):
            raise _refuse(refusal)
        if size == 0:
            raise _refuse("The file is empty: upload the image archive `podman save --format oci-archive` writes.")
    else:
        config, _ = _reference_parse(reference)
    values = clean_metadata(metadata)
    if not values.get("system_name"):
        raise UploadRefused("Give the system a name.", [{"line": None, "reason": "system_name: required"}])
    submission_services.check_provenance(split=split, values=values)  # its run is not asked again
    submission_services.upload_precheck(user=user, split=split)
    in_flight = SandboxRun.objects.filter(user=user, split=split, status__in=SandboxRun.ACTIVE).count()
    if in_flight >= policy.max_pending_per_participant:
        raise _refuse(
            f"You have {in_flight} image(s) queued or running on this split; the limit is "
            f"{policy.max_pending_per_participant} at once. Wait for one to finish, or cancel one."
        )
    if upload is not None:
        _check_archive(upload)
        with transaction.atomic():
            image = image_store(upload=upload)
            return _run_create(user=user, split=split, image=image, metadata=metadata, policy=policy)
    if config is None:  # the reference was parsed above, with the registry
        raise _refuse(REGISTRY_OFF)
    resolved = _reference_resolve(reference, config)
    with transaction.atomic():
        image = image_store_reference(resolved=resolved, config=config)
        return _run_create(user=user, split=split, image=image, metadata=metadata, policy=policy)


def _run_create(*, user, split: Split, image: SoftwareImage, metadata: dict[str, Any],
                policy: SplitSandbox) -> SandboxRun:
    """The queued run of a stored image (in the caller's transaction): the same image twice on a split is refused.

    The same image is the same stored row, or another row with the same image id (an archive already loaded,
    and a registry image, whose id is known at submission, are two rows of one image)."""
    same = Q(image=image) | Q(image__image_id=image.image_id) if image.image_id else Q(image=image)
    earlier = SandboxRun.objects.filter(same, user=user, split=split, rerun_of__isnull=True).exclude(
        status__in=[SandboxRun.Status.FAILED, SandboxRun.Status.CANCELLED]).first()
    if earlier is not None:
        raise _refuse(
            f"You already sent this image to this split (sandbox run #{earlier.pk}, "
            f"{earlier.created_at:%Y-%m-%d %H:%M} UTC, {earlier.get_status_display()}): the same image on the "
            "same topics makes the same run. Change the image, or open that entry."
        )
    run = SandboxRun.objects.create(user=user, split=split, image=image, metadata=metadata,
                                    limits=policy.limits_dict())
    transaction.on_commit(lambda: sandbox_run_enqueue(run_id=run.pk))
    return run


def sandbox_run_enqueue(*, run_id: int) -> bool:
    """Ring the sandbox queue's doorbell; never raises (the sweep rings again)."""
    try:
        current_app.send_task(RUN_TASK, args=[run_id], queue=settings.LEXBOARD_SANDBOX_QUEUE, retry=True,
                              retry_policy=SEND_RETRY_POLICY)
    except Exception:
        logger.warning("could not send sandbox run %s; the sweep will resend it", run_id, exc_info=True)
        return False
    SandboxRun.objects.filter(pk=run_id).update(enqueued_at=timezone.now())
    return True


def sandbox_run_cancel(*, run: SandboxRun) -> bool:
    """Cancel a run: a queued one at once, a running one by its worker, which stops and removes the container."""
    return run.request_cancel()


def sandbox_rerun_create(*, run: SandboxRun) -> SandboxRun:
    """A curator's re-run of an entry: the same image on the same split, compared with the first run when done."""
    if run.status != SandboxRun.Status.RAN:
        raise _refuse("Only a run that produced its run can be re-run.")
    original = run.rerun_of or run
    rerun = SandboxRun.objects.create(user=run.user, split=run.split, image=run.image, metadata=run.metadata,
                                      limits=run.limits, rerun_of=original)
    transaction.on_commit(lambda: sandbox_run_enqueue(run_id=rerun.pk))
    return rerun


# --- running it (the sandbox worker) -----------------------------------------------------------------------------


def input_write(*, split: Split, folder: Path) -> str:
    """``/input``: the corpus (BEIR corpus.jsonl) and the split's topics (topics.jsonl); their combined sha256."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    digest = hashlib.sha256()
    corpus = Corpus.objects.filter(dataset_id=split.dataset_id).first()
    with open(folder / "corpus.jsonl", "wb") as out:
        if corpus is not None and corpus.documents_gz:
            with gzip.open(io.BytesIO(bytes(corpus.documents_gz))) as docs:
                for chunk in iter(lambda: docs.read(1 << 20), b""):
                    out.write(chunk)
                    digest.update(chunk)
        elif corpus is not None:  # ids only: the documents' text is not on the platform
            for docid in corpus.ids():
                line = json.dumps({"_id": docid, "title": "", "text": ""}).encode() + b"\n"
                out.write(line)
                digest.update(line)
    with open(folder / "topics.jsonl", "wb") as out:
        for qid, text in split.topics.order_by("qid").values_list("qid", "text"):
            line = json.dumps({"_id": qid, "text": text}, ensure_ascii=False).encode() + b"\n"
            out.write(line)
            digest.update(line)
    for path in folder.iterdir():
        path.chmod(0o644)
    return digest.hexdigest()


def _image_loaded(sandbox: runner.Sandbox, image: SoftwareImage) -> str:
    """The image's id in this host's sandbox store, loading the archive (or pulling the registry image by its
    digest) the first time."""
    if image.image_id and runner.podman(sandbox, "image", "exists", image.image_id, check=False).returncode == 0:
        return image.image_id
    if image.reference:
        config = registry_config()
        # --tls-verify=false only for the registry the operators declared insecure, never for another host.
        insecure = config is not None and config.insecure and image.reference.startswith(f"{config.host}/")
        image_id = registry.image_pull(sandbox, pinned=image.reference, image_id=image.image_id, insecure=insecure)
        SoftwareImage.objects.filter(pk=image.pk).update(image_id=image_id)
        return image_id
    storage, name = image.archive.storage, image.archive.name
    try:
        image_id = runner.image_load(sandbox, Path(storage.path(name)))
    except NotImplementedError:  # object storage: a local copy first
        with tempfile.NamedTemporaryFile(dir=settings.LEXBOARD_SANDBOX_WORK_DIR, suffix=".tar") as local:
            with storage.open(name, "rb") as remote:
                shutil.copyfileobj(remote, local, 1 << 20)
            local.flush()
            image_id = runner.image_load(sandbox, Path(local.name))
    SoftwareImage.objects.filter(pk=image.pk).update(image_id=image_id)
    return image_id


def sandbox_run_execute(run_id: int) -> None:
    """Run one queued image (the task's body); every outcome is written on the row."""
    run = SandboxRun.objects.select_related("split__dataset", "image", "user").filter(pk=run_id).first()
    if run is None:
        return
    stale = timezone.now() - timedelta(seconds=settings.LEXBOARD_SANDBOX_HEARTBEAT_STALE_SECONDS)
    sandbox = sandbox_config()
    work = Path(settings.LEXBOARD_SANDBOX_WORK_DIR) / f"run-{run.pk}"
    if not run.claim(worker=f"{socket.gethostname()}", max_attempts=MAX_ATTEMPTS, stale_before=stale):
        run.refresh_from_db()
        if run.status == SandboxRun.Status.RUNNING and run.attempts >= MAX_ATTEMPTS and \
                run.heartbeat_at is not None and run.heartbeat_at < stale:
            if run.mark_failed(outcome=runner.Status.PLATFORM, message=(
                    "The sandbox worker running this image stopped twice (killed, or its host went down); the run "
                    "was given up. Submit it again; if it happens again, tell the curators.")):
                runner.run_remove(sandbox, name=f"run-{run.pk}", work_dir=work / "run")
                shutil.rmtree(work, ignore_errors=True)
        return
    try:
        try:
            image_id = _image_loaded(sandbox, run.image)
        except (runner.SandboxUnavailable, OSError) as exc:
            run.mark_failed(outcome=runner.Status.PLATFORM, message=(
                f"The platform could not pull the image {run.image.reference} from its registry: {exc}. If it was "
                "deleted from the registry, push it again and submit it again." if run.image.reference else
                f"The platform could not load the image: {exc}. Check that the archive is what `podman save "
                "--format oci-archive` writes, and submit it again."))
            return
        input_sha = input_write(split=run.split, folder=work / "input")
        limits = runner.Limits(**run.limits) if run.limits else runner.Limits()
        policy = split_policy(run.split)
        software_only = policy is not None and policy.software_only
        outcome = runner.run_image(sandbox=sandbox, image=image_id, input_dir=work / "input", work_dir=work / "run",
                                   limits=limits, name=f"run-{run.pk}", cancelled=run.beat,
                                   quote_stderr=not software_only)
        measured: dict[str, Any] = dict(seconds=outcome.seconds, peak_memory_bytes=outcome.peak_memory_bytes,
                                        input_sha256=input_sha, stderr_tail=outcome.stderr_tail[-2000:])
        if outcome.status is runner.Status.CANCELLED:
            run.mark_cancelled(**measured)
            return
        if not outcome.ok or outcome.run_path is None:
            run.mark_failed(outcome=outcome.status, message=outcome.message, **measured)
            return
        measured.update(run_sha256=_sha256_file(outcome.run_path), run_bytes=outcome.run_bytes)
        if run.rerun_of_id:
            measured["comparison"] = _compare(run=run, path=outcome.run_path, sha=measured["run_sha256"],
                                              input_sha=input_sha)
            run.mark_ran(outcome=outcome.status, message="Re-run done.", **measured)
            return
        try:
            # One transaction: the scoring message leaves at commit, when the entry already carries its mark.
            with transaction.atomic(), open(outcome.run_path, "rb") as fh:
                upload = UploadedFile(file=fh, name="run.trec", content_type="text/plain", size=outcome.run_bytes)
                submission = submission_services.submission_create(
                    user=run.user, split=run.split, upload=upload, metadata=run.metadata, made_by_platform=True)
                run.mark_ran(outcome=outcome.status, message="The image ran; its run went to scoring.",
                             submission=submission, **measured)
        except UploadRefused as exc:
            message, kept = refused_run_message(exc, software_only=software_only)
            if kept:
                measured["stderr_tail"] = (measured["stderr_tail"] + "\n" + kept)[-4000:]
            run.mark_failed(outcome="refused", message=message, **measured)
            return
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def refused_run_message(exc: UploadRefused, *, software_only: bool) -> tuple[str, str]:
    """What the image's owner reads when its run was refused, and what is kept for curators only.

    The reasons quote the run's own lines (40 characters each). On a software-only split the image has read the
    hidden topics: a malformed line would carry their text back to its owner. There the owner reads that the run
    did not follow the format and where the format is described, never a quoted token nor a line number (which
    line fails is a channel too); the reasons go to the curators' copy beside the image's stderr.
    """
    reasons = "; ".join(f"line {d['line']}: {d['reason']}" if d.get("line") else str(d.get("reason"))
                        for d in exc.details[:3])
    if software_only:
        return ("The image ran, but its run was refused: /output/run.trec does not follow the run format "
                "(docs/sandbox.md, 'The contract'). On a split that takes software only the reasons are kept for the "
                "curators, not shown: they would quote the run, which was made from hidden topics."), \
            f"run refused: {exc.message} ({reasons})"
    return f"The image ran, but its run was refused: {exc.message}" + (f" ({reasons})" if reasons else ""), ""


def _compare(*, run: SandboxRun, path: Path, sha: str, input_sha: str) -> dict[str, Any]:
    """The re-run against the first run: identical bytes, else the scores on the current judgments, both ways."""
    first = run.rerun_of
    if first is None:
        return {}
    if first.run_sha256 == sha and first.input_sha256 == input_sha:
        return {"identical": True}
    if first.input_sha256 != input_sha:
        note = "the input changed since the first run (new topics or corpus)"
    else:
        note = "same image, same input: the image is not deterministic"
    comparison: dict[str, Any] = {"identical": False, "note": note, "differences": {}}
    submission = first.submission
    dataset: Dataset = run.split.dataset
    version = run.split.current_qrels
    if submission is None or version is None or dataset.task != Dataset.Task.RETRIEVAL:
        return comparison
    before = pick_current_result(submission.results.all(), current_qrels_id=version.pk)
    with open(path, "rb") as fh:
        parsed = read_run(fh, name="rerun", max_lines=settings.LEXBOARD_MAX_RUN_LINES,
                          max_bytes=settings.LEXBOARD_MAX_DECOMPRESSED_BYTES)
    after = submission_services.result_compute(dataset=dataset, version=version, run=parsed,
                                               source=lambda: open(path, "rb"))
    if before is not None:
        comparison["differences"] = {
            name: round(after.scores[name] - before.scores[name], 6)
            for name in after.scores if name in before.scores and after.scores[name] != before.scores[name]
        }
    return comparison


# --- the sweep -----------------------------------------------------------------------------------------------


def sandbox_sweep(*, now=None) -> dict[str, int]:
    """Resend queued runs whose message was lost, hand runs whose worker went silent to a new attempt (or give
    them up after the second), and remove images no entry needs."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.LEXBOARD_SANDBOX_HEARTBEAT_STALE_SECONDS)
    resent = 0
    lost = SandboxRun.objects.filter(
        Q(status=SandboxRun.Status.QUEUED, cancel_requested=False)
        & (Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=stale))
        | Q(status=SandboxRun.Status.RUNNING, heartbeat_at__lt=stale)
    ).values_list("pk", flat=True)
    for run_id in lost:
        resent += sandbox_run_enqueue(run_id=run_id)
    return {"resent": resent, "rechecks": sandbox_recheck_due(now=now),
            "images_removed": sandbox_images_collect(now=now)}


def sandbox_recheck_due(*, now=None) -> int:
    """The periodic re-run: one reproduced entry per sweep whose last check is older than
    ``LEXBOARD_SANDBOX_RECHECK_DAYS`` (0: never), the one checked longest ago first; at most one re-run in flight."""
    days = settings.LEXBOARD_SANDBOX_RECHECK_DAYS
    if days <= 0 or SandboxRun.objects.filter(rerun_of__isnull=False, status__in=SandboxRun.ACTIVE).exists():
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    due = (SandboxRun.objects.filter(status=SandboxRun.Status.RAN, rerun_of__isnull=True, finished_at__lt=cutoff,
                                     submission__withdrawn_at__isnull=True)
           .exclude(reruns__created_at__gte=cutoff).order_by("finished_at").first())
    if due is None:
        return 0
    sandbox_rerun_create(run=due)
    return 1


def sandbox_images_collect(*, now=None) -> int:
    """Remove the images no entry needs: none of their runs is in flight or made a submission still standing,
    and unused for ``LEXBOARD_SANDBOX_IMAGE_KEEP_DAYS``. The row, the archive and (on this host) the image go."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.LEXBOARD_SANDBOX_IMAGE_KEEP_DAYS)
    needed = Q(runs__status__in=SandboxRun.ACTIVE) | Q(
        runs__submission__isnull=False, runs__submission__withdrawn_at__isnull=True)
    unused = SoftwareImage.objects.filter(last_used_at__lt=cutoff).exclude(needed).distinct()
    removed = 0
    sandbox = sandbox_config() if runner.available(sandbox_config()) is None else None
    for image in unused:
        SandboxRun.objects.filter(image=image).delete()
        if image.archive:
            image.archive.delete(save=False)
        if sandbox is not None and image.image_id:
            runner.image_remove(sandbox, image.image_id)
        image.delete()
        removed += 1
    return removed
