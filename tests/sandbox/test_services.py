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
