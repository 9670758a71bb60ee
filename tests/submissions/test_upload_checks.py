"""The upload checks of round two: bounded work, cheap faults, the coverage rule, runs that cannot mean anything.

Every refusal here is given before a slot is used: nothing is written and the
quota is untouched.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import time
import zlib

import pytest

from evaluation.errors import RunFormatError
from evaluation.runs import scan_run
from submissions import services
from submissions.errors import UploadRefused
from submissions.models import Submission
from submissions.selectors import submission_quota

from .conftest import GOOD_RUN, METADATA, gz, upload

pytestmark = pytest.mark.django_db

#: Covers all 4 topics of the tiny dataset.
FULL_RUN = GOOD_RUN + "q4 Q0 d7 1 1.0 sys\n"


def create(user, split, content=GOOD_RUN, name="run.txt", **kwargs) -> Submission:
    return services.submission_create(
        user=user, split=split, upload=upload(content, name), metadata={**METADATA, **kwargs.pop("metadata", {})},
        **kwargs,
    )


def refused(user, split, content, name="run.txt", **kwargs) -> UploadRefused:
    before = submission_quota(user=user, split=split)
    count = Submission.objects.count()
    with pytest.raises(UploadRefused) as info:
        create(user, split, content, name, **kwargs)
    assert Submission.objects.count() == count
    after = submission_quota(user=user, split=split)
    assert (after.daily_remaining, after.total_remaining) == (before.daily_remaining, before.total_remaining)
    return info.value


# --- cheap faults, each with line: reason -----------------------------------------------


@pytest.mark.parametrize(
    ("content", "line", "words"),
    [
        ("# a comment\n# another\n", 1, "no run line"),
        ("\n\n   \n\n", 1, "no run line"),
        ("# only comments\n\n# and blanks\n", 1, "no run line"),
        ("q1 Q0 d1 1 1.0 " + "t" * 2000 + "\n", 1, "bytes long"),
        ("q1 Q0 " + "d" * 300 + " 1 1.0 sys\n", 1, "document id"),
        (GOOD_RUN + "q" * 150 + " Q0 d1 1 1.0 sys\n", 9, "query id"),
    ],
    ids=["comments-only", "blank-only", "comments-and-blanks", "long-line", "long-docid", "long-qid"],
)
def test_cheap_faults_are_refused_with_the_line_and_no_slot(alice, dev_split, content, line, words):
    for data in (content, gz(content)):
        error = refused(alice, dev_split, data)
        assert error.details, error.message
        assert error.details[0]["line"] == line, error.details
        assert words in error.details[0]["reason"], error.details
    assert not Submission.objects.exists()


def test_a_line_with_no_newline_is_refused_after_a_bounded_read(alice, dev_split):
    error = refused(alice, dev_split, b"q1 Q0 d1 1 1.0 " + b"x" * (5 * 1024 * 1024))
    assert error.details[0]["line"] == 1
    assert "bytes" in error.details[0]["reason"]


def test_the_line_count_cap_is_checked_over_the_whole_file(alice, dev_split, settings):
    settings.LEXBOARD_MAX_RUN_LINES = 100
    content = "".join(f"q1 Q0 d{i} {i} {1000 - i}.0 sys\n" for i in range(1, 150))
    error = refused(alice, dev_split, gz(content))
    assert error.details[0]["line"] == 101


def test_a_bad_line_far_past_the_head_is_refused_at_upload(alice, dev_split):
    lines = [f"q{1 + i % 4} Q0 d{1 + i % 20}x{i} {i + 1} {1e6 - i} sys\n" for i in range(20_000)]
    lines[15_000] = "q1 Q0 d1 1 not-a-score sys\n"
    error = refused(alice, dev_split, gz("".join(lines)))
    assert error.details[0]["line"] == 15_001


def test_the_decompressed_size_cap_is_refused(alice, dev_split, settings):
    settings.LEXBOARD_MAX_DECOMPRESSED_BYTES = 64 * 1024
    settings.LEXBOARD_MAX_GZIP_RATIO = 10_000
    content = "".join(f"q1 Q0 d{i} {i} {1e6 - i} sys\n" for i in range(1, 10_000))
    error = refused(alice, dev_split, gz(content))
    assert "decompress" in error.message


# --- bounded work: gzip bombs ------------------------------------------------------------


def _bomb(decompressed: int, line: bytes = b"\n") -> bytes:
    """A gzip file of ``decompressed`` bytes of one repeated line, built without holding it in memory."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = line * (1024 * 1024 // len(line))
    out = io.BytesIO()
    for _ in range(decompressed // len(block)):
        out.write(comp.compress(block))
    out.write(comp.flush())
    return out.getvalue()


@pytest.mark.slow  # > 2 s (docs/testing.md)
@pytest.mark.parametrize("line", [b"\n", b"q1 Q0 d1 1 1.0 sys\n"], ids=["blank-lines", "one-row"])
def test_a_one_gib_bomb_is_refused_after_a_bounded_amount_of_work(alice, dev_split, line):
    bomb = _bomb(1024 * 1024 * 1024, line)
    assert len(bomb) < 3 * 1024 * 1024
    started = time.process_time()
    error = refused(alice, dev_split, bomb, name="bomb.gz")
    spent = time.process_time() - started
    assert "expands more than" in error.message
    # Inflating the whole GiB takes seconds of CPU; the ratio cap stops after a few MB.
    # (A generous bound: the machine is shared.)
    assert spent < 3.0, spent


def test_a_run_past_the_scan_budget_is_checked_by_the_worker(alice, dev_split, settings):
    settings.LEXBOARD_UPLOAD_SCAN_BYTES = 200
    submission = create(alice, dev_split, FULL_RUN * 1 + "".join(f"q1 Q0 e{i} 9 0.5 sys\n" for i in range(40)))
    assert submission.checked_in_worker
    assert submission.content_sha256 == ""


def test_scan_run_counts_documents_per_topic_in_one_pass():
    scan = scan_run(io.BytesIO(FULL_RUN.encode()), max_line_bytes=100, max_qid_bytes=10, max_docid_bytes=10)
    assert scan.docs_per_topic == {"q1": 3, "q2": 3, "q3": 2, "q4": 1}
    assert scan.n_rows == 9
    with pytest.raises(RunFormatError):
        scan_run(io.BytesIO(b"# nothing\n"))


def test_a_multi_member_gzip_is_read_whole(alice, dev_split):
    data = gzip.compress(GOOD_RUN.encode()) + gzip.compress(b"q4 Q0 d7 1 1.0 sys\n")
    submission = create(alice, dev_split, data, name="run.gz")
    assert submission.content_sha256 == hashlib.sha256(FULL_RUN.encode()).hexdigest()


@pytest.mark.parametrize(("content", "name", "scan_bytes"), [
    (FULL_RUN.encode(), "run.txt", None),
    (b"\xef\xbb\xbf" + FULL_RUN.encode(), "run.txt", None),  # a BOM: the checks skip it, the digests keep it
    (FULL_RUN.replace(" sys\n", " sys\r\n").encode(), "run.txt", None),
    (FULL_RUN.encode()[:-1], "run.txt", None),  # no final line end
    (gz(FULL_RUN), "run.gz", None),
    (gzip.compress(GOOD_RUN.encode()) + gzip.compress(b"q4 Q0 d7 1 1.0 sys\n"), "run.gz", None),
    ((FULL_RUN + "".join(f"q1 Q0 e{i} 9 0.5 sys\n" for i in range(40))).encode(), "run.txt", 200),
    (gz(FULL_RUN + "".join(f"q1 Q0 e{i} 9 0.5 sys\n" for i in range(40))), "run.gz", 200),
], ids=["plain", "bom", "crlf", "no-final-newline", "gzip", "two-gzip-members", "plain-past-budget",
        "gzip-past-budget"])
def test_the_file_s_sha256_is_the_digest_of_the_bytes_sent(alice, dev_split, settings, content, name, scan_bytes):
    """Plain text read to its end gives it from the content's digest; gzip, or a file read in part, from a second
    read of the file: the same digest either way."""
    if scan_bytes:
        settings.LEXBOARD_UPLOAD_SCAN_BYTES = scan_bytes
    submission = create(alice, dev_split, content, name=name)
    assert submission.sha256 == hashlib.sha256(content).hexdigest()
    assert submission.checked_in_worker == bool(scan_bytes)


# --- queries that are not the split's, the coverage rule ----------------------------------


def test_a_run_of_another_splits_queries_is_refused_naming_it(alice, tiny_dataset):
    from catalogue.models import Split, Topic

    other = Split.objects.create(dataset=tiny_dataset, name="train", kind="train")
    for i in range(1, 5):
        Topic.objects.create(split=other, qid=f"t{i}", text="?")
    dev = tiny_dataset.splits.get(name="dev")
    run = "".join(f"t{i} Q0 d{i} 1 1.0 sys\n" for i in range(1, 5))
    error = refused(alice, dev, run)
    assert "not in this split" in error.message
    assert "did you mean train?" in error.message
    assert error.details[0]["line"] == 1


def test_a_run_matching_no_split_is_refused(alice, dev_split):
    error = refused(alice, dev_split, "zz Q0 d1 1 1.0 sys\n")
    assert "not in this split" in error.message


def test_the_coverage_rule_refuses_a_probe_on_a_hidden_split(alice, test_split):
    test_split.min_coverage = 0.9
    test_split.save()
    error = refused(alice, test_split, GOOD_RUN)
    assert "3 of the split's 4 topics" in error.message
    assert "q4" in error.message
    assert create(alice, test_split, FULL_RUN).status == Submission.Status.QUEUED


def test_the_coverage_rule_is_over_the_whole_file_not_the_head(alice, test_split):
    test_split.min_coverage = 1.0
    test_split.save()
    # 60,000 rows of q1 first (past any head), then the other topics.
    head = "".join(f"q1 Q0 d{1 + i % 20} {i + 1} {1e6 - i} sys\n" for i in range(60_000))
    tail = "".join(f"q{k} Q0 d{k} 1 1.0 sys\n" for k in (2, 3, 4))
    assert create(alice, test_split, gz(head + tail), name="run.gz").status == Submission.Status.QUEUED
    error = refused(alice, test_split, gz(head + tail.replace("q4", "q3").replace("d3 1", "d11 1")), name="r.gz")
    assert "3 of the split's 4 topics" in error.message


def test_min_docs_per_topic_when_a_curator_sets_it(alice, test_split):
    test_split.min_docs_per_topic = 2
    test_split.save()
    error = refused(alice, test_split, FULL_RUN)
    assert "fewer than 2 documents" in error.message
    assert "q4: 1" in error.message


def test_public_splits_have_no_coverage_rule(alice, dev_split):
    dev_split.min_coverage = 1.0
    dev_split.save()
    assert create(alice, dev_split, "q1 Q0 d1 1 1.0 sys\n").status == Submission.Status.QUEUED


def test_an_exempt_upload_is_marked(staff, test_split):
    test_split.min_coverage = 1.0
    test_split.save()
    submission = create(staff, test_split, GOOD_RUN, is_baseline=True, coverage_exempt=True)
    assert submission.coverage_exempt


def test_the_worker_refuses_a_large_run_under_the_coverage_rule(alice, test_split, settings):
    settings.LEXBOARD_UPLOAD_SCAN_BYTES = 100
    test_split.min_coverage = 1.0
    test_split.save()
    submission = create(alice, test_split, GOOD_RUN)
    assert submission.checked_in_worker
    services.submission_score(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Submission.Status.FAILED
    assert "3 of the split's 4 topics" in submission.error["message"]


# --- identical content ------------------------------------------------------------------


def test_the_same_content_twice_is_refused_naming_the_entry(alice, dev_split):
    first = create(alice, dev_split, FULL_RUN)
    error = refused(alice, dev_split, gz(FULL_RUN), name="again.gz")
    assert f"#{first.pk}" in error.message
    assert Submission.objects.count() == 1


def test_the_same_content_as_another_users_public_entry_is_flagged(alice, bob, dev_split):
    first = create(alice, dev_split, FULL_RUN)
    copy = create(bob, dev_split, FULL_RUN)
    assert copy.duplicate_of_id == first.pk
    private = create(bob, dev_split, GOOD_RUN, metadata={"visibility": "private"})
    assert create(alice, dev_split, GOOD_RUN).duplicate_of is None
    assert private.duplicate_of is None


def test_a_withdrawn_entry_does_not_block_the_same_content(alice, dev_split):
    first = create(alice, dev_split, FULL_RUN)
    services.submission_withdraw(submission=first)
    assert create(alice, dev_split, FULL_RUN).pk != first.pk


def test_an_exempt_entry_is_marked_on_the_leaderboard(client, staff, test_split):
    test_split.min_coverage = 1.0
    test_split.save()
    exempt = create(staff, test_split, GOOD_RUN, is_baseline=True, coverage_exempt=True)
    held = create(staff, test_split, FULL_RUN.replace(" sys\n", " other\n"), is_baseline=True,
                  metadata={"system_name": "Held"})
    for submission in (exempt, held):
        services.submission_score(submission.pk)
    body = client.get("/d/tiny/?split=test").content.decode()
    assert body.count("exempt from the coverage rule") == 1, body
