"""The sandbox at BSARD's size: upload to score for the example image, and the sandbox's overhead.

    .venv/bin/python bench/bench_sandbox.py            # as root, with podman and the local Python base image
    .venv/bin/python bench/bench_sandbox.py --smoke    # 200 articles, 20 topics, one round

The data: the demo generator at BSARD's size (22,633 articles, 222 test
topics; ``demo.generator.generate``), stored in a database of the bench's own
(SQLite in ``var/bench-sandbox/``) with the documents' text, as a curator's
import leaves it. The image: ``docker/sandbox-example/`` (stdlib BM25, top 100
per topic), built on ``localhost/lexboard-python:3.11`` and saved as an OCI
archive, as a participant uploads it.

Measured (median of ``--rounds``):

* **by hand** — ``podman run --rm --network=none --read-only`` with /input
  and /output bind-mounted, the peer a participant would use on their own
  machine; and the same script run by the host's Python, no container;
* **the runner** — ``sandbox.runner.run_image`` on the same image and input:
  every limit, the host-mounted /output tmpfs, the cgroup watch, the uid map,
  removal after; its ratio to "by hand" is the sandbox's overhead;
* **upload to score** — the services a request and the two workers run, in
  this process, one after the other: ``image_submission_create`` (checks,
  hashing and storing the archive), ``sandbox_run_execute`` (loading the
  archive into the sandbox's own store — cold on the first upload, skipped on
  the second — writing /input, the run, ``submission_create``),
  ``submission_score_now``. The queue waits are not in it: bench_e2e.py
  measures them for scoring (a fraction of a second on an idle worker).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
VAR = BASE_DIR / "var" / "bench-sandbox"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexboard.settings")
os.environ["LEXBOARD_VAR_DIR"] = str(VAR)
os.environ.setdefault("LEXBOARD_SANDBOX_STORAGE_ROOT", str(VAR / "podman"))
os.environ.setdefault("LEXBOARD_SANDBOX_WORK_DIR", str(VAR / "work"))
os.environ["CELERY_BROKER_URL"] = "memory://"  # the services run in this process: the doorbell rings no one

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.files.uploadedfile import UploadedFile  # noqa: E402
from django.core.management import call_command  # noqa: E402

from catalogue.models import Benchmark, Dataset, Split, Topic  # noqa: E402
from catalogue.services import corpus_set, qrels_version_add  # noqa: E402
from demo.generator import generate  # noqa: E402
from sandbox import runner, services  # noqa: E402
from sandbox.models import SplitSandbox  # noqa: E402
from submissions.services import submission_score_now  # noqa: E402

IMAGE = "localhost/lexboard-sandbox-example:latest"


def seconds(fn) -> tuple[float, object]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def build_data(n_articles: int, n_topics: int) -> Split:
    data = generate(n_articles=n_articles, n_questions=n_topics * 2)
    questions = [q for q in data.questions if q.split == "test"][:n_topics]
    bench = Benchmark.objects.create(slug=f"sandbox-bench-{int(time.time())}", name="Sandbox bench")
    dataset = Dataset.objects.create(benchmark=bench, slug=bench.slug, name="BSARD-sized", language="fr",
                                     docid_example=str(data.articles[0].id), measures=["R@100", "MAP@100", "R@10"],
                                     primary_measure="R@100", depth=100)
    corpus_set(dataset=dataset, ids=[str(a.id) for a in data.articles],
               documents=[{"_id": str(a.id), "title": a.reference, "text": a.text} for a in data.articles])
    split = Split.objects.create(dataset=dataset, name="test", kind="test", hidden=False)
    Topic.objects.bulk_create(Topic(split=split, qid=str(q.id), text=q.text) for q in questions)
    qrels = {str(q.id): {str(a): 1 for a in q.article_ids} for q in questions}
    qrels_version_add(split=split, qrels=qrels)
    SplitSandbox.objects.create(split=split, max_pending_per_participant=5)
    return split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    n_articles, n_topics, rounds = (200, 20, 1) if args.smoke else (22633, 222, args.rounds)
    if reason := runner.available(runner.Sandbox()):
        sys.exit(f"cannot run: {reason}")
    shutil.rmtree(VAR, ignore_errors=True)
    VAR.mkdir(parents=True)
    call_command("migrate", verbosity=0)
    t_data, split = seconds(lambda: build_data(n_articles, n_topics))
    print(f"data: {n_articles} articles, {n_topics} topics stored in {t_data:.1f}s", file=sys.stderr)

    host = runner.Sandbox(containers_conf=runner.default_containers_conf(BASE_DIR))
    subprocess.run([host.podman, "build", "--pull=never", "-q", "-t", IMAGE, str(BASE_DIR / "docker/sandbox-example")],
                   check=True, capture_output=True, env=host.env())
    work = Path(tempfile.mkdtemp(dir=VAR))
    archive = work / "bm25-example.tar"
    t_save, _ = seconds(lambda: subprocess.run([host.podman, "save", "--format", "oci-archive", "-o", str(archive),
                                                IMAGE], check=True, capture_output=True, env=host.env()))
    input_dir = work / "input"
    services.input_write(split=split, folder=input_dir)
    out = work / "out"
    out.mkdir()
    out.chmod(0o777)

    by_hand, host_python, sandboxed = [], [], []
    for i in range(rounds):
        t, _ = seconds(lambda: subprocess.run(
            [host.podman, "run", "--rm", "--network=none", "--read-only", f"--volume={input_dir}:/input:ro",
             f"--volume={out}:/output", "--tmpfs=/tmp", IMAGE], check=True, capture_output=True, env=host.env()))
        by_hand.append(t)
        t, _ = seconds(lambda: subprocess.run(
            [sys.executable, "-I", str(BASE_DIR / "docker/sandbox-example/bm25.py"), "--input", str(input_dir),
             "--output", str(out / "host.trec")], check=True, capture_output=True))
        host_python.append(t)
        t, outcome = seconds(lambda i=i: runner.run_image(sandbox=host, image=IMAGE, input_dir=input_dir,
                                                          work_dir=work / f"r{i}", limits=runner.Limits(),
                                                          name=f"bench-{os.getpid()}-{i}"))
        assert outcome.ok, outcome  # type: ignore[union-attr]
        sandboxed.append(t)
    same = (out / "run.trec").read_bytes() == (work / "r0" / "run.trec").read_bytes()

    pipeline = []
    for n, label in enumerate(("first upload (cold image load)", "same archive, another participant (loaded)")):
        # Another participant: the same participant's identical run is refused as a duplicate entry.
        user = get_user_model().objects.create_user(f"sandbox-bench-{n}", f"bench{n}@example.org", "x")
        with open(archive, "rb") as fh:
            file = UploadedFile(file=fh, name=archive.name, size=archive.stat().st_size)
            t_upload, run = seconds(lambda user=user, file=file: services.image_submission_create(
                user=user, split=split, upload=file, metadata={"system_name": "bm25 sandboxed"}))
        t_sandbox, _ = seconds(lambda: services.sandbox_run_execute(run.pk))  # noqa: B023
        run.refresh_from_db()
        assert run.submission is not None, run.message
        t_score, submission = seconds(lambda: submission_score_now(run.submission.pk))  # noqa: B023
        pipeline.append({"case": label, "upload_s": t_upload, "sandbox_s": t_sandbox, "container_s": run.seconds,
                         "score_s": t_score, "total_s": t_upload + t_sandbox + t_score,
                         "peak_memory_mb": (run.peak_memory_bytes or 0) / 2**20,
                         "primary": submission.results.get().primary_score})  # type: ignore[attr-defined]

    results = {
        "articles": n_articles, "topics": n_topics, "rounds": rounds,
        "archive_mb": archive.stat().st_size / 2**20, "podman_save_s": t_save,
        "by_hand_s": statistics.median(by_hand), "host_python_s": statistics.median(host_python),
        "runner_s": statistics.median(sandboxed),
        "overhead_ratio": statistics.median(sandboxed) / statistics.median(by_hand),
        "same_run_bytes": same, "pipeline": pipeline,
        "load": os.getloadavg()[0], "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    target = BASE_DIR / "var" / "bench-results" / ("sandbox-smoke.json" if args.smoke else "sandbox.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(results, indent=2))
    print(f"| {n_articles} articles, {n_topics} topics | median of {rounds} |\n| --- | --- |")
    print(f"| host Python, no container | {results['host_python_s']:.2f} s |")
    print(f"| podman run by hand | {results['by_hand_s']:.2f} s |")
    print(f"| sandbox runner | {results['runner_s']:.2f} s ({results['overhead_ratio']:.2f}x by hand) |")
    for p in pipeline:
        print(f"| upload to score, {p['case']} | {p['total_s']:.2f} s (upload {p['upload_s']:.2f}, sandbox "
              f"{p['sandbox_s']:.2f} of which container {p['container_s']:.2f}, scoring {p['score_s']:.2f}) |")
    print(f"\nload {results['load']:.1f}; run bytes identical by hand and sandboxed: {same}; results in {target}")
    shutil.rmtree(work, ignore_errors=True)
    runner.podman(services.sandbox_config(), "rmi", "--all", "--force", check=False)


if __name__ == "__main__":
    main()
