"""Pages under load: wrk against the leaderboard page, the home page, the API leaderboard and a static file.

    .venv/bin/python bench/bench_pages.py                    # starts a fresh stack, 10 s per run
    .venv/bin/python bench/bench_pages.py --url http://127.0.0.1:8765   # a stack from bench/serve.py

The static file (the site's stylesheet, served by whitenoise through the same
gunicorn) is the ceiling: the most this stack can answer per second. Each
page is measured at 16 and 64 connections in the same run, one target after
the other, after a warm-up: one request per target (the first visit after new
scores renders the page and fills the cache), then 2 s of wrk per target so
every gunicorn process and thread has served it. Targets (docs/performance.md):
each page at least a third of the static ceiling, p99 under 100 ms at 16
connections. wrk runs on loopback, bounded by ``--duration``; it is a Debian
package (``apt-get install wrk``), needed only here, not by the test suite.

**Scores landing.** The leaderboard page and then the static file are measured
a second time while new scores land: every ``--land-every`` seconds a 222 x
1000 run is uploaded through the API and scored by the stack's Celery worker,
each score making the cached page stale (the worker renders the new one ahead:
``leaderboard/page_cache.py``). Target: the leaderboard's p99 at most twice the
static file's at 64 connections, both through landings in the same run (an
absolute p99 measures the machine's load as much as the page). The table says
how many scores landed in each measurement.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    BASE_DIR,
    MACHINE_NOTE,
    get_json,
    gzipped,
    http_status,
    log,
    markdown_table,
    stack_arguments,
    stack_from_args,
    synthetic_run,
    upload_run,
)

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text.strip())
    if not match:
        raise ValueError(f"cannot read wrk's latency {text!r}")
    return float(match.group(1)) * UNITS[match.group(2)]


def parse_wrk(output: str) -> dict:
    """Requests per second, p50/p99 latency (ms), errors and non-2xx answers from ``wrk --latency``."""
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    percentiles = {int(p): _ms(v) for p, v in re.findall(r"^\s+(\d+)%\s+(\S+)\s*$", output, flags=re.M)}
    requests = int(re.search(r"(\d+) requests in", output).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    return {
        "rps": rps,
        "p50_ms": percentiles.get(50),
        "p99_ms": percentiles.get(99),
        "requests": requests,
        "non2xx": int(non2xx.group(1)) if non2xx else 0,
        "socket_errors": sum(int(x) for x in errors.groups()) if errors else 0,
    }


#: wrk prints p50–p99; its Lua hook gives the rest of the tail (microseconds).
TAIL_SCRIPT = """
done = function(summary, latency, requests)
  io.write(string.format("tail p99.9 %d max %d\\n", latency:percentile(99.9), latency.max))
end
"""


def run_wrk(url: str, *, connections: int, duration: int, threads: int, headers: list[str]) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(TAIL_SCRIPT)
        script.flush()
        command = ["wrk", f"-t{min(threads, connections)}", f"-c{connections}", f"-d{duration}s", "--latency",
                   "--timeout", "5s", "-s", script.name, *[a for h in headers for a in ("-H", h)], url]
        out = subprocess.run(command, check=True, capture_output=True, text=True, timeout=duration + 30)
    result = parse_wrk(out.stdout)
    tail = re.search(r"tail p99.9 (\d+) max (\d+)", out.stdout)
    result["p999_ms"], result["max_ms"] = (int(tail.group(1)) / 1000, int(tail.group(2)) / 1000) if tail else (None, None)
    result["command"] = " ".join(command)
    return result


_LANDING_SEEDS = itertools.count(1)  # each measurement its own files


class ScoreLanding(threading.Thread):
    """Uploads a run every ``every`` seconds until stopped; ``landed()`` counts those scored so far."""

    def __init__(self, state: dict, every: float, duration: float):
        super().__init__(daemon=True)
        self.state, self.every = state, every
        self.stopped = threading.Event()
        self.ids: list[int] = []
        self.refused: list[str] = []
        # A different file each time (the same file twice is refused as a duplicate).
        count = int(duration / every) + 3
        first = next(_LANDING_SEEDS) * 1000
        self.runs = [gzipped(synthetic_run(seed=first + i, tag=f"landing{first + i}")) for i in range(count)]

    def run(self) -> None:
        i = 0
        while not self.stopped.wait(self.every if i else 0.5) and i < len(self.runs):
            try:
                made = upload_run(self.state, self.runs[i], system_name=f"landing {time.time():.0f}-{i}",
                                  visibility="public")
            except urllib.error.HTTPError as exc:  # said in the table, not lost in a dead thread
                self.refused.append(f"{exc.code}: {exc.read().decode(errors='replace')[:300]}")
                log(f"landing upload {i} refused: {self.refused[-1]}")
            else:
                self.ids.append(int(made["id"]))
            i += 1

    def landed(self) -> int:
        done = 0
        for pk in self.ids:
            status = get_json(f"{self.state['url']}/api/v1/submissions/{pk}/", token=self.state["token"])["status"]
            done += status == "scored"
        return done


#: The cached leaderboard's p99 over the static file's, both measured while scores land (64 connections).
LANDING_RATIO_TARGET = 2.0


def landing_ratios(results: list[dict]) -> dict[int, float]:
    """Per connection count: the leaderboard's p99 divided by the static file's, both through score landings."""
    p99 = {(r["target"].split(",")[0], r["connections"]): r["p99_ms"] for r in results if "landed" in r}
    return {c: p99[("leaderboard page", c)] / p99[("static file", c)]
            for (target, c) in p99 if target == "static file" and ("leaderboard page", c) in p99}


def static_url(base: str) -> str:
    """The stylesheet's URL as the pages link it (the hashed name whitenoise serves with long caching)."""
    import urllib.request

    with urllib.request.urlopen(base + "/", timeout=10) as resp:
        html = resp.read().decode()
    match = re.search(r'href="(/static/css/[^"]+\.css)"', html)
    return base + (match.group(1) if match else "/static/css/lexboard.css")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    stack_arguments(parser)
    parser.add_argument("--duration", type=int, default=10, help="Seconds per wrk run (default 10).")
    parser.add_argument("--connections", default="16,64", help="Connection counts (default 16,64).")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads (default 2).")
    parser.add_argument("--accept-encoding", default="gzip, deflate, br",
                        help="The Accept-Encoding header sent, as a browser does ('' for none).")
    parser.add_argument("--out", type=Path, default=BASE_DIR / "var" / "bench-results" / "pages.json")
    parser.add_argument("--land-every", type=float, default=2.0,
                        help="While the leaderboard is measured again, upload a run every this many seconds "
                             "(scored by the worker; default 2; 0 skips that measurement).")
    parser.add_argument("--landing-duration", type=int, default=0,
                        help="Seconds of wrk while scores land (default: --duration); longer lets more scores land "
                             "when the worker gets little CPU.")
    parser.add_argument("--smoke", action="store_true", help="Tiny run (1 s, 4 connections, 20 entries) for tests.")
    args = parser.parse_args(argv)
    if args.smoke:
        args.out = args.out.with_name(args.out.stem + "-smoke.json")
        args.duration, args.connections, args.entries = 1, "4", 20
    if shutil.which("wrk") is None:
        log("wrk is not installed: apt-get install -y wrk (Debian)")
        return 2
    connections = [int(c) for c in args.connections.split(",")]

    with stack_from_args(args) as state:
        base = state["url"]
        targets = [
            ("static file (ceiling)", static_url(base)),
            ("home page", base + "/"),
            (f"leaderboard page ({state['entries']} entries x {len(state['measures'])} measures)",
             f"{base}/d/{state['dataset']}/"),
            ("API leaderboard", f"{base}/api/v1/datasets/{state['dataset']}/leaderboard"),
        ]
        for _, url in targets:
            # The first visit after new scores renders the page (and its significance tiers): allow for it.
            status = http_status(url, timeout=180)
            if status != 200:
                raise SystemExit(f"{url} answered {status}, not 200")
        for _, url in targets:  # warm-up: every gunicorn process and thread, caches, connections
            subprocess.run(["wrk", "-t1", f"-c{max(connections)}", "-d2s", url], check=True, capture_output=True)
        results = []
        for name, url in targets:
            for c in connections:
                headers = [f"Accept-Encoding: {args.accept_encoding}"] if args.accept_encoding else []
                r = run_wrk(url, connections=c, duration=args.duration, threads=args.threads, headers=headers)
                r.update(target=name, url=url.replace(base, ""), connections=c)
                results.append(r)
                log(f"{name:<50} c={c:<3} {r['rps']:8.0f} req/s  p50 {r['p50_ms']:7.2f} ms  "
                    f"p99 {r['p99_ms']:7.2f} ms  non-2xx {r['non2xx']}")
                time.sleep(0.5)
        if args.land_every > 0:
            # The leaderboard and the static file alike, each while scores land: the ratio of their p99 is
            # the page's own cost, whatever the machine's load does to both.
            landing_duration = args.landing_duration or args.duration
            for c in connections:
                for (name, url), label in ((targets[2], "leaderboard page, scores landing"),
                                           (targets[0], "static file, scores landing")):
                    landing = ScoreLanding(state, args.land_every, landing_duration)
                    landing.start()
                    time.sleep(1.0)  # the first upload is in the worker's hands
                    headers = [f"Accept-Encoding: {args.accept_encoding}"] if args.accept_encoding else []
                    r = run_wrk(url, connections=c, duration=landing_duration, threads=args.threads,
                                headers=headers)
                    landing.stopped.set()
                    landing.join(60)
                    r.update(target=name.replace("leaderboard page", label).replace("static file (ceiling)", label),
                             url=url.replace(base, ""), connections=c, landed=landing.landed(),
                             uploaded=len(landing.ids), refused=landing.refused)
                    results.append(r)
                    log(f"{r['target']:<50} c={c:<3} {r['rps']:8.0f} req/s  p50 {r['p50_ms']:7.2f} ms  "
                        f"p99 {r['p99_ms']:7.2f} ms  non-2xx {r['non2xx']}  "
                        f"scores landed {r['landed']}/{r['uploaded']}")
                    time.sleep(0.5)

    ceiling = {r["connections"]: r["rps"] for r in results if r["target"] == "static file (ceiling)"}
    rows = []
    failures = []
    for r in results:
        share = r["rps"] / ceiling[r["connections"]]
        r["share_of_static"] = share
        rows.append([r["target"], r["connections"], f"{r['rps']:.0f}", f"{share:.0%}",
                     f"{r['p50_ms']:.1f}", f"{r['p99_ms']:.1f}",
                     f"{r['p999_ms']:.0f}" if r.get("p999_ms") is not None else "–",
                     f"{r['max_ms']:.0f}" if r.get("max_ms") is not None else "–",
                     r["non2xx"] + r["socket_errors"], r.get("landed", "–")])
        if not r["target"].startswith("static"):
            if share < 1 / 3:
                failures.append(f"{r['target']} at c={r['connections']}: {share:.0%} of the static ceiling")
            if r["connections"] == 16 and r["p99_ms"] >= 100:
                failures.append(f"{r['target']} at c=16: p99 {r['p99_ms']:.0f} ms")
            if r.get("refused"):
                failures.append(f"{r['target']} at c={r['connections']}: {len(r['refused'])} landing uploads refused")
            if "landed" in r and not r["landed"]:
                failures.append(f"{r['target']} at c={r['connections']}: no score landed during the run")
        if not r["requests"]:
            failures.append(f"{r['target']} at c={r['connections']}: no answer at all within wrk's 5 s timeout")
        if r["non2xx"] or r["socket_errors"]:
            failures.append(f"{r['target']} at c={r['connections']}: {r['non2xx']} non-2xx, "
                            f"{r['socket_errors']} socket errors")
    ratios = landing_ratios(results)
    for c, ratio in ratios.items():
        if c == 64 and ratio > LANDING_RATIO_TARGET:
            failures.append(f"cached leaderboard p99 / static p99 at c=64 with scores landing: {ratio:.2f}")
    table = markdown_table(["target", "connections", "req/s", "of static", "p50 ms", "p99 ms", "p99.9 ms", "max ms",
                            "errors", "scores landed"], rows)
    print(f"Pages under load ({MACHINE_NOTE}; wrk -t{args.threads} -d{args.duration}s --latency, loopback, "
          f"Accept-Encoding: {args.accept_encoding or 'none'})\n")
    print(table)
    for c, ratio in ratios.items():
        print(f"\nleaderboard p99 / static file p99, both while scores land, {c} connections: {ratio:.2f} "
              f"(target at most {LANDING_RATIO_TARGET:g} at 64)")
    print(f"load average after the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print("\nTargets met." if not failures else "\nMissed: " + "; ".join(failures))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": MACHINE_NOTE, "results": results, "missed": failures,
                                    "landing_p99_ratio": ratios}, indent=2))
    return 0 if (not failures or args.smoke) else 1


if __name__ == "__main__":
    sys.exit(main())
