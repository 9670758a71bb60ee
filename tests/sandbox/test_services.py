"""The sandbox's services and selectors that need no podman: the queue place, the periodic re-check."""

from __future__ import annotations

import pytest

from sandbox import services
from sandbox.models import SandboxRun, SoftwareImage
from sandbox.services import refused_run_message
from submissions.errors import UploadRefused


@pytest.mark.django_db
def test_the_queue_place_counts_the_runs_ahead_and_estimates_from_recent_runs(alice, tiny_dataset):
    from sandbox.selectors import run_queue_place

    split = tiny_dataset.splits.get(name="dev")
    image = SoftwareImage.objects.create(sha256="a" * 64, size=1)
    done = SandboxRun.objects.create(user=alice, split=split, image=image, status=SandboxRun.Status.RAN, seconds=60)
    runs = [SandboxRun.objects.create(user=alice, split=split, image=image, limits={"wall_seconds": 600})
            for _ in range(3)]
    places = [run_queue_place(run=run) for run in runs]
    assert [p.position for p in places] == [1, 2, 3]
    assert places[0].describe() == "next in the sandbox queue"
    assert places[2].estimate_seconds == 2 * 60 and "2 ahead, about 2 min" in places[2].describe()
    assert run_queue_place(run=done) is None


@pytest.mark.django_db
def test_the_sweep_re_runs_the_entry_checked_longest_ago_one_at_a_time(alice, tiny_dataset, settings):
    from datetime import timedelta

    from django.utils import timezone

    split = tiny_dataset.splits.get(name="dev")
    image = SoftwareImage.objects.create(sha256="d" * 64, size=1)
    old = timezone.now() - timedelta(days=40)
    first, second = (SandboxRun.objects.create(user=alice, split=split, image=image, status=SandboxRun.Status.RAN,
                                               finished_at=old + timedelta(days=i)) for i in range(2))
    assert services.sandbox_recheck_due() == 0  # off by default
    settings.LEXBOARD_SANDBOX_RECHECK_DAYS = 30
    assert services.sandbox_recheck_due() == 1 and first.reruns.count() == 1
    assert services.sandbox_recheck_due() == 0  # one in flight at a time
    SandboxRun.objects.filter(rerun_of=first).update(status=SandboxRun.Status.RAN)
    assert services.sandbox_recheck_due() == 1 and second.reruns.count() == 1


def test_a_refused_run_on_a_software_only_split_quotes_nothing_of_the_run():
    """The image read the hidden topics; a malformed line could carry their text back in the refusal's reasons."""
    secret = "Quelle est la durée du préavis du bail"
    refusal = UploadRefused("The run has 1 malformed line.",
                            [{"line": 17, "reason": f"expected 6 columns, got 9: {secret[:40]!r}"}])

    shown, kept = refused_run_message(refusal, software_only=True)
    assert secret[:20] not in shown and "17" not in shown and "docs/sandbox.md" in shown
    assert secret[:20] in kept and "line 17" in kept  # the curators' copy

    shown, kept = refused_run_message(refusal, software_only=False)  # a split whose topics are downloadable
    assert secret[:20] in shown and "line 17" in shown and kept == ""


@pytest.mark.django_db
def test_the_same_image_by_archive_then_by_reference_is_refused_as_the_same_run(alice, bob, tiny_dataset):
    from sandbox.models import SplitSandbox

    split = tiny_dataset.splits.get(name="dev")
    policy = SplitSandbox.objects.create(split=split)
    loaded = SoftwareImage.objects.create(sha256="a" * 64, size=1, image_id="c" * 64)  # an archive, loaded
    first = SandboxRun.objects.create(user=alice, split=split, image=loaded, status=SandboxRun.Status.RAN)
    pulled = SoftwareImage.objects.create(sha256="b" * 64, size=1, image_id="c" * 64, reference="r:5000/x@sha256:"
                                          + "b" * 64)
    with pytest.raises(UploadRefused, match=f"already sent this image to this split \\(sandbox run #{first.pk}"):
        services._run_create(user=alice, split=split, image=pulled, metadata={}, policy=policy)
    assert services._run_create(user=bob, split=split, image=pulled, metadata={}, policy=policy).image == pulled
    other = SoftwareImage.objects.create(sha256="d" * 64, size=1, image_id="e" * 64)
    assert services._run_create(user=alice, split=split, image=other, metadata={}, policy=policy).image == other


@pytest.mark.django_db
def test_an_image_whose_run_failed_or_was_refused_counts_against_the_quota(alice, bob, tiny_dataset):
    """A refused sandbox run was free, so an image could probe the box over and over: it now counts like a judged
    upload; the platform's own failures and cancels do not, and an image that made a submission counts once."""
    from submissions.selectors import submission_quota

    split = tiny_dataset.splits.get(name="dev")
    split.daily_limit = 3
    split.save(update_fields=["daily_limit"])
    image = SoftwareImage.objects.create(sha256="e" * 64, size=1)
    for outcome in ("not_a_file", "refused", "timeout"):
        SandboxRun.objects.create(user=alice, split=split, image=image, status=SandboxRun.Status.FAILED,
                                  outcome=outcome)
    for outcome, status in (("platform_error", SandboxRun.Status.FAILED), ("cancelled", SandboxRun.Status.CANCELLED),
                            ("ok", SandboxRun.Status.RAN)):
        SandboxRun.objects.create(user=alice, split=split, image=image, status=status, outcome=outcome)
    quota = submission_quota(user=alice, split=split)
    assert (quota.daily_used, quota.total_used, quota.allowed) == (3, 3, False)
    assert submission_quota(user=bob, split=split).daily_used == 0


def test_podman_is_handed_none_of_the_worker_s_secrets(monkeypatch):
    """podman, conmon and the OCI runtime get the search path and configuration, not the worker's settings."""
    from sandbox.runner import Sandbox

    for name, value in (("SECRET_KEY", "k" * 50), ("DATABASE_URL", "postgres://u:pw@db/x"),
                        ("CELERY_BROKER_URL", "redis://:pw@redis/0"), ("AWS_SECRET_ACCESS_KEY", "s3cret")):
        monkeypatch.setenv(name, value)
    env = Sandbox(containers_conf="/etc/x.conf").env()
    assert set(env) <= {"PATH", "LANG", "LC_ALL", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "HOME",
                        "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF", "CONTAINERS_REGISTRIES_CONF"}
    assert env["CONTAINERS_CONF"] == "/etc/x.conf" and "PATH" in env
