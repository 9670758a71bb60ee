"""An image uploaded, run by a sandbox worker, its run scored by a scoring worker; kills, retries, cancels.

Real processes throughout: a Celery worker serving only the sandbox queue
(its own per test, so no message outlives the test), the session's scoring
worker, podman, the test database. The image archives are what
``podman save --format oci-archive`` writes, loaded into the sandbox's own
image store (``LEXBOARD_SANDBOX_STORAGE_ROOT``) by the sandbox worker.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import pytest
from django.core.files.uploadedfile import UploadedFile

from sandbox import services
from sandbox.models import SandboxRun, SoftwareImage, SplitSandbox
from sandbox.runner import podman
from submissions.errors import UploadRefused
from submissions.models import Submission
from tests.waiting import wait_until

from .conftest import SANDBOX

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.slow]

DOCS = [
    ("d1", "Bail", "Le preneur paie le loyer du bail au bailleur."),
    ("d2", "Vente", "Le vendeur doit livrer la chose vendue."),
    ("d3", "Mariage", "Les époux se doivent fidélité et secours."),
    ("d4", "Travail", "Le salarié a droit au salaire convenu."),
    ("d5", "Succession", "Les héritiers reçoivent la succession du défunt."),
    ("d6", "Donation", "La donation entre vifs est irrévocable."),
]
TOPICS = {"q1": "Qui paie le loyer du bail ?", "q2": "Que doit livrer le vendeur ?",
          "q3": "Quel salaire pour le salarié ?", "q4": "Les époux se doivent quoi ?"}
QRELS = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d4": 1}, "q4": {"d3": 1}}


def save_archive(image: str, folder: Path) -> Path:
    path = folder / f"{image.rsplit('/', 1)[-1].replace(':', '-')}.tar"
    if not path.exists():
        subprocess.run([SANDBOX.podman, "save", "--format", "oci-archive", "-o", str(path), image], check=True,
                       capture_output=True, env=SANDBOX.env(), timeout=600)
    return path


@pytest.fixture(scope="session")
def archives(tmp_path_factory):
    folder = tmp_path_factory.mktemp("archives")
    return lambda image: save_archive(image, folder)


@pytest.fixture
def statutes(transactional_db):
    """A public dev split with documents' text, topics and judgments; images taken, small limits."""
    from catalogue.models import Benchmark, Dataset, Split, Topic
    from catalogue.services import corpus_set, qrels_version_add

    bench = Benchmark.objects.create(slug="statutes", name="Statutes")
    ds = Dataset.objects.create(benchmark=bench, slug="statutes", name="Statutes", language="fr",
                                docid_example="d1", measures=["R@10", "MRR@10"], primary_measure="R@10")
    corpus_set(dataset=ds, ids=[d for d, _, _ in DOCS],
               documents=[{"_id": d, "title": t, "text": x} for d, t, x in DOCS])
    split = Split.objects.create(dataset=ds, name="dev", kind="dev", hidden=False)
    for qid, text in TOPICS.items():
        Topic.objects.create(split=split, qid=qid, text=text)
    qrels_version_add(split=split, qrels=QRELS)
    SplitSandbox.objects.create(split=split, memory_mb=256, pids=64, wall_seconds=60, output_mb=16, tmp_mb=16,
                                max_pending_per_participant=3)
    return split


@pytest.fixture(autouse=True)
def archive_storage(private_data_dir):
    """Archives stored where the worker processes look (the session's private folder, as runs are)."""
    from django.core.files.storage import FileSystemStorage

    field = SoftwareImage._meta.get_field("archive")
    saved = field.storage
    field.storage = FileSystemStorage(location=str(private_data_dir), base_url=None)
    yield
    field.storage = saved


@pytest.fixture
def sandbox_worker(settings, worker_factory, worker_queue, tmp_path):
    """``sandbox_worker()`` starts a worker on this test's own sandbox queue (stale heartbeats after 3 s)."""
    queue = f"{worker_queue}-sandbox-{uuid.uuid4().hex[:8]}"
    settings.LEXBOARD_SANDBOX_QUEUE = queue
    settings.LEXBOARD_SANDBOX_HEARTBEAT_STALE_SECONDS = 3
    env = {"LEXBOARD_SANDBOX_QUEUE": queue, "LEXBOARD_SANDBOX_HEARTBEAT_STALE_SECONDS": "3"}
    return lambda extra_env=None: worker_factory(queues=[queue], extra_env={**env, **(extra_env or {})})


def upload(user, split, archive: Path, name="bm25 in the sandbox") -> SandboxRun:
    with open(archive, "rb") as fh:
        file = UploadedFile(file=fh, name=archive.name, content_type="application/x-tar",
                            size=archive.stat().st_size)
        return services.image_submission_create(user=user, split=split, upload=file,
                                                metadata={"system_name": name})


def wait_for(predicate, timeout: float, what: str, worker=None):
    return wait_until(predicate, timeout=timeout, what=what, worker=worker, interval=0.5)


def containers_of(run: SandboxRun) -> list[str]:
    out = podman(services.sandbox_config(), "ps", "--all", "--filter", f"name={SANDBOX.name_prefix}run-{run.pk}$",
                 "--format", "{{.Names}}", check=False).stdout
    return out.split()


def test_it_runs_the_example_image_and_scores_its_run(alice, bob, statutes, archives, example_image, sandbox_worker,
                                                     celery_worker_process):
    archive = archives(example_image)
    run = upload(alice, statutes, archive)
    assert run.status == SandboxRun.Status.QUEUED
    worker = sandbox_worker()
    wait_for(lambda: SandboxRun.objects.get(pk=run.pk).status not in SandboxRun.ACTIVE, 240, "the image ran",
             worker)
    run.refresh_from_db()
    assert run.status == SandboxRun.Status.RAN, (run.outcome, run.message, worker.log()[-3000:])
    assert run.image.image_id == podman(SANDBOX, "image", "inspect", "--format", "{{.Id}}",
                                        example_image).stdout.strip()
    assert run.seconds is not None and run.seconds > 0
    assert run.limits["memory_mb"] == 256 and len(run.run_sha256) == 64
    submission = run.submission
    assert submission is not None and submission.system_name == "bm25 in the sandbox"
    wait_for(lambda: Submission.objects.get(pk=submission.pk).status == Submission.Status.SCORED, 120,
             "the run scored", celery_worker_process)
    result = Submission.objects.get(pk=submission.pk).results.get()
    assert result.scores["R@10"] == 1.0  # each topic's one relevant article is in its top 10
    assert containers_of(run) == []
    assert not (Path(services.settings.LEXBOARD_SANDBOX_WORK_DIR) / f"run-{run.pk}").exists()
    # The same image again from the same participant: refused (the same run), nothing new stored.
    with pytest.raises(UploadRefused, match=f"already sent this image to this split \\(sandbox run #{run.pk}"):
        upload(alice, statutes, archive, name="again")
    # From another participant: taken, the archive stored once.
    second = upload(bob, statutes, archive, name="theirs")
    assert second.image_id == run.image_id and SoftwareImage.objects.count() == 1
    services.sandbox_run_cancel(run=second)


def test_a_hostile_image_fails_with_its_message_and_the_worker_goes_on(alice, statutes, archives, hostile_image,
                                                                       example_image, sandbox_worker):
    network = upload(alice, statutes, archives(hostile_image("network")), name="calls home")
    good = upload(alice, statutes, archives(example_image), name="after it")
    worker = sandbox_worker()
    wait_for(lambda: SandboxRun.objects.get(pk=good.pk).status not in SandboxRun.ACTIVE, 300, "both ran", worker)
    network.refresh_from_db()
    good.refresh_from_db()
    assert network.status == SandboxRun.Status.FAILED and network.outcome == "network"
    assert "network" in network.message and "Network is unreachable" in network.message
    assert network.submission is None
    assert good.status == SandboxRun.Status.RAN, good.message
    assert worker.alive


def test_a_cancel_stops_the_container(alice, statutes, archives, hostile_image, sandbox_worker):
    run = upload(alice, statutes, archives(hostile_image("endless-loop")), name="endless")
    worker = sandbox_worker()
    wait_for(lambda: containers_of(run), 120, "the container started", worker)
    assert services.sandbox_run_cancel(run=SandboxRun.objects.get(pk=run.pk))
    wait_for(lambda: SandboxRun.objects.get(pk=run.pk).status == SandboxRun.Status.CANCELLED, 30, "cancelled",
             worker)
    wait_for(lambda: not containers_of(run), 30, "the container removed", worker)
    assert "stopped and removed" in SandboxRun.objects.get(pk=run.pk).message


def test_a_killed_worker_s_run_is_retried_once_then_failed(alice, statutes, archives, hostile_image,
                                                          sandbox_worker):
    run = upload(alice, statutes, archives(hostile_image("endless-loop")), name="endless")
    for attempt in (1, 2):
        worker = sandbox_worker()
        if attempt == 2:
            assert services.sandbox_sweep()["resent"] == 1  # the heartbeat stood still: sent again

        def running(attempt=attempt):
            return SandboxRun.objects.get(pk=run.pk).attempts == attempt and containers_of(run)

        wait_for(running, 120, f"attempt {attempt} running", worker)
        worker.kill()
        worker.stop()
        time.sleep(4)  # past the stale heartbeat
    assert services.sandbox_sweep()["resent"] == 1
    worker = sandbox_worker()
    wait_for(lambda: SandboxRun.objects.get(pk=run.pk).status == SandboxRun.Status.FAILED, 60, "given up", worker)
    run.refresh_from_db()
    assert run.attempts == 2 and "stopped twice" in run.message
    # The container the dead worker left is removed by the next worker's start-up (or by the next attempt).
    wait_for(lambda: not containers_of(run), 30, "no container left", worker)


def test_it_refuses_what_it_should_before_storing(alice, statutes, settings, tmp_path):
    settings.LEXBOARD_SANDBOX_MAX_IMAGE_BYTES = 1000
    big = tmp_path / "big.tar"
    big.write_bytes(b"\0" * 2000)
    with pytest.raises(UploadRefused, match="1000 bytes"):
        upload(alice, statutes, big)
    settings.LEXBOARD_SANDBOX_MAX_IMAGE_BYTES = 10**9
    not_tar = tmp_path / "run.trec"
    not_tar.write_text("q1 Q0 d1 1 1.0 x\n" * 100)
    with pytest.raises(UploadRefused, match="podman save"):
        upload(alice, statutes, not_tar)
    assert SoftwareImage.objects.count() == 0 and SandboxRun.objects.count() == 0


def test_a_curator_re_run_tells_identical_from_non_deterministic(alice, statutes, archives, example_image,
                                                                 hostile_image, sandbox_worker,
                                                                 celery_worker_process):
    bm25 = upload(alice, statutes, archives(example_image), name="bm25")
    noisy = upload(alice, statutes, archives(hostile_image("nondeterministic")), name="noisy")
    worker = sandbox_worker()

    def scored(run: SandboxRun) -> bool:
        run.refresh_from_db()
        return run.submission is not None and Submission.objects.get(pk=run.submission_id).status == "scored"

    wait_for(lambda: scored(bm25) and scored(noisy), 300, "both ran and scored", worker)
    reruns = [services.sandbox_rerun_create(run=bm25), services.sandbox_rerun_create(run=noisy)]
    wait_for(lambda: all(SandboxRun.objects.get(pk=r.pk).status == SandboxRun.Status.RAN for r in reruns), 120,
             "both re-ran", worker)
    same, changed = (SandboxRun.objects.get(pk=r.pk) for r in reruns)
    assert same.comparison == {"identical": True} and same.submission is None  # a re-run makes no new entry
    assert changed.comparison["identical"] is False
    assert "not deterministic" in changed.comparison["note"]
    assert set(changed.comparison["differences"]) <= {"R@10", "MRR@10"}
    page = Submission.objects.get(pk=bm25.submission_id)
    assert Submission.objects.filter(split=statutes).count() == 2  # the re-runs are no entries
    from django.test import Client

    client = Client()
    client.force_login(alice)
    assert "identical run" in client.get(page.get_absolute_url()).content.decode()
    noisy_page = client.get(Submission.objects.get(pk=noisy.submission_id).get_absolute_url()).content.decode()
    assert "not deterministic" in noisy_page



def test_a_link_to_the_worker_s_environment_brings_nothing_back_to_the_page_or_the_api(
        alice, statutes, archives, hostile_image, sandbox_worker):
    """The attack of the last round, live: the image leaves /output/run.trec as a link to /proc/self/environ, and
    the sandbox worker holds canary secrets. The run fails as not_a_file; the row, its page and its API answer
    hold none of them, and the failed run counts against the participant's quota."""
    from django.test import Client
    from rest_framework.test import APIClient

    from submissions.selectors import submission_quota

    canary = f"LEXBOARD-CANARY-{uuid.uuid4().hex}"
    run = upload(alice, statutes, archives(hostile_image("output-tricks")), name="links home")
    used_before = submission_quota(user=alice, split=statutes).daily_used
    worker = sandbox_worker(extra_env={"LEXBOARD_SANDBOX_CANARY": canary, "SECRET_KEY": f"{canary}-secret-key-" * 3})
    wait_for(lambda: SandboxRun.objects.get(pk=run.pk).status not in SandboxRun.ACTIVE, 240, "the image ran", worker)
    run.refresh_from_db()
    assert run.status == SandboxRun.Status.FAILED and run.outcome == "not_a_file", (run.outcome, run.message)
    assert "is a symbolic link, not a file it wrote" in run.message
    row = " ".join(str(v) for v in SandboxRun.objects.filter(pk=run.pk).values().get().values())
    assert canary not in row and "PATH=" not in row
    page = Client()
    page.force_login(alice)
    html = page.get(f"/sandbox/runs/{run.pk}/").content.decode()
    api = APIClient()
    api.force_authenticate(alice)
    body = api.get(f"/api/v1/sandbox/runs/{run.pk}/").content.decode()
    for seen in (html, body):
        assert "symbolic link" in seen and canary not in seen and "PATH=" not in seen
    assert submission_quota(user=alice, split=statutes).daily_used == used_before + 1
