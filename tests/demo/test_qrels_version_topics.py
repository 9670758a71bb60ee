"""A new qrels version never touches the topics unless the curator asks (#38, item 3).

docs/operations.md's step 1 of "Rescore after new qrels" is run as written (its command line read from the
file: only ``SLUG`` and ``new.qrels`` are filled in): judgments alone add a version and leave the topics be. A
curator who also passes the topics the demo exports (``qid<TAB>text``, no category column) keeps every topic's
category and subcategory, and the report says so; the per-category breakdown of the submissions' pages survives
the new version, its rescoring and the next start's ``load_demo``.
"""

from __future__ import annotations

import io
import re
import shlex
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from catalogue.models import Dataset, QrelsVersion, Split
from demo.export import demo_files, qrels_to_trec
from demo.generator import generate
from submissions.models import Submission
from submissions.services.rescoring import submission_rescore_on

from .conftest import TEST_DEPTH

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
#: The documented command, inline in step 1 of "Rescore after new qrels".
DOCUMENTED = re.compile(r"`dc exec web python manage\.py (import_dataset --format trec [^`]*)`")


def documented_command() -> list[str]:
    found = DOCUMENTED.findall((ROOT / "docs" / "operations.md").read_text())
    assert len(found) == 1, found
    return shlex.split(found[0])


def run(words: list[str], **fill: str) -> str:
    """The command line with its placeholders filled in, run as ``manage.py`` would."""
    args = [fill.get(w, w) for w in words]
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def topics(split: Split) -> list[tuple]:
    return list(split.topics.order_by("qid").values_list("qid", "text", "category", "subcategory", "extra"))


def changed_qrels(split: Split, n: int) -> bytes:
    """The split's current judgments with ``n`` more: a different version."""
    qrels: dict[str, dict[str, int]] = {}
    for line in QrelsVersion.objects.get(pk=split.current_qrels_id).text().splitlines():
        q, _, doc, grade = line.split()
        qrels.setdefault(q, {})[doc] = int(grade)
    for k, qid in enumerate(sorted(qrels)[:n]):
        qrels[qid][str(1990 - k)] = 1
    return qrels_to_trec(qrels)


def category_labels(client, split: Split) -> set[str]:
    """The per-category breakdown of the split's first baseline's page (the submission's analysis)."""
    sub = Submission.objects.filter(split=split, status=Submission.Status.SCORED).order_by("pk").first()
    page = client.get(reverse("participants:detail", args=[sub.pk]))
    assert page.status_code == 200
    return {row["label"] for row in page.context["analysis"]["categories"]}


def rescore(split: Split) -> None:
    """The workers' part of a publication, done here."""
    split.refresh_from_db()
    version = split.pending_qrels_id
    assert version is not None
    for pk in Submission.objects.filter(split=split, status=Submission.Status.SCORED).values_list("pk", flat=True):
        assert submission_rescore_on(submission_id=pk, qrels_version_id=version) == "stored"
    split.refresh_from_db()
    assert split.current_qrels_id == version and split.pending_qrels_id is None


def test_the_documented_command_adds_a_version_from_qrels_alone_and_keeps_the_categories(
        private_storage, tmp_path, client):
    call_command("load_demo", "--depth", str(TEST_DEPTH), stdout=io.StringIO())
    demo = Dataset.objects.get(slug="demo")
    dev, test = demo.splits.get(name="dev"), demo.splits.get(name="test")
    breakdown = category_labels(client, dev)
    assert len(breakdown) > 3 and "(no category)" not in breakdown
    words = documented_command()
    assert "--topics" not in words and "SLUG" in words and "new.qrels" in words

    # As written (the hidden test split): a new version, unpublished; not a topic touched.
    before = topics(test)
    (tmp_path / "test.qrels").write_bytes(changed_qrels(test, 25))
    out = run(words, SLUG="demo", **{"new.qrels": str(tmp_path / "test.qrels")})
    assert "qrels v2 added, NOT published" in out and "topics not in these files (100 kept as they were)" in out
    assert topics(test) == before and QrelsVersion.objects.filter(split=test).count() == 2

    # The same line for the public dev split, with the topics the demo exports (no category column) and
    # --publish ("the same import_dataset command with --publish"): categories kept, and the report says so.
    exported = tmp_path / "topics.dev.tsv"
    exported.write_bytes(demo_files(generate())["trec/topics.dev.tsv"])
    assert all(line.count("\t") == 1 for line in exported.read_text().splitlines())
    (tmp_path / "dev.qrels").write_bytes(changed_qrels(dev, 5))
    before = topics(dev)
    dev_words = [*words, "--topics", str(exported), "--publish"]
    dev_words[dev_words.index("--split") + 1] = "dev"
    out = run(dev_words, SLUG="demo", **{"new.qrels": str(tmp_path / "dev.qrels")})
    assert "100 topics (unchanged)" in out, out
    assert "split dev: topics kept where these files have none: category of 100 topics, subcategory of 100 " \
           "topics" in out, out
    assert topics(dev) == before
    rescore(dev)
    assert dev.current_qrels.version == 2
    assert category_labels(client, dev) == breakdown

    # The next start (make run's load_demo) rewrites nothing and leaves the curator's version current.
    call_command("load_demo", "--depth", str(TEST_DEPTH), stdout=io.StringIO())
    dev.refresh_from_db()
    assert dev.current_qrels.version == 2 and topics(dev) == before
    assert category_labels(client, dev) == breakdown


def test_topics_given_with_new_judgments_update_what_the_file_holds_and_say_so(private_storage, tmp_path):
    call_command("load_demo", "--no-baselines", stdout=io.StringIO())
    dev = Split.objects.get(dataset__slug="demo", name="dev")
    first, second = dev.topics.order_by("qid")[:2]
    kept = (first.category, first.subcategory, second.subcategory)
    lines = [f"{first.qid}\tA reworded question?\n", f"{second.qid}\t{second.text}\tNew category\n"]
    (tmp_path / "topics.tsv").write_text("".join(lines))
    (tmp_path / "dev.qrels").write_bytes(changed_qrels(dev, 1))
    out = run(["import_dataset", "--format", "trec", "--dataset", "demo", "--split", "dev",
               "--topics", str(tmp_path / "topics.tsv"), "--qrels", str(tmp_path / "dev.qrels")])
    assert "split dev: topics changed from these files: text of 1 topic, category of 1 topic" in out, out
    assert "kept where these files have none: category of 1 topic, subcategory of 2 topics" in out, out
    assert "98 topics already in the split are not in these files; they were kept" in out
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.text == "A reworded question?" and second.category == "New category"
    assert (first.category, first.subcategory, second.subcategory) == kept and all(kept)
