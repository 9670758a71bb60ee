"""The README's quick test command, timed as a newcomer runs it: ``make test-fast`` in a fresh clone.

    .venv/bin/python bench/bench_test_fast.py              # a clone of HEAD in a temporary folder, once
    .venv/bin/python bench/bench_test_fast.py --repeat 2   # twice, the median reported

What a fresh clone has is the repository's committed files: the script clones HEAD (``git clone`` of this
checkout, so uncommitted changes are not in it) into a temporary folder with nothing beside it and links this
checkout's virtualenvs into it (installing them is ``make venv``'s two minutes, not the tests'), then runs
``make test-fast`` there on the embedded default (no ``DATABASE_URL``, ``CELERY_BROKER_URL`` or ``CACHE_URL``),
as docs/testing.md's table does. The target (docs/testing.md): under 3 minutes on 2 cores.

A shared machine's speed varies with what else runs on it, so beside the wall and CPU times the script reports
the load average before and after, and a peer measured in the same run: a fixed pure-Python workload (the
``calibration``, about a second of one core on a quiet machine) timed before and after the suite. The suite's
time in calibration units is what to compare between runs on different days.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import MACHINE_NOTE, markdown_table  # noqa: E402

TARGET_SECONDS = 180
RESULTS = ROOT / "var" / "bench-results"


def calibration() -> float:
    """Wall seconds of a fixed pure-Python workload (dictionary and string work, as the suite's Python does)."""
    start = time.perf_counter()
    table: dict[str, int] = {}
    for i in range(1_500_000):
        key = f"q{i % 5000}"
        table[key] = table.get(key, 0) + len(key)
    return time.perf_counter() - start


def clone(into: Path) -> Path:
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(into)], check=True)
    for venv in (".venv", ".venv-core"):
        if (ROOT / venv).exists():
            (into / venv).symlink_to(ROOT / venv)
    return into


def test_fast(clone_dir: Path, pytest_args: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL") and not k.startswith("LEXBOARD_")}
    env["LEXBOARD_VAR_DIR"] = str(clone_dir / "var")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(["make", "test-fast", f"PYTEST_ARGS={pytest_args}"], cwd=clone_dir, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    tail = done.stdout.strip().splitlines()[-1:] or [""]
    return {"wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "load_before": load_before, "load_after": os.getloadavg()[0], "returncode": done.returncode,
            "summary": tail[0], "output_tail": done.stdout[-3000:] + done.stderr[-2000:]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--pytest-args", default="-p no:cacheprovider -q",
                        help="PYTEST_ARGS for make test-fast (default: -p no:cacheprovider -q)")
    args = parser.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory(prefix="lexboard-fresh-clone-") as folder:
        here = clone(Path(folder) / "lexboard")
        for _ in range(args.repeat):
            calm_before = calibration()
            run = test_fast(here, args.pytest_args)
            run["calibration_s"] = (calm_before + calibration()) / 2
            runs.append(run)
            shutil.rmtree(here / "var", ignore_errors=True)
    wall = statistics.median(r["wall_s"] for r in runs)
    units = statistics.median(r["wall_s"] / r["calibration_s"] for r in runs)
    rows = [[f"{r['wall_s']:.0f}", f"{r['cpu_s']:.0f}", f"{r['calibration_s']:.2f}",
             f"{r['wall_s'] / r['calibration_s']:.0f}", f"{r['load_before']:.1f} -> {r['load_after']:.1f}",
             r["summary"]] for r in runs]
    print(f"make test-fast in a fresh clone of HEAD, embedded default ({MACHINE_NOTE})\n")
    print(markdown_table(["wall s", "CPU s", "calibration s", "wall / calibration", "load average", "pytest"],
                         rows))
    met = wall < TARGET_SECONDS and all(r["returncode"] == 0 for r in runs)
    print(f"\nmedian {wall:.0f} s ({units:.0f} calibration units): target (< {TARGET_SECONDS} s, every test passing) "
          f"{'met' if met else 'MISSED'}")
    for r in runs:
        if r["returncode"] != 0:
            print(r["output_tail"], file=sys.stderr)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "test_fast.json").write_text(json.dumps({"machine": MACHINE_NOTE, "runs": runs}, indent=2))
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
