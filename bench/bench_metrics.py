"""Benchmark: the whole scoring path (read files -> every default measure) against the peers.

Generates seeded runs and qrels in a temporary folder, then times, each in its
own subprocess so that peak memory is measured per tool:

* ``core``         this package (``evaluation.read_qrels/read_run/evaluate``)
* ``pytrec_eval``  pytrec-eval-terrier, with the usual line-by-line parsing into dicts
* ``ranx``         ranx (``Run.from_file`` / ``Qrels.from_file`` / ``evaluate``), JIT warm-up included
* ``ir_measures``  ir_measures (``read_trec_run`` / ``calc_aggregate``)
* ``verify``       the core, then ``evaluation.verify`` (double-entry check): the added time

Then, side by side in the same run and repeated (``--repeat``, min and median
reported), the command lines participants use, on the same four measures:

* ``python -m evaluation score --measures R@100,MAP@100,nDCG@10,P@10``
* ``python -m evaluation score --help``: the start of the command line alone
* ``trec_eval -c -m recall.100 -m map_cut.100 -m ndcg_cut.10 -m P.10``, when
  ``--build-trec-eval TARBALL`` builds it with -O2 (trec_eval's own Makefile
  does not optimise) or ``--trec-eval PATH`` names a binary; otherwise "not
  measured". The CLI's CPU time over trec_eval's is taken per round (the two
  ran back to back, under the same load) and compared with the targets: at
  most 0.5 at BSARD scale, 0.2 at 7M lines; peak memory at most trec_eval's.

Every child's CPU time (user + system) and peak resident memory are its own,
read with ``os.wait4`` when it ends (never this script's figures). CPU time
depends on the machine's load (memory bandwidth shared with other processes);
where ``perf stat`` can count instructions, one more run of each command line
gives their user-space instruction counts too, a figure load does not move
("not measured" otherwise, e.g. on a virtual machine without hardware counters).

The command lines run on four variants of each scale's files (``--variants``), since what researchers send
is not always the plain case:

* ``plain``    the run as generated;
* ``notices``  the run missing every 20th qrels query, with rows for a query the qrels lack and UTF-8 docids
  (both tools see the same file; trec_eval ``-c`` counts the missing queries, as ``omit`` does here);
* ``gzip``     the run gzipped for the command line; trec_eval, which reads no gzip, gets the plain file (the
  strict ratio), and ``gzip -dc`` is timed too (the ratio against what a trec_eval user runs: both);
* ``depth``    both cut at rank 100 (``--depth 100``; trec_eval ``-M 100``), so every query has rows beyond it;
* ``ungrouped`` not grouped by query: every query's first 500 rows, then every query's last 500 (two shards'
  files concatenated).

Scales: BSARD (222 queries x 1,000) and MS MARCO dev (6,980 queries x 1,000,
about 7M lines). ``--quick`` runs the BSARD scale only.

    .venv/bin/python bench/bench_metrics.py --quick
    .venv/bin/python bench/bench_metrics.py --build-trec-eval tests/data/reference/trec_eval-9.0.8-src.tar.gz \\
        --tools "" --repeat 7
    .venv/bin/python bench/bench_metrics.py --build-trec-eval tests/data/reference/trec_eval-9.0.8-src.tar.gz \\
        --tools "" --repeat 7 --quick --variants notices,gzip,depth

Peers are optional (``pip install -r requirements-bench.txt``); a missing one
is reported as skipped. Wall time on a shared machine is noisy, so CPU time
(user + system) is printed too.
"""

from __future__ import annotations

import argparse
import compileall
import gzip
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

SCALES = {
    # name: (queries, rows per query, corpus size, seed)
    "bsard": (222, 1000, 22_633, 1),
    "msmarco": (6_980, 1000, 8_841_823, 2),
}

CORE_MEASURES = None  # evaluation.DEFAULT_MEASURES
#: The side-by-side comparison of the command lines: the same four measures in both tools' names.
CLI_MEASURES = "R@100,MAP@100,nDCG@10,P@10"
TREC_EVAL_CLI_MEASURES = ["recall.100", "map_cut.100", "ndcg_cut.10", "P.10"]
TREC_EVAL_KEYS = {"recall_100": "R@100", "map_cut_100": "MAP@100", "ndcg_cut_10": "nDCG@10", "P_10": "P@10"}
TREC_MEASURES = ["recall.10,100,1000", "P.10,100", "map_cut.10,100,1000", "ndcg_cut.10,100,1000", "Rprec",
                 "recip_rank", "success.10"]
RANX_MEASURES = ["recall@10", "recall@100", "recall@1000", "precision@10", "precision@100", "map@10", "map@100",
                 "map@1000", "mrr@10", "mrr@100", "mrr@1000", "ndcg@10", "ndcg@100", "ndcg@1000", "r-precision",
                 "hit_rate@10"]
IRM_MEASURES = "R@10 R@100 R@1000 P@10 P@100 AP@10 AP@100 AP@1000 RR@10 RR@100 RR@1000 nDCG@10 nDCG@100 " \
               "nDCG@1000 Rprec Success@10"


# ---------------------------------------------------------------- data


def generate(folder: Path, scale: str) -> tuple[Path, Path]:
    """Write a seeded run and qrels for a scale (reused when already there)."""
    nq, depth, corpus, seed = SCALES[scale]
    run_path, qrels_path = folder / f"{scale}.run", folder / f"{scale}.qrels"
    if run_path.exists() and qrels_path.exists():
        return run_path, qrels_path
    rng = np.random.default_rng(seed)
    with open(run_path, "w") as run, open(qrels_path, "w") as qrels:
        for q in range(nq):
            qid = str(1_000_000 + 37 * q)
            docs = rng.choice(corpus, size=depth, replace=False)
            # Six decimals, as most toolkits write them: a few equal scores per query, as in real runs.
            scores = np.sort(rng.gamma(2.0, 4.0, size=depth))[::-1]
            run.write("".join(f"{qid} Q0 {d} {r} {s:.6f} bench\n"
                              for r, (d, s) in enumerate(zip(docs.tolist(), scores.tolist()), start=1)))
            n_rel = min(int(rng.geometric(0.45)), 20)
            picks = rng.choice(depth * 3, size=n_rel, replace=False)  # about a third found by the run
            judged = {int(docs[int(rng.integers(depth))]): 0}  # one judged non-relevant document
            for p in picks.tolist():
                judged[int(docs[p]) if p < depth else int(rng.integers(corpus))] = int(rng.integers(1, 3))
            qrels.write("".join(f"{qid} 0 {d} {g}\n" for d, g in judged.items()))
    return run_path, qrels_path


#: The files' variants the command lines run on (module docstring).
VARIANTS = ("plain", "notices", "gzip", "depth", "ungrouped")


class Variant:
    """The command line's and trec_eval's inputs for one variant: a run path each, and their extra arguments."""

    def __init__(self, name: str, cli_run: Path, te_run: Path, cli_args: list[str], te_args: list[str]) -> None:
        self.name, self.cli_run, self.te_run, self.cli_args, self.te_args = name, cli_run, te_run, cli_args, te_args


def variant(run_path: Path, name: str) -> Variant:
    """Write (once) and describe one variant of a generated run (``VARIANTS``)."""
    if name == "plain":
        return Variant(name, run_path, run_path, [], [])
    if name == "depth":
        return Variant(name, run_path, run_path, ["--depth", "100"], ["-M", "100"])
    if name == "ungrouped":
        shards = run_path.with_name(run_path.name + ".ungrouped")
        if not shards.exists():
            with open(shards, "wb") as dst:
                for first in (True, False):
                    with open(run_path, "rb") as src:
                        dst.writelines(line for line in src if (int(line.split(b" ", 4)[3]) <= 500) == first)
        return Variant(name, shards, shards, [], [])
    if name == "gzip":
        gz = run_path.with_name(run_path.name + ".gz")
        if not gz.exists():
            with open(run_path, "rb") as src, gzip.open(gz, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        return Variant(name, gz, run_path, [], [])
    noted = run_path.with_name(run_path.name + ".notices")
    if not noted.exists():
        with open(run_path, "rb") as src, open(noted, "wb") as dst:
            seen: list[bytes] = []
            for line in src:
                qid, rest = line.split(b" ", 1)
                if not seen or seen[-1] != qid:
                    seen.append(qid)
                if len(seen) % 20 == 0:  # every 20th query is missing
                    continue
                parts = rest.split(b" ")
                if parts[2] == b"1":  # each query's first docid in Greek letters (never judged: a docid of its own)
                    parts[1] = "Άρθρο-".encode() + parts[1]
                dst.write(qid + b" " + b" ".join(parts))
            dst.write(b"".join(f"unknown-topic Q0 {d} {d} {100 - d}.5 bench\n".encode() for d in range(1, 101)))
    return Variant(name, noted, noted, [], [])


# ---------------------------------------------------------------- children


def child(tool: str, run_path: str, qrels_path: str) -> None:
    """Run one tool in this (fresh) process and print JSON with its figures."""
    t0 = time.perf_counter()
    c0 = _cpu()
    means = CHILDREN[tool](run_path, qrels_path)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"wall": wall, "cpu": cpu, "rss_mb": rss, "means": means}))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _core(run_path: str, qrels_path: str) -> dict:
    sys.path.insert(0, str(ROOT))
    from evaluation import evaluate, read_qrels, read_run

    ev = evaluate(read_qrels(qrels_path), read_run(run_path))
    return {k: ev.means[k] for k in ("R@100", "MAP@100", "nDCG@10", "MRR@10")}


def _pytrec_eval(run_path: str, qrels_path: str) -> dict:
    import pytrec_eval

    qrels: dict = {}
    with open(qrels_path) as f:
        for line in f:
            q, _, d, g = line.split()
            qrels.setdefault(q, {})[d] = int(g)
    run: dict = {}
    with open(run_path) as f:
        for line in f:
            q, _, d, _, s, _ = line.split()
            run.setdefault(q, {})[d] = float(s)
    res = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_MEASURES)).evaluate(run)
    n = len(res)
    return {"R@100": sum(r["recall_100"] for r in res.values()) / n,
            "MAP@100": sum(r["map_cut_100"] for r in res.values()) / n,
            "nDCG@10": sum(r["ndcg_cut_10"] for r in res.values()) / n}


def _ranx(run_path: str, qrels_path: str) -> dict:
    from ranx import Qrels, Run, evaluate

    out = evaluate(Qrels.from_file(qrels_path, kind="trec"), Run.from_file(run_path, kind="trec"), RANX_MEASURES)
    return {"R@100": out["recall@100"], "MAP@100": out["map@100"], "nDCG@10": out["ndcg@10"], "MRR@10": out["mrr@10"]}


def _ir_measures(run_path: str, qrels_path: str) -> dict:
    import ir_measures

    measures = [ir_measures.parse_measure(m) for m in IRM_MEASURES.split()]
    agg = ir_measures.calc_aggregate(measures, ir_measures.read_trec_qrels(qrels_path),
                                     ir_measures.read_trec_run(run_path))
    found = {str(m): v for m, v in agg.items()}
    return {"R@100": found["R@100"], "MAP@100": found["AP@100"], "nDCG@10": found["nDCG@10"], "MRR@10": found["RR@10"]}


def _verify(run_path: str, qrels_path: str) -> dict:
    """The core, then the double-entry check; prints the check's own time on stderr."""
    sys.path.insert(0, str(ROOT))
    from evaluation import evaluate, read_qrels, read_run
    from evaluation.verify import verify

    qrels, run = read_qrels(qrels_path), read_run(run_path)
    ev = evaluate(qrels, run)
    c0, t0 = _cpu(), time.perf_counter()
    check = verify(qrels, run_path, ev)
    print(json.dumps({"verify_cpu": _cpu() - c0, "verify_wall": time.perf_counter() - t0, "ok": check.ok,
                      "values": check.n_values}), file=sys.stderr)
    return {k: ev.means[k] for k in ("R@100", "MAP@100", "nDCG@10", "MRR@10")}


CHILDREN = {"core": _core, "pytrec_eval": _pytrec_eval, "ranx": _ranx, "ir_measures": _ir_measures,
            "verify": _verify}
NEEDS = {"pytrec_eval": "pytrec_eval", "ranx": "ranx", "ir_measures": "ir_measures"}


#: GNU time, which reports its child's own peak: a child's ``ru_maxrss`` from ``os.wait4`` is at least this
#: script's resident size when it forked (Linux carries the peak across ``exec``), which made every small
#: command look as big as the bench itself (35 MiB for trec_eval, the CLI and ``--help`` alike).
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def run_child(cmd: list[str]) -> dict[str, Any]:
    """Run a command; its own CPU time, peak RSS and wall time, stdout and stderr.

    Through GNU time when installed (its child is forked from a small process, so the peak is the command's
    own); otherwise ``os.wait4`` on the pid, whose peak is at least this script's size (``rss_exact`` False).
    CPU time is ``os.wait4``'s either way.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".time") as timing:
        t0 = time.perf_counter()
        wrapped = [GNU_TIME, "-f", "%e %U %S %M", "-o", timing.name, *cmd] if GNU_TIME else cmd
        proc = subprocess.Popen(wrapped, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        figures = {"cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024, "wall": wall,
                   "rss_exact": False}
        if GNU_TIME:
            last = timing.read().strip().splitlines()[-1].split()  # after "Command exited with non-zero status"
            # CPU stays wait4's (microseconds; GNU time prints hundredths), which counts the reaped command
            # and GNU time's own ~1 ms; the peak is GNU time's report of the command alone.
            figures.update(rss_mb=int(last[3]) / 1024, rss_exact=True)
        return {**figures, "returncode": proc.returncode, "stdout": out.read().decode(),
                "stderr": err.read().decode()}


def cli_means(stdout: str) -> dict[str, float]:
    """Means from ``python -m evaluation score`` (table) or trec_eval (``name all value``)."""
    means = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in CLI_MEASURES.split(","):
            means[parts[0]] = float(parts[1])
        elif len(parts) == 3 and parts[1] == "all" and parts[0] in TREC_EVAL_KEYS:
            means[TREC_EVAL_KEYS[parts[0]]] = float(parts[2])
    return means


#: What the command line must reach, as a share of trec_eval's CPU time (trec_eval built with -O2), per scale.
CPU_TARGETS = {"bsard": 0.5, "msmarco": 0.2}
HELP_TARGET_S = 0.1


#: ``score`` on its numpy path (``evaluation.cli_score``, what the command runs when the compiled fast path
#: does not take the files or is not built), with the command line's one-shot memory settings.
NUMPY_PATH = ("import sys; from evaluation._process import tune_for_one_shot; from evaluation.cli import _parser; "
              "from evaluation.cli_score import score; tune_for_one_shot(); "
              "sys.exit(score(_parser().parse_args(sys.argv[1:]), sys.stdout, sys.stderr))")


def side_by_side(run: Variant, qrels_path: Path, trec_eval: str | None, repeat: int, scale: str = "",
                 callgrind: bool = False) -> None:
    """The CLI and trec_eval on the same files and measures, interleaved ``repeat`` times (paired by round).

    ``score --help`` runs in each round too: the command line's start alone.
    """
    score_args = ["score", "--qrels", str(qrels_path), "--run", str(run.cli_run), "--measures", CLI_MEASURES,
                  *run.cli_args]
    commands = {"python -m evaluation score": [sys.executable, "-m", "evaluation", *score_args],
                "python -m evaluation score --help": [sys.executable, "-m", "evaluation", "score", "--help"],
                "the same, numpy path": [sys.executable, "-c", NUMPY_PATH, *score_args]}
    if trec_eval:
        commands["trec_eval 9.0.8 -c"] = [trec_eval, "-c", *run.te_args] + \
            [x for m in TREC_EVAL_CLI_MEASURES for x in ("-m", m)] + [str(qrels_path), str(run.te_run)]
        if run.cli_run != run.te_run:  # trec_eval reads no gzip: what its users run first, timed on its own
            commands["gzip -dc (before trec_eval)"] = ["sh", "-c", f"gzip -dc '{run.cli_run}' > /dev/null"]
    figures: dict[str, list[dict[str, Any]]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, cmd in commands.items():
            r = subprocess_in_root(cmd)
            if r["returncode"]:
                raise SystemExit(f"{name} failed: {r['stderr'][-500:]}")
            figures[name].append(r)
    load = os.getloadavg()[0]
    how_peak = "GNU time's %M" if GNU_TIME else "os.wait4, at least this script's size"
    print(f"variant {run.name!r}: command lines, {CLI_MEASURES}, {repeat} runs each, interleaved "
          f"(CPU = the child's user + system, "
          f"os.wait4; peak: {how_peak}; load average before {load:.1f} on {os.cpu_count()} CPUs):")
    print(f"{'':<33} {'CPU min':>8} {'CPU med':>8} {'wall med':>9} {'peak MiB':>9}  means")
    for name, rs in figures.items():
        cpu = [r["cpu"] for r in rs]
        means = cli_means(rs[0]["stdout"])
        print(f"{name:<33} {min(cpu):8.3f} {statistics.median(cpu):8.2f} "
              f"{statistics.median(r['wall'] for r in rs):9.2f} {max(r['rss_mb'] for r in rs):9.1f}  "
              + " ".join(f"{k} {means.get(k, float('nan')):.4f}" for k in CLI_MEASURES.split(",")))
    if not trec_eval:
        print(f"{'trec_eval':<28} not measured (give --trec-eval PATH)")
        return
    ours, theirs = cli_means(figures["python -m evaluation score"][0]["stdout"]), \
        cli_means(figures["trec_eval 9.0.8 -c"][0]["stdout"])
    same = all(abs(ours[k] - theirs[k]) < 1e-4 for k in CLI_MEASURES.split(",")) and len(ours) == len(theirs) == 4
    print(f"means (4 decimals) the same as trec_eval's: {'yes' if same else 'NO'}")
    help_cpu = statistics.median(r["cpu"] for r in figures["python -m evaluation score --help"])
    print(f"score --help: {help_cpu:.3f} s CPU (median), target under {HELP_TARGET_S} s: "
          f"{'met' if help_cpu < HELP_TARGET_S else 'NOT met'}")
    cli, te = figures["python -m evaluation score"], figures["trec_eval 9.0.8 -c"]
    ratio_min = min(r["cpu"] for r in te) / min(r["cpu"] for r in cli)
    ratio_med = statistics.median(r["cpu"] for r in te) / statistics.median(r["cpu"] for r in cli)
    print(f"trec_eval / CLI CPU time: {ratio_min:.2f}x (min), {ratio_med:.2f}x (median)")
    paired = sorted(c["cpu"] / t["cpu"] for c, t in zip(cli, te, strict=True))  # same round, same load
    target = CPU_TARGETS.get(scale)
    verdict = "" if target is None else (f"; target at most {target}: "
                                          f"{'met' if statistics.median(paired) <= target else 'NOT met'}")
    print(f"CLI / trec_eval CPU, paired by round: median {statistics.median(paired):.2f}, "
          f"range {paired[0]:.2f}-{paired[-1]:.2f}{verdict}")
    if "gzip -dc (before trec_eval)" in figures:
        unzip = figures["gzip -dc (before trec_eval)"]
        both = sorted(c["cpu"] / (t["cpu"] + u["cpu"]) for c, t, u in zip(cli, te, unzip, strict=True))
        print(f"CLI / (gzip -dc + trec_eval) CPU, paired by round: median {statistics.median(both):.2f}, "
              f"range {both[0]:.2f}-{both[-1]:.2f} (what a trec_eval user runs on a gzipped run)")
    slow = sorted(c["cpu"] / t["cpu"] for c, t in zip(figures["the same, numpy path"], te, strict=True))
    print(f"numpy path / trec_eval CPU, paired by round: median {statistics.median(slow):.2f}, "
          f"range {slow[0]:.2f}-{slow[-1]:.2f} (what runs the fast path hands back)")
    peak_cli, peak_te = max(r["rss_mb"] for r in cli), max(r["rss_mb"] for r in te)
    print(f"peak memory ({how_peak}): CLI {peak_cli:.1f} MiB, trec_eval {peak_te:.1f} MiB "
          f"({'at most' if peak_cli <= peak_te else 'MORE than'} trec_eval's)")
    pair = {name: commands[name] for name in ("python -m evaluation score", "trec_eval 9.0.8 -c")}
    counts = {name: instructions(cmd) for name, cmd in pair.items()} if perf_counts_instructions() else {}
    how = "perf stat -e instructions:u"
    if (not counts or None in counts.values()) and callgrind:
        counts, how = {name: callgrind_instructions(cmd) for name, cmd in pair.items()}, "valgrind --tool=callgrind"
    if len(counts) == 2 and None not in counts.values():
        n_cli, n_te = counts.values()
        assert n_cli is not None and n_te is not None
        print(f"instructions ({how}, one more run each; independent of load): "
              f"CLI {n_cli / 1e9:.3f} G, trec_eval {n_te / 1e9:.3f} G, CLI / trec_eval {n_cli / n_te:.2f}")
    else:
        print("instructions: not measured (perf stat cannot count instructions here, e.g. a virtual machine "
              "without hardware counters; --callgrind counts them with valgrind)")


def callgrind_instructions(cmd: list[str]) -> int | None:
    """Instructions executed by ``cmd`` (user space, all its threads) under ``valgrind --tool=callgrind``."""
    if shutil.which("valgrind") is None:
        return None
    res = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=3600)
    for line in res.stderr.splitlines():
        if "Collected :" in line:
            return int(line.split()[-1].replace(",", ""))
    return None


def build_trec_eval(tarball: Path, folder: Path) -> str:
    """trec_eval built from ``tarball`` with -O2 in ``folder``; its path.

    trec_eval's own Makefile compiles with ``-g`` and no optimisation, which
    is 12-13% slower than -O2 and would flatter every ratio against it.
    """
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(folder, filter="data")
    source = next(p.parent for p in folder.rglob("trec_eval.c"))
    flags = '-O2 -I. -DVERSIONID=\\"9.0.8\\"'
    subprocess.run(["make", "-s", f"CFLAGS={flags}"], cwd=source, check=True, capture_output=True, timeout=600)
    print(f"trec_eval built from {tarball.name} with CFLAGS={flags}")
    return str(source / "trec_eval")


def perf_counts_instructions() -> bool:
    """Whether ``perf stat`` can count user-space instructions on this machine."""
    return shutil.which("perf") is not None and instructions(["true"]) is not None


def instructions(cmd: list[str]) -> int | None:
    """User-space instructions retired by ``cmd`` (``perf stat``), None when they cannot be counted."""
    try:
        res = subprocess.run(["perf", "stat", "-x", ",", "-e", "instructions:u", "--", *cmd], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in res.stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2].startswith("instructions"):
            return int(fields[0]) if fields[0].isdigit() else None  # "<not supported>", "<not counted>"
    return None


def subprocess_in_root(cmd: list[str]) -> dict[str, Any]:
    """``run_child`` from the repository root (so ``-m evaluation`` finds the package)."""
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return run_child(cmd)
    finally:
        os.chdir(cwd)


def measure(tool: str, run_path: Path, qrels_path: Path) -> dict:
    """Time one tool in a fresh interpreter; None figures when it is not installed."""
    module = NEEDS.get(tool)
    if module:
        probe = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
        if probe.returncode:
            return {"skipped": f"{module} not installed (pip install -r requirements-bench.txt)"}
    res = run_child([sys.executable, __file__, "--child", tool, str(run_path), str(qrels_path)])
    if res["returncode"]:
        return {"skipped": f"failed: {res['stderr'].strip().splitlines()[-1] if res['stderr'].strip() else res['returncode']}"}
    figures = json.loads(res["stdout"].strip().splitlines()[-1])
    # The child's own CPU and peak memory as the kernel counted them, interpreter start included.
    figures.update(cpu=res["cpu"], rss_mb=res["rss_mb"])
    if tool == "verify":
        figures["verify"] = json.loads(res["stderr"].strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="BSARD scale only")
    parser.add_argument("--scales", default="bsard,msmarco", help="scales to run (default: bsard,msmarco)")
    parser.add_argument("--tools", default="core,pytrec_eval,ranx,ir_measures,verify",
                        help="in-process tools to time (default: all; '' for none)")
    parser.add_argument("--trec-eval", metavar="PATH", help="a trec_eval binary to time beside the command line")
    parser.add_argument("--build-trec-eval", metavar="TARBALL",
                        help="build trec_eval from its source tarball with -O2 (as a distribution would) and time it "
                             "(e.g. tests/data/reference/trec_eval-9.0.8-src.tar.gz)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command line (default 3)")
    parser.add_argument("--callgrind", action="store_true",
                        help="count the CLI's and trec_eval's instructions with valgrind when perf cannot (slow: "
                             "about 50x a run; meant for the BSARD scale)")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"variants of the files the command lines run on (default: {','.join(VARIANTS)})")
    parser.add_argument("--dir", help="where to write the generated files (default: a temporary folder)")
    parser.add_argument("--child", nargs=3, metavar=("TOOL", "RUN", "QRELS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    scales = ["bsard"] if args.quick else [x for x in args.scales.split(",") if x]
    if set(scales) - set(SCALES):
        parser.error(f"--scales: choose among {', '.join(SCALES)}")
    variants = [x for x in args.variants.split(",") if x]
    if set(variants) - set(VARIANTS):
        parser.error(f"--variants: choose among {', '.join(VARIANTS)}")
    tools = [t for t in args.tools.split(",") if t]
    if args.trec_eval and not os.access(args.trec_eval, os.X_OK):
        parser.error(f"--trec-eval {args.trec_eval}: not an executable file")
    trec_eval = args.trec_eval
    keep = Path(args.dir) if args.dir else None
    folder = keep or Path(tempfile.mkdtemp(prefix="lexboard-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, files in {folder}")
    # The command lines start as from an installed package: byte-compiled, whatever PYTHONDONTWRITEBYTECODE says
    # (a stale or missing .pyc costs every start its compilation, ~4 ms a module).
    compileall.compile_dir(str(ROOT / "evaluation"), quiet=1)
    if args.build_trec_eval:
        trec_eval = build_trec_eval(Path(args.build_trec_eval), folder / "trec_eval-build")
    try:
        for scale in scales:
            t = time.perf_counter()
            run_path, qrels_path = generate(folder, scale)
            lines = sum(1 for _ in open(run_path, "rb"))
            print(f"\n{scale}: {SCALES[scale][0]} queries x {SCALES[scale][1]} = {lines:,} lines, "
                  f"{run_path.stat().st_size / 2**20:.0f} MiB (generated in {time.perf_counter() - t:.1f} s)")
            print(f"{'tool':<12} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}  R@100 / MAP@100 / nDCG@10")
            results = {}
            for tool in tools:
                r = measure(tool, run_path, qrels_path)
                if "skipped" in r:
                    print(f"{tool:<12} skipped: {r['skipped']}")
                    continue
                results[tool] = r
                m = r["means"]
                vals = " / ".join(f"{v:.4f}" for v in list(m.values())[:3] if v is not None)
                print(f"{tool:<12} {r['wall']:8.2f} {r['cpu']:8.2f} {r['rss_mb']:8.0f}  {vals}")
                if tool == "verify":
                    v = r["verify"]
                    print(f"{'':<12} double-entry check alone: {v['verify_cpu']:.2f} s CPU, {v['verify_wall']:.2f} s wall, "
                          f"{v['values']:,} values, {'agree' if v['ok'] else 'DISAGREE'}")
            if "core" in results and "pytrec_eval" in results:
                ratio = results["pytrec_eval"]["cpu"] / max(results["core"]["cpu"], 1e-9)
                print(f"pytrec_eval / core CPU time: {ratio:.2f}x")
            for name in variants:
                print()
                side_by_side(variant(run_path, name), qrels_path, trec_eval, args.repeat, scale,
                             callgrind=args.callgrind)
            print(f"load average after the run: {os.getloadavg()[0]:.1f}")
    finally:
        if keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
