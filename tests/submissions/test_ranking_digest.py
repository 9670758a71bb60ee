"""The ranking digest's text (``inspection.ranking_text``): the same bytes as the regular expression that defined it.

The digest of a run without its tag column (``Submission.ranking_sha256``) is stored at upload and compared with
later uploads (a closed task's run re-sent under another tag is refused): its text must not change for any input,
or a run stored before would no longer match its copy. The rule was a regular expression whose backtracking cost
0.6 s of the request on a 6.8 MB run; the function that replaced it is checked against it here.
"""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from hypothesis import given, settings, strategies as st

from campaigns.models import Phase
from campaigns.services import team_create
from submissions.services import inspection, submission_create
from submissions.services.inspection import (
    _PAIR_BLOCK,
    _canonical_ranking_text,
    _ContentStream,
    _one_tag_ranking_text,
    _single_spaced_line_ends,
    ranking_text,
)
from tests.submissions.conftest import GOOD_RUN, METADATA, good_run, upload

TAG_COLUMN = re.compile(rb"[ \t]+[^ \t\r\n]+[ \t]*\r?$", re.M)
BLANKS = re.compile(rb"[ \t]+")


def by_the_regex(data: bytes) -> bytes:
    return BLANKS.sub(b" ", TAG_COLUMN.sub(b"", data))


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from([b" ", b"\t", b"\r", b"\n", b"a", b"Q0", b"1.5", b"\x0b", b"\xc3\xa9", b"tag"]),
                max_size=30).map(b"".join))
def test_the_text_is_the_regex_s_for_any_bytes(data):
    assert ranking_text(data) == by_the_regex(data)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from([b" ", b"\n", b"a", b"Q0", b"1.5", b"\xc3\xa9", b"tag", b"\n\n"]),
                max_size=40).map(b"".join))
def test_the_text_of_usual_lines_is_the_regex_s(data):
    """Single spaces and newlines only, the case cut for the whole block at once (and the rest for contrast)."""
    assert ranking_text(data) == by_the_regex(data)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.lists(st.sampled_from([b"a", b"Q0", b"1.5", b"tag", b"tag2", b"\xc3\xa9", b"ta"]), max_size=6)
                .map(b" ".join), max_size=8),
       st.sampled_from([b"tag", b"ta", b"g", b"a"]), st.booleans())
def test_lines_that_mostly_end_with_one_tag_have_the_regex_s_text(rows, tag, ended):
    """Runs whose every line ends with one tag (the usual) take one replace; a line ending otherwise, a line that
    is only the tag, or a tag that is the end of another token must not be taken for it."""
    lines = [row + b" " + tag if i % 3 else row for i, row in enumerate(rows)]
    data = b"\n".join(lines) + (b"\n" if ended else b"")
    assert ranking_text(data) == by_the_regex(data)


def written_the_usual_way(data: bytes) -> bool:
    """The rule of the block cut (``_canonical_ranking_text``): single spaces, none at a line's ends, no tab or CR."""
    return not (b"\t" in data or b"\r" in data or b"  " in data or b" \n" in data or b"\n " in data
                or data.startswith(b" ") or data.endswith(b" "))


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from([b" ", b"\n", b"a", b"Q0", b"1.5", b"\t", b"\r", b"\r\n", b"  ", b"\n\n"]),
                max_size=40).map(b"".join), st.integers(min_value=1, max_value=9))
def test_the_blank_pairs_are_the_substring_tests_s_across_block_borders(data, block):
    """Two spaces, a space after or before a line end: found wherever they are, a pair across two blocks too; and
    where there is none, the line ends counted as ``bytes.count`` counts them, each block's once."""
    pairs = b"  " in data or b"\n " in data or b" \n" in data
    assert _single_spaced_line_ends(data, block=block) == (None if pairs else data.count(b"\n"))


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from([b" ", b"\n", b"a", b"Q0", b"1.5", b"tag", b"\t", b"\r", b"  ", b"\n\n", b" \n"]),
                max_size=40).map(b"".join))
def test_only_lines_written_the_usual_way_are_cut_at_once(data):
    """Leading and trailing blanks, tabs, CRs, double spaces, lines with no space, a missing final newline."""
    assert (_canonical_ranking_text(data) is not None) == written_the_usual_way(data)


def test_a_pair_at_the_border_of_the_real_blocks_is_found():
    for pair in (b"  ", b"\n ", b" \n"):
        for before in (_PAIR_BLOCK - 2, _PAIR_BLOCK - 1, _PAIR_BLOCK):
            data = b"x" * before + pair + b"x"
            assert _single_spaced_line_ends(data) is None, (pair, before)
            assert _canonical_ranking_text(data) is None
    assert _single_spaced_line_ends(b"x y\n" * (_PAIR_BLOCK // 2)) == _PAIR_BLOCK // 2
    assert _single_spaced_line_ends(b"x" * _PAIR_BLOCK + b"\nx\n") == 2  # a line end in two blocks counted once


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from([b"bm25", b"m25", b"bm2", b"xbm25", b"", b"bm25 bm25"]), min_size=1, max_size=8),
       st.booleans())
def test_the_one_tag_cut_takes_only_lines_that_all_end_with_the_tag(middle, ended):
    """The first and the last line end with the tag; the lines between end with it, with a longer or shorter
    token, or with nothing: the one replace is taken only when it cut every line end."""
    rows = [b"1 Q0 d1 1 2.0 bm25", *(b"1 Q0 d2 2 1.0" + (b" " + t if t else b"") for t in middle),
            b"2 Q0 d3 1 1.0 bm25"]
    data = b"\n".join(rows) + (b"\n" if ended else b"")
    every = all(t == b"bm25" or t.endswith(b" bm25") for t in middle)
    for cut in (_one_tag_ranking_text(data), _one_tag_ranking_text(data, line_ends=data.count(b"\n"))):
        assert (cut is not None) == every
        assert cut is None or cut == by_the_regex(data)
    assert ranking_text(data) == by_the_regex(data)


def test_a_usual_run_is_cut_by_one_replace_with_the_regex_s_text():
    run = b"".join(b"%d Q0 d%d %d %.4f bm25\n" % (q, d, d, 100 - d) for q in range(1, 30) for d in range(1, 40))
    assert _one_tag_ranking_text(run) == by_the_regex(run)
    assert _one_tag_ranking_text(run + b"1 Q0 d1 1 1.0 other\n") is None
    assert ranking_text(run[:-1]) == by_the_regex(run[:-1])  # the last line without its line end


@pytest.mark.parametrize("ended", [True, False])
def test_a_usual_run_takes_the_one_tag_cut_not_the_cut_by_positions(monkeypatch, ended):
    """The line ends counted by the blank check are the one-tag cut's (a wrong count would send every usual run to
    the cut by positions, eight times slower, with the same text)."""
    run = b"".join(b"%d Q0 d%d %d %.4f bm25\n" % (q, d, d, 100 - d) for q in range(1, 9) for d in range(1, 9))
    run = run if ended else run[:-1]
    monkeypatch.setattr(inspection, "_cut_ranking_text", None)
    assert _canonical_ranking_text(run) == by_the_regex(run)


def test_a_run_loses_its_tag_and_keeps_its_ranking():
    run = b"q1 Q0 d1 1 3.0 bm25\nq1\tQ0  d2 2 2.0 bm25 \r\nq2 Q0 d3 1 1.0 other\n"
    assert ranking_text(run) == b"q1 Q0 d1 1 3.0\nq1 Q0 d2 2 2.0\nq2 Q0 d3 1 1.0\n"
    assert ranking_text(run) == by_the_regex(run)


def test_a_run_read_in_pieces_has_the_digest_of_the_whole():
    """The upload's stream feeds the digest a piece at a time; a line cut across pieces (a one-line file held
    until its end) gives the same digest as the whole file, without copying the held part at every read."""
    run = b"q1 Q0 d1 1 3.0 bm25\nq1 Q0 d2 2 2.0 bm25\n" + b"q2 Q0 " + b"x" * 300_000 + b" 1 1.0 bm25"
    stream = _ContentStream(SimpleUploadedFile("run.txt", run), compressed=False, budget=len(run) + 1)
    while stream.read(1000):
        pass
    assert stream.ranking.hexdigest() == hashlib.sha256(by_the_regex(run)).hexdigest()


@pytest.mark.django_db
def test_the_ranking_digest_is_made_for_a_shared_tasks_split_only(alice, test_split, monkeypatch):
    """Only a shared task's rule reads the ranking digest (a task's run re-sent after the close under another tag),
    and only a run sent to the task's split is a task's run: elsewhere the request spares its cost (a third of the
    checks' CPU on a BSARD-scale run) and stores none; on the task's split it stores the run's."""
    made = []
    monkeypatch.setattr(inspection, "ranking_text", lambda lines: made.append(len(lines)) or by_the_regex(lines))
    plain = submission_create(user=alice, split=test_split, upload=upload(GOOD_RUN), metadata=METADATA,
                              enqueue=False)
    assert plain.ranking_sha256 == "" and made == []
    now = timezone.now()
    phase = Phase.objects.create(split=test_split, title="A task", opens_at=now - timedelta(days=1),
                                 closes_at=now + timedelta(days=3), time_zone="UTC")
    team_create(phase=phase, user=alice, name="Red")
    task_split_run = submission_create(user=alice, split=test_split, upload=upload(good_run(1)), metadata=METADATA,
                                       enqueue=False)
    assert made and task_split_run.ranking_sha256 == hashlib.sha256(by_the_regex(GOOD_RUN.encode())).hexdigest()
