"""The per-category breakdown travels: a new qrels version added on one host, as docs/operations.md says, keeps
every topic's category, and the archive that moves the benchmark carries them (#38, item 3).

On the exporting host (SQLite, the embedded default, in subprocesses like the README's reader): ``load_demo``,
then operations.md's ``import_dataset`` line for a new qrels version of the public dev split, with the topics the
demo exports (no category column) and ``--publish``, the rescoring done, the next start's ``load_demo``; then
``export_benchmark``. Imported here, every topic has the category and subcategory the generator gave it, and the
baseline's page shows the same per-category table as on the exporting host.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest
from django.urls import reverse

from catalogue.models import Split, Topic
from demo.generator import generate
from snapshots.archive.reader import benchmark_import
from submissions.models import Submission
from tests.conftest import run_storage_at

from .test_archive_move import ROOT, _env, _manage

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

DOCUMENTED = re.compile(r"`dc exec web python manage\.py (import_dataset --format trec [^`]*)`")

#: Run on the exporting host after the import: the rescoring (the workers' part), then the dev split's state.
RESCORE_AND_READ = r"""
import json, sys
from catalogue.models import Split
from submissions.models import Submission
from submissions.services.rescoring import submission_rescore_on
dev = Split.objects.get(dataset__slug="demo", name="dev")
for pk in Submission.objects.filter(split=dev, status="scored").values_list("pk", flat=True):
    assert submission_rescore_on(submission_id=pk, qrels_version_id=dev.pending_qrels_id) == "stored"
"""

READ = r"""
import json, sys
from catalogue.models import Split
dev = Split.objects.get(dataset__slug="demo", name="dev")
topics = {t.qid: [t.category, t.subcategory] for t in dev.topics.all()}
json.dump({"version": dev.current_qrels.version, "topics": topics}, open(sys.argv[-1], "w"))
"""


def _qrels_with_more(path, n: int) -> bytes:
    lines = path.read_text().splitlines()
    qids = sorted({line.split()[0] for line in lines})[:n]
    return ("\n".join(lines) + "\n" + "".join(f"{q} 0 {1990 - k} 1\n" for k, q in enumerate(qids))).encode()


def test_categories_survive_a_new_qrels_version_a_restart_and_the_move(tmp_path, client):
    env = _env(tmp_path / "var")
    _manage(env, "migrate", "--noinput", "-v", "0")
    _manage(env, "load_demo", "--depth", "100")
    _manage(env, "load_demo", "--export", str(tmp_path / "files"), "--no-baselines")
    (tmp_path / "new.qrels").write_bytes(_qrels_with_more(tmp_path / "files" / "trec" / "qrels.dev.txt", 5))

    words = shlex.split(DOCUMENTED.findall((ROOT / "docs" / "operations.md").read_text())[0])
    words = [{"SLUG": "demo", "new.qrels": str(tmp_path / "new.qrels")}.get(w, w) for w in words]
    words[words.index("--split") + 1] = "dev"
    done = _manage(env, *words, "--topics", str(tmp_path / "files" / "trec" / "topics.dev.tsv"), "--publish")
    assert "topics kept where these files have none: category of 100 topics" in done.stdout, done.stdout
    _manage(env, "shell", "-c", RESCORE_AND_READ)
    _manage(env, "load_demo", "--depth", "100")  # the next start
    _manage(env, "shell", "-c", READ.replace("sys.argv[-1]", repr(str(tmp_path / "state.json"))))
    _manage(env, "export_benchmark", "demo", "-o", str(tmp_path / "demo.tar"), "--omit-hidden")

    there = json.loads((tmp_path / "state.json").read_text())
    generated = {str(q.id): [q.category, q.subcategory] for q in generate().questions_of("dev")}
    assert there["version"] == 2 and there["topics"] == generated

    with run_storage_at(tmp_path / "runs"):
        benchmark_import(tmp_path / "demo.tar", omit_hidden=True)
        dev = Split.objects.get(dataset__slug="demo", name="dev")
        assert dev.current_qrels.version == 2
        assert {t.qid: [t.category, t.subcategory] for t in Topic.objects.filter(split=dev)} == generated
        sub = Submission.objects.filter(split=dev, status=Submission.Status.SCORED).order_by("pk").first()
        page = client.get(reverse("participants:detail", args=[sub.pk]))
        labels = {row["label"] for row in page.context["analysis"]["categories"]}
    assert labels and "(no category)" not in labels
    assert labels <= {category for category, _ in generated.values()}
