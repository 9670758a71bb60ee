"""Leaks of a shared task's private topics across the reveal (review, round on the newer apps).

During the phase a run's released values are its public part's; at the reveal the Ladder is replayed on all
topics. A pair of runs released both times gives the difference of their private parts:
``Npriv * Δprivate = N * Δall - Npub * Δpublic``. Two runs that differ in 25 public topics (improved) and
one private topic are both released during the phase (25 public improvements) and both after the reveal
(26 moves in the same direction), so the one private topic's change is read from the four rounded means.
Through the real services and the API (Django's test client); the hidden split has the Ladder on.
"""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from campaigns.models import Phase
from campaigns.services import team_create
from catalogue.models import Benchmark, Dataset, Split, Topic
from catalogue.services import corpus_set, qrels_version_add
from leaderboard.private_board import phase_reveal
from submissions.models import Submission
from submissions.services import submission_create, submission_score_now
from submissions.services.unpartition import split_partition
from tests.campaigns.conftest import close

pytestmark = pytest.mark.django_db

QIDS = [f"q{i:02d}" for i in range(1, 21)]
PUBLIC = QIDS[:10]
PRIVATE = QIDS[10:]
QRELS = {q: {f"rel-{q}": 1} for q in QIDS}

#: The pair attacks' split: 100 topics, 50 public. The Ladder's noisy margin releases a run when topics improved −
#: worsened, plus Laplace noise of scale 1, reach max(8, ⌈1.645 √changed⌉): each run of the pair improves at least
#: 25 topics of the part it is judged on, against a margin of 9 at most (withheld only by a noise below −16). On
#: the 20 topics above (10 public) the pair's second run improves 5 public topics at most, released about once in
#: 40. And one topic's share is a step of both grids (0.01 on 100 topics, 0.02 on 50): the four rounded means give
#: the probed topic's change exactly.
PAIR_QIDS = [f"q{i:03d}" for i in range(1, 101)]
PAIR_PUBLIC = PAIR_QIDS[:50]
PAIR_PRIVATE = PAIR_QIDS[50:]
PROBED = PAIR_PRIVATE[25]  # a private topic: is the document the attacker puts first for it relevant?


def _run(found: set[str], tag: str, filler: int = 1, qids: list[str] = QIDS) -> bytes:
    """Ten documents per topic; the topic's relevant document first for the topics in ``found``. ``filler``: the
    first of the ten non-relevant documents after it (another filler changes every topic's top documents, not
    its value: a run the Ladder judges, not a near-copy of the first)."""
    lines = []
    for q in qids:
        docs = ([f"rel-{q}"] if q in found else []) + [f"d{n}" for n in range(filler, filler + 10)]
        lines += [f"{q} Q0 {d} {r} {20 - r} {tag}" for r, d in enumerate(docs[:10], start=1)]
    return ("\n".join(lines) + "\n").encode()


def _upload(user, split, found: set[str], name: str, filler: int = 1, qids: list[str] = QIDS) -> Submission:
    run = _run(found, name, filler, qids)
    sub = submission_create(user=user, split=split, upload=SimpleUploadedFile("run.txt", run),
                            metadata={"system_name": name, "visibility": "public"}, enqueue=False)
    return submission_score_now(sub.pk)


def _scores(api: APIClient, sub: Submission) -> dict:
    return api.get(reverse("api:submission", args=[sub.pk])).json()["scores"]


def _hidden_split(slug: str, qids: list[str] = QIDS) -> Split:
    """A hidden split of ``qids`` (20 topics by default) with one relevant document each, the Ladder on."""
    bench = Benchmark.objects.create(slug=slug, name=slug.title())
    dataset = Dataset.objects.create(benchmark=bench, slug=f"{slug}-t1", name=f"{slug.title()} 1", language="en",
                                     docid_example="d1", measures=["R@10"], primary_measure="R@10")
    corpus_set(dataset=dataset, ids=[f"d{i}" for i in range(1, 21)] + [f"rel-{q}" for q in qids])
    split = Split.objects.create(dataset=dataset, name="test", kind="test", hidden=True, daily_limit=0,
                                 total_limit=0)
    assert split.uses_ladder
    for q in qids:
        Topic.objects.create(split=split, qid=q, text=f"Question {q}?", category="civil")
    qrels_version_add(split=split, qrels={q: {f"rel-{q}": 1} for q in qids})
    return split


def _assert_no_private_change(*, on_all: dict, on_public: dict) -> None:
    """Runs a and b released on all topics and on the public part give the sum of b's changes over the private
    topics (``N * Δall - Npub * Δpublic``), i.e. the probed topic's change: at least one must be held back."""
    recovered = None
    if None not in on_all.values() and None not in on_public.values():
        recovered = (len(PAIR_QIDS) * (on_all["b"] - on_all["a"])
                     - len(PAIR_PUBLIC) * (on_public["b"] - on_public["a"]))
    assert recovered is None, (
        f"the private topic {PROBED}'s change of R@10 follows from the four released means: {recovered:.3f} "
        f"(its relevant document is first in b: 1.0)")


def test_runs_released_before_and_after_the_reveal_give_no_private_topics_value(alice, private_run_storage,
                                                                               own_cache_namespace):
    split = _hidden_split("task", PAIR_QIDS)
    now = timezone.now()
    phase = Phase.objects.create(split=split, title="Task 2027", opens_at=now - timedelta(days=1),
                                 closes_at=now + timedelta(days=2), public_share=0.5, public_qids=PAIR_PUBLIC)
    team_create(phase=phase, user=alice, name="Red")
    split = Split.objects.get(pk=split.pk)

    base = set(PAIR_PUBLIC[:25]) | set(PAIR_PRIVATE[:25])
    a = _upload(alice, split, base, "a", qids=PAIR_QIDS)  # 25 public topics over an empty run
    # 25 public improvements, a probe (on all topics after the reveal: 26 improvements).
    b = _upload(alice, split, base | set(PAIR_PUBLIC[25:]) | {PROBED}, "b", filler=11, qids=PAIR_QIDS)
    api = APIClient()
    api.force_authenticate(alice)
    before = {"a": _scores(api, a).get("R@10"), "b": _scores(api, b).get("R@10")}
    assert before["a"] is not None and before["b"] is not None, "both are released on the public part"

    # a's best, with 25 more private
    c = _upload(alice, split, base | set(PAIR_PUBLIC[25:]) | set(PAIR_PRIVATE[25:]), "c", qids=PAIR_QIDS)
    close(phase)
    assert phase_reveal(phase_id=phase.pk).created
    after = {"a": _scores(api, a).get("R@10"), "b": _scores(api, b).get("R@10")}
    _assert_no_private_change(on_all=after, on_public=before)
    # One run alone: its all-topic and public-part means give its private-part mean (N × all − Npub × public),
    # for every run released during the task (not only the private board's rows). None is released on all topics.
    for name, sub in (("a", a), ("b", b), ("c", c)):
        value = _scores(api, sub).get("R@10")
        if value is not None:
            private_mean = (len(PAIR_QIDS) * value - len(PAIR_PUBLIC) * (before.get(name) or 0)) / len(PAIR_PRIVATE)
            raise AssertionError(f"{name}'s private-part mean follows: {private_mean:.2f}")
    assert "only the private board shows" in Submission.objects.get(pk=a.pk).results.get().ladder_message
    # A run sent after the task is ranked on all topics (a new one: c sent again, whatever its tag, is refused).
    d = _upload(alice, Split.objects.get(pk=split.pk), set(PAIR_QIDS) - set(PAIR_PUBLIC[:5]), "d", qids=PAIR_QIDS)
    assert _scores(api, d) == {"R@10": 0.95}


def test_runs_released_before_a_phase_and_during_it_give_no_private_topics_value(alice, private_run_storage,
                                                                               own_cache_namespace):
    """The mirror at the opening: two runs released on all topics before a phase is set up on their split,
    then on the public part during it (``split_partition`` cuts the stored results and replays the Ladder),
    give the difference of their private parts by the same arithmetic. The admin refuses such a split
    (tests/campaigns/test_phases.py); this is the Ladder's second line, for a phase made another way."""
    split = _hidden_split("early", PAIR_QIDS)

    base = set(PAIR_PUBLIC[:25]) | set(PAIR_PRIVATE[:25])
    a = _upload(alice, split, base, "a", qids=PAIR_QIDS)
    # 25 public improvements and a probe: 26 improvements on all topics before the phase.
    b = _upload(alice, split, base | set(PAIR_PUBLIC[25:]) | {PROBED}, "b", filler=11, qids=PAIR_QIDS)
    api = APIClient()
    api.force_authenticate(alice)
    before = {"a": _scores(api, a).get("R@10"), "b": _scores(api, b).get("R@10")}
    assert None not in before.values(), "both are released on all topics before the phase"

    now = timezone.now()
    phase = Phase.objects.create(split=split, title="Late task", opens_at=now - timedelta(hours=1),
                                 closes_at=now + timedelta(days=2), public_share=0.5, public_qids=PAIR_PUBLIC)
    assert split_partition(split=split, public=frozenset(phase.public_qids)) == 2  # what the admin's save does
    team_create(phase=phase, user=alice, name="Red")
    split = Split.objects.get(pk=split.pk)
    during = {"a": _scores(api, a).get("R@10"), "b": _scores(api, b).get("R@10")}
    _assert_no_private_change(on_all=before, on_public=during)
    # One run alone gives its private-part mean the same way: neither is released again on the public part.
    assert during == {"a": None, "b": None}, f"runs shown before the task are shown on its public part: {during}"

    c = _upload(alice, split, base | set(PAIR_PUBLIC[25:]) | set(PAIR_PRIVATE[25:]), "c",
                qids=PAIR_QIDS)  # sent during the phase
    assert _scores(api, c) == {"R@10": 1.0}, "a run of the phase is judged on the public part, as before"


def test_a_private_part_of_fewer_than_five_topics_shows_no_value_on_the_private_board(client, alice, bob,
                                                                                     private_run_storage,
                                                                                     own_cache_namespace):
    """public_share up to 0.95: on a split of 20 topics the private part is one topic, and the private board (no
    Ladder) would show each team's value on it; with two runs differing there, whether a document is relevant."""
    bench = Benchmark.objects.create(slug="small", name="Small")
    dataset = Dataset.objects.create(benchmark=bench, slug="small-t1", name="Small 1", language="en",
                                     docid_example="d1", measures=["R@10"], primary_measure="R@10")
    corpus_set(dataset=dataset, ids=[f"d{i}" for i in range(1, 21)] + [f"rel-{q}" for q in QIDS])
    split = Split.objects.create(dataset=dataset, name="test", kind="test", hidden=True, daily_limit=0,
                                 total_limit=0, ladder=False)
    for q in QIDS:
        Topic.objects.create(split=split, qid=q, text=f"Question {q}?", category="civil")
    qrels_version_add(split=split, qrels=QRELS)
    now = timezone.now()
    public = sorted(Phase.draw_public(QIDS, share=0.95, seed=1))
    [lone] = set(QIDS) - set(public)
    phase = Phase.objects.create(split=split, title="Small task", opens_at=now - timedelta(days=1),
                                 closes_at=now + timedelta(days=2), public_share=0.95, seed=1, public_qids=public)
    team_create(phase=phase, user=alice, name="Red")
    team_create(phase=phase, user=bob, name="Blue")
    split = Split.objects.get(pk=split.pk)
    _upload(alice, split, set(QIDS), "with-it")  # the probed document first for the lone private topic
    _upload(bob, split, set(QIDS) - {lone}, "without-it")
    close(phase)
    assert phase_reveal(phase_id=phase.pk).created
    answer = client.get(reverse("leaderboard:board_export", args=[phase.pk, "json"]))
    shown = [e["scores"] for e in answer.json()["entries"]] if answer.status_code == 200 else []
    assert not any(v is not None for scores in shown for v in scores.values()), (
        f"the private board shows each team's value on the one private topic {lone}: {shown}")
    response = client.get(phase.get_absolute_url())
    assert response.status_code == 200
    page = response.content.decode()
    assert "100.00" not in page, "the task page shows the lone private topic's value"


def _category_means(html: str) -> dict[str, tuple[int, float]]:
    """{category: (n, first value as a fraction)} of the submission page's "By category" table."""
    section = re.search(r"By category.*?</table>", html, flags=re.S)
    out = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", section.group(0) if section else "", flags=re.S):
        cells = [unescape(re.sub(r"<[^>]+>", "", c)).strip()
                 for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, flags=re.S)]
        if len(cells) >= 3 and cells[1].isdigit():
            out[cells[0]] = (int(cells[1]), float(cells[2].replace("−", "-")) / 100)
    return out


def test_category_means_before_and_after_the_reveal_give_no_small_private_group(client, alice, private_run_storage,
                                                                                own_cache_namespace):
    """family: 11 public topics and 1 private. Its mean is shown during the phase (11 ≥ 10) and after the reveal
    (12): 12 × after − 11 × before is the one private family topic's value."""
    family = [f"f{i:02d}" for i in range(1, 13)]
    work = [f"w{i:02d}" for i in range(1, 22)]
    civil = [f"c{i:02d}" for i in range(1, 21)]
    qids = family + work + civil
    public = family[:11] + work[:10] + civil[:10]
    category = {**{q: "family" for q in family}, **{q: "work" for q in work}, **{q: "civil" for q in civil}}
    bench = Benchmark.objects.create(slug="cats", name="Cats")
    dataset = Dataset.objects.create(benchmark=bench, slug="cats-t1", name="Cats 1", language="en",
                                     docid_example="d1", measures=["R@10"], primary_measure="R@10",
                                     category_min_queries=10)
    corpus_set(dataset=dataset, ids=[f"d{i}" for i in range(1, 11)] + [f"rel-{q}" for q in qids])
    split = Split.objects.create(dataset=dataset, name="test", kind="test", hidden=True, daily_limit=0,
                                 total_limit=0)
    for q in qids:
        Topic.objects.create(split=split, qid=q, text=f"Question {q}?", category=category[q])
    qrels_version_add(split=split, qrels={q: {f"rel-{q}": 1} for q in qids})
    now = timezone.now()
    phase = Phase.objects.create(split=split, title="Cats task", opens_at=now - timedelta(days=1),
                                 closes_at=now + timedelta(days=2), public_share=0.6, public_qids=public)
    team_create(phase=phase, user=alice, name="Red")
    split = Split.objects.get(pk=split.pk)

    def run(found: set[str]) -> bytes:
        lines = []
        for q in qids:
            docs = ([f"rel-{q}"] if q in found else []) + [f"d{n}" for n in range(1, 11)]
            lines += [f"{q} Q0 {d} {r} {20 - r} probe" for r, d in enumerate(docs[:10], start=1)]
        return ("\n".join(lines) + "\n").encode()

    sub = submission_create(user=alice, split=split, upload=SimpleUploadedFile("run.txt", run(set(qids))),
                            metadata={"system_name": "probe", "visibility": "public"}, enqueue=False)
    sub = submission_score_now(sub.pk)  # its document first for the private family topic f12 is relevant
    before = _category_means(client.get(sub.get_absolute_url()).content.decode())
    close(phase)
    assert phase_reveal(phase_id=phase.pk).created
    after = _category_means(client.get(sub.get_absolute_url()).content.decode())
    recovered = None
    if "family" in before and "family" in after:
        (n_after, m_after), (n_before, m_before) = after["family"], before["family"]
        recovered = n_after * m_after - n_before * m_before
    assert recovered is None, (
        f"the private family topic's R@10 follows from the family means before and after the reveal: {recovered:.3f}")
    # A hidden split shows no category table at all (tests/security/test_category_leak.py): neither during the
    # phase nor after the reveal.
    assert before == {} and after == {}, (before, after)


def test_the_private_parts_evaluated_topics_are_not_counted(client, alice, bob, private_run_storage,
                                                           own_cache_namespace):
    """Which topics have a relevant document is hidden. During the task a run's page said how many of the
    public part's topics are evaluated (with the split's own count, public, the private part's by difference),
    and the private board said how many private topics are evaluated. Three private topics here have none."""
    split = _hidden_split("counts")
    empty = PRIVATE[:3]
    qrels_version_add(split=split, qrels={q: ({f"rel-{q}": 1} if q not in empty else {"d1": 0}) for q in QIDS})
    split = Split.objects.get(pk=split.pk)
    evaluated_private = len(PRIVATE) - len(empty)
    now = timezone.now()
    phase = Phase.objects.create(split=split, title="Counted", opens_at=now - timedelta(days=1),
                                 closes_at=now + timedelta(days=2), public_share=0.5, public_qids=PUBLIC)
    team_create(phase=phase, user=alice, name="Red")
    team_create(phase=phase, user=bob, name="Blue")
    split = Split.objects.get(pk=split.pk)
    red = _upload(alice, split, set(QIDS), "red")
    _upload(bob, split, set(PUBLIC) | set(PRIVATE[3:8]), "blue")
    page = unescape(re.sub(r"<[^>]+>", " ", client.get(red.get_absolute_url()).content.decode()))
    assert not re.search(rf"\b{len(PUBLIC)} evaluated", page), "the public part's evaluated topics are counted"
    close(phase)
    assert phase_reveal(phase_id=phase.pk).created
    task = unescape(re.sub(r"<[^>]+>", " ", client.get(phase.get_absolute_url()).content.decode()))
    board = client.get(reverse("leaderboard:board_export", args=[phase.pk, "json"])).json()
    assert board["n_queries"] == len(PRIVATE), f"the board counts the evaluated private topics: {board['n_queries']}"
    assert f"{evaluated_private} private topics" not in task
    assert "randomization" in board["method"], "the board ranks both teams, with markers"
    assert f"2^{evaluated_private}" not in board["method"] and f"2^{evaluated_private}" not in task
