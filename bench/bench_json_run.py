"""Peak memory of the web process, and of its child, converting the largest JSON run it accepts (#36 item 3).

    .venv/bin/python bench/bench_json_run.py            # a JSON run just under LEXBOARD_UPLOAD_SCAN_BYTES
    .venv/bin/python bench/bench_json_run.py --smoke    # 4 MiB

A retrieval upload in JSON (``{qid: {docid: score}}``, MTEB, ranx) is converted in the request into the TREC run
it stands for (``submissions.services.inspection.json_run_as_trec``). The largest one read is just under
``LEXBOARD_UPLOAD_SCAN_BYTES`` (128 MiB) of content. Each variant runs in a fresh process (Django set up, the
upload an on-disk file as Django hands a large upload over), converts the file and reads the converted run to
its end as storage does; the process's peak RSS (``ru_maxrss``) before and after the conversion and its CPU
time are reported, and those of its child: its CPU time (``RUSAGE_CHILDREN``) and its peak RSS, ``VmHWM`` of
``/proc/<pid>/status`` read every 20 ms while it runs (a child's ``ru_maxrss`` is no measure: Linux carries the
parent's peak over into it at ``exec``):

* ``now``: ``json_run_as_trec`` (the content copied to a file, converted by a child process with its own bounds,
  ``evaluation.run_json_child``: the bounded streaming reader; the TREC lines in a temporary file);
* ``before``: the conversion as it was at 614baf1 (the content joined in memory, ``json.loads``, every TREC line
  in a list, joined), kept here for the comparison.

Results go to var/bench-results/json_run.json (``-smoke`` beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexboard.settings")

import django  # noqa: E402

django.setup()  # the measured process imports what the web process has

from django.core.files.uploadedfile import UploadedFile  # noqa: E402

from bench.common import BASE_DIR, MACHINE_NOTE, markdown_table  # noqa: E402
from catalogue.models import Dataset  # noqa: E402
from submissions.services.inspection import json_run_as_trec  # noqa: E402

DOCS_PER_QUERY = 1000


def write_run(path: Path, target: int) -> tuple[int, int]:
    """A JSON run of about ``target`` bytes (1,000 documents a query, json.dumps's float scores); (queries, bytes)."""
    rng = random.Random(0)
    written = 0
    n_queries = 0
    with path.open("w") as fh:
        fh.write("{")
        while True:
            docs = {f"doc{rng.randrange(10**7):07d}": rng.random() * 30 for _ in range(DOCS_PER_QUERY)}
            piece = ("" if n_queries == 0 else ", ") + json.dumps(f"q{n_queries}") + ": " + json.dumps(docs)
            if written + len(piece) + 2 > target:
                break
            fh.write(piece)
            written += len(piece)
            n_queries += 1
        fh.write("}")
    return n_queries, path.stat().st_size


class ChildPeak(threading.Thread):
    """The largest ``VmHWM`` of this process's children, read every 20 ms until ``stop`` is set (MiB)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.peak_kib = 0

    def run(self) -> None:
        me = os.getpid()
        while not self.stop.wait(0.02):
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/stat") as fh:
                        if int(fh.read().rsplit(")", 1)[1].split()[1]) != me:
                            continue
                    with open(f"/proc/{entry}/status") as fh:
                        hwm = next(line for line in fh if line.startswith("VmHWM:"))
                except (OSError, ValueError, IndexError, StopIteration):
                    continue
                self.peak_kib = max(self.peak_kib, int(hwm.split()[1]))


def child(variant: str, path: str) -> dict:
    """Runs in the measured process."""
    watch = ChildPeak()
    watch.start()
    before_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.process_time()
    wall = time.monotonic()
    with open(path, "rb") as fh:
        upload = UploadedFile(fh, name="run.json", size=os.path.getsize(path))
        if variant == "now":
            converted = json_run_as_trec(upload=upload, dataset=Dataset(task=Dataset.Task.RETRIEVAL))
            out_bytes = sum(len(chunk) for chunk in converted.chunks())
        else:
            out_bytes = len(_before(fh.read()))
    watch.stop.set()
    watch.join()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"variant": variant, "rss_before_mib": before_rss / 1024,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "cpu_s": time.process_time() - started, "wall_s": time.monotonic() - wall,
            "child_peak_rss_mib": watch.peak_kib / 1024, "child_cpu_s": children.ru_utime + children.ru_stime,
            "trec_bytes": out_bytes}


def _before(data: bytes) -> bytes:
    """The conversion as it was (evaluation/run_json.py at 614baf1), checks elided: they hold no memory."""
    run = json.loads(data)
    lines: list[str] = []
    for qid, docs in run.items():
        ranked = sorted(((float(score), docid) for docid, score in docs.items()), reverse=True)
        lines.extend(f"{qid} Q0 {docid} {rank} {score!r} run" for rank, (score, docid) in enumerate(ranked, 1))
    return ("\n".join(lines) + "\n").encode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="a 4 MiB run")
    parser.add_argument("--mib", type=float, default=127.5, help="size of the JSON run (default 127.5 MiB: just "
                                                                  "under LEXBOARD_UPLOAD_SCAN_BYTES)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    target = int((4 if args.smoke else args.mib) * 1024 * 1024)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.json"
        n_queries, size = write_run(path, target)
        for variant in ("now", "before"):
            done = subprocess.run([sys.executable, __file__, "--child", variant, str(path)], cwd=BASE_DIR,
                                  capture_output=True, text=True)
            if done.returncode:  # a refusal (a limit of the JSON reader's child on a loaded machine) is said
                raise SystemExit(f"the {variant} variant failed:\n{done.stderr[-2000:]}")
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    result = {"json_bytes": size, "queries": n_queries, "docs_per_query": DOCS_PER_QUERY, "rows": rows,
              "machine": MACHINE_NOTE}
    out = BASE_DIR / "var" / "bench-results" / ("json_run-smoke.json" if args.smoke else "json_run.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"JSON run: {size / 2**20:.1f} MiB, {n_queries:,} queries x {DOCS_PER_QUERY:,} documents\n")
    print(markdown_table(["variant", "web: RSS after start (MiB)", "web: peak RSS (MiB)", "web: CPU (s)",
                          "child: peak RSS (MiB)", "child: CPU (s)", "wall (s)", "TREC bytes"],
                         [[r["variant"], f"{r['rss_before_mib']:.0f}", f"{r['peak_rss_mib']:.0f}",
                           f"{r['cpu_s']:.1f}", f"{r['child_peak_rss_mib']:.0f}", f"{r['child_cpu_s']:.1f}",
                           f"{r['wall_s']:.1f}", f"{r['trec_bytes']:,}"] for r in rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
