"""Throughput: 100 BSARD-scale submissions arriving together, 2 worker processes; time until all are scored.

    .venv/bin/python bench/bench_throughput.py                 # fresh stack, 1 Celery worker x concurrency 2
    .venv/bin/python bench/bench_throughput.py --celery-workers 2 --concurrency 1
    .venv/bin/python bench/bench_throughput.py --url http://127.0.0.1:8765 -n 100
    .venv/bin/python bench/bench_throughput.py --scale 1,2,4 -n 60   # 1, 2, 4 worker processes, same runs

The runs (222 queries × 1,000 documents each, all different) are uploaded
through the API by ``--uploaders`` parallel clients as fast as the web
answers, so they pile up in the queue; the script then watches the database
until every one is scored. It reports the time from the first upload to the
last score, submissions per minute while scoring, and each submission's queue
wait (``scoring_started_at`` − ``created_at``): no starvation means the
longest wait stays near the time it takes the workers to get through the
queue ahead of it, and the scoring order follows the arrival order
(``max overtaken`` counts by how many places a later arrival was started
before an earlier one). The split's daily and total caps are lifted for the
bench user by ``seed_bench`` (0 = no limit), and the stack's upload rate too.

``--scale 1,2,4`` repeats the measure on a fresh stack for each number of
Celery worker processes (each with concurrency 1, as separate worker machines
would run), with the same submissions, queued while the workers are paused
(SIGSTOP) and scored once they resume: the scoring rate of each against the
single worker's, how far adding workers helps on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    BASE_DIR,
    MACHINE_NOTE,
    PG_URL,
    gzipped,
    log,
    markdown_table,
    median,
    quantile,
    stack_arguments,
    stack_from_args,
    synthetic_run,
    upload_run,
)


def progress(database: str, ids: list[int]) -> dict[str, int]:
    import psycopg

    with psycopg.connect(f"{PG_URL}/{database}") as conn:
        rows = conn.execute(
            "SELECT status, count(*) FROM submissions_submission WHERE id = ANY(%s) GROUP BY status", (ids,)
        ).fetchall()
    return dict(rows)


def timings(database: str, ids: list[int]) -> list[dict]:
    import psycopg

    with psycopg.connect(f"{PG_URL}/{database}") as conn:
        rows = conn.execute(
            """SELECT s.id, s.created_at, s.scoring_started_at, s.scored_at, r.duration_seconds, s.attempts
               FROM submissions_submission s LEFT JOIN submissions_result r ON r.submission_id = s.id
               WHERE s.id = ANY(%s) ORDER BY s.created_at, s.id""",
            (ids,),
        ).fetchall()
    return [
        {"id": r[0], "created": r[1].timestamp(), "started": r[2].timestamp(), "scored": r[3].timestamp(),
         "scoring": r[4], "attempts": r[5]}
        for r in rows
    ]


def max_overtaken(rows: list[dict]) -> int:
    """The most places by which a submission was started after ones that arrived later."""
    by_start = sorted(rows, key=lambda r: r["started"])
    start_rank = {r["id"]: i for i, r in enumerate(by_start)}
    return max((start_rank[r["id"]] - i for i, r in enumerate(rows)), default=0)


def measure(args, runs: list[bytes], filename: str, *, backlog: bool = False) -> tuple[dict, list[dict]]:
    """Upload ``runs`` to a stack made from ``args``, wait until all are scored; the summary and the rows.

    ``backlog``: the workers are paused (SIGSTOP) while the runs are uploaded
    and resumed once all are queued, so the scoring rate is the workers' own,
    not the upload rate.
    """
    with stack_from_args(args) as state:
        paused = state.get("celery_pids", []) if backlog else []
        for pid in paused:
            os.killpg(pid, signal.SIGSTOP)
        t0 = time.time()
        with ThreadPoolExecutor(args.uploaders) as pool:
            created = list(pool.map(
                lambda item: upload_run(state, item[1], system_name=f"throughput {item[0]}", filename=filename),
                enumerate(runs),
            ))
        t_uploaded = time.time()
        for pid in paused:
            os.killpg(pid, signal.SIGCONT)
        t_resumed = time.time()
        ids = [c["id"] for c in created]
        log(f"{len(ids)} uploads accepted in {t_uploaded - t0:.1f}s; waiting for the workers")
        deadline = time.monotonic() + args.timeout
        while True:
            counts = progress(args.db, ids)
            done = counts.get("scored", 0) + counts.get("failed", 0)
            if done == len(ids):
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"not all scored after {args.timeout:.0f}s: {counts}")
            time.sleep(0.5)
        t_done = time.time()
        if counts.get("failed"):
            raise SystemExit(f"{counts['failed']} submissions failed: see the worker log")
        rows = timings(args.db, ids)

    first_created = min(r["created"] for r in rows)
    last_scored = max(r["scored"] for r in rows)
    first_started = min(r["started"] for r in rows)
    waits = [r["started"] - r["created"] for r in rows]
    scoring = [r["scoring"] for r in rows]
    span = last_scored - first_created
    per_minute = len(rows) / (last_scored - (t_resumed if paused else first_started)) * 60
    summary = {
        "submissions": len(rows),
        "workers": f"{args.celery_workers} process(es) x concurrency {args.concurrency}",
        "upload_phase_s": t_uploaded - t0,
        "first_upload_to_last_score_s": last_scored - t0,
        "first_created_to_last_scored_s": span,
        "submissions_per_minute": per_minute,
        "scoring_median_s": median(scoring),
        "scoring_p90_s": quantile(scoring, 0.9),
        "queue_wait_median_s": median(waits),
        "queue_wait_max_s": max(waits),
        "max_overtaken": max_overtaken(rows),
        "retried": sum(1 for r in rows if r["attempts"] > 1),
        "client_saw_all_done_s": t_done - t0,
        "resumed_to_last_scored_s": last_scored - t_resumed,
    }
    return summary, rows


def scale(args, runs: list[bytes], filename: str) -> int:
    """The same submissions on a fresh stack per worker count; scoring rate against one worker's."""
    counts = [int(n) for n in args.scale.split(",")]
    results = []
    for count in counts:
        args.celery_workers, args.concurrency = count, 1
        log(f"--- {count} worker process(es)")
        summary, _ = measure(args, runs, filename, backlog=True)
        results.append(summary)
    base = results[0]["submissions_per_minute"]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    command = "bench/bench_throughput.py " + " ".join(sys.argv[1:])
    report = (
        f"Scale-out, {when} (load average {load} at the end; {MACHINE_NOTE}): {len(runs)} submissions of "
        f"{args.queries} x {args.depth} lines queued while the workers were paused, then N Celery worker "
        f"processes x concurrency 1.\n\n    {command}\n\n"
        + markdown_table(
            ["worker processes", "submissions per minute", f"vs {counts[0]}", "resumed → last scored",
             "scoring time median / p90", "retried"],
            [[count, f"{r['submissions_per_minute']:.0f}", f"{r['submissions_per_minute'] / base:.2f}x",
              f"{r['resumed_to_last_scored_s']:.1f} s", f"{r['scoring_median_s']:.2f} / {r['scoring_p90_s']:.2f} s",
              r["retried"]] for count, r in zip(counts, results, strict=True)],
        ) + "\n"
    )
    print(report)
    # Beside the page that quotes them (docs/performance.md), committed: the figures and how they were made.
    out = args.scale_out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": MACHINE_NOTE, "when": when, "load_average": load, "command": command,
                               "counts": counts, "summaries": results}, indent=2) + "\n")
    out.with_suffix(".md").write_text(report)
    log(f"written: {out} and {out.with_suffix('.md')}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    stack_arguments(parser, celery_workers=1, concurrency=2)
    parser.add_argument("-n", "--submissions", type=int, default=100)
    parser.add_argument("--uploaders", type=int, default=4, help="Parallel API clients (default 4).")
    parser.add_argument("--queries", type=int, default=222)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--gzip", action="store_true", help="Upload gzip-compressed runs (default: plain text).")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--out", type=Path, default=BASE_DIR / "var" / "bench-results" / "throughput.json")
    parser.add_argument("--smoke", action="store_true", help="Tiny run (6 runs of 222 queries x 20) for tests.")
    parser.add_argument("--scale", help="Worker process counts to compare, e.g. 1,2,4 (each with concurrency 1).")
    parser.add_argument("--scale-out", type=Path, default=BASE_DIR / "docs" / "performance" / "throughput-scale.json",
                        help="Where --scale writes its figures (JSON, and the table beside it as .md; default "
                             "docs/performance/throughput-scale.json, committed with the page that quotes it).")
    args = parser.parse_args(argv)
    if args.smoke:
        args.out = args.out.with_name(args.out.stem + "-smoke.json")
        # Every query: a hidden split refuses a run that covers < 90% of its topics (docs/security.md).
        args.submissions, args.depth, args.entries = 6, 20, 5

    log(f"making {args.submissions} runs of {args.queries} x {args.depth} lines")
    runs = [synthetic_run(n_queries=args.queries, depth=args.depth, seed=100 + i) for i in range(args.submissions)]
    if args.gzip:
        runs = [gzipped(r) for r in runs]
    filename = "run.txt.gz" if args.gzip else "run.txt"

    if args.scale:
        return scale(args, runs, filename)
    summary, rows = measure(args, runs, filename)
    per_minute = summary["submissions_per_minute"]
    first_created = min(r["created"] for r in rows)
    last_scored = max(r["scored"] for r in rows)
    print(f"Throughput: {len(rows)} submissions of {args.queries} x {args.depth} lines arriving together, "
          f"{summary['workers']} ({MACHINE_NOTE})\n")
    print(markdown_table(["measure", "value"], [
        ["uploads accepted (all, " + str(args.uploaders) + " parallel clients)", f"{summary['upload_phase_s']:.1f} s"],
        ["first upload → last scored", f"{summary['first_upload_to_last_score_s']:.1f} s"],
        ["submissions per minute (scoring phase)", f"{per_minute:.0f}"],
        ["scoring time per submission, median / p90", f"{summary['scoring_median_s']:.2f} / {summary['scoring_p90_s']:.2f} s"],
        ["queue wait, median / max", f"{summary['queue_wait_median_s']:.1f} / {summary['queue_wait_max_s']:.1f} s"],
        ["max overtaken (places)", summary["max_overtaken"]],
        ["scored twice (retries)", summary["retried"]],
    ]))
    # No starvation: the last to start waited about as long as the whole queue took, not more.
    starved = summary["queue_wait_max_s"] > 1.2 * (last_scored - first_created) or summary["max_overtaken"] > 2 * (
        args.celery_workers * args.concurrency + 1)
    print("\nno starvation" if not starved else "\nSTARVATION: a submission waited far longer than the queue ahead of it")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": MACHINE_NOTE, "summary": summary, "rows": rows}, indent=2))
    return 1 if starved else 0


if __name__ == "__main__":
    sys.exit(main())
