"""Benchmark: the whole scoring path (read files -> every default measure) against the peers.

Generates seeded runs and qrels in a temporary folder, then times, each in its
own subprocess so that peak memory is measured per tool:

* ``core``         this package (``evaluation.read_qrels/read_run/evaluate``)
* ``pytrec_eval``  pytrec-eval-terrier, with the usual line-by-line parsing into dicts
* ``ranx``         ranx (``Run.from_file`` / ``Qrels.from_file`` / ``evaluate``), JIT warm-up included
* ``ir_measures``  ir_measures (``read_trec_run`` / ``calc_aggregate``)
* ``trec_eval``    the trec_eval binary, when one is on the PATH

Scales: BSARD (222 queries x 1,000) and MS MARCO dev (6,980 queries x 1,000,
about 7M lines). ``--quick`` runs the BSARD scale only.

    .venv/bin/python bench/bench_metrics.py --quick
    .venv/bin/python bench/bench_metrics.py              # both scales; the large one takes minutes

Peers are optional (``pip install -r requirements-bench.txt``); a missing one
is reported as skipped. Wall time on a shared machine is noisy, so CPU time
(user + system) is printed too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

SCALES = {
    # name: (queries, rows per query, corpus size, seed)
    "bsard": (222, 1000, 22_633, 1),
    "msmarco": (6_980, 1000, 8_841_823, 2),
}

CORE_MEASURES = None  # evaluation.DEFAULT_MEASURES
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


def _trec_eval(run_path: str, qrels_path: str) -> dict:
    cmd = ["trec_eval", "-c"] + [x for m in TREC_MEASURES for x in ("-m", m)] + [qrels_path, run_path]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    found = {line.split()[0]: float(line.split()[2]) for line in out.splitlines()}
    return {"R@100": found.get("recall_100"), "MAP@100": found.get("map_cut_100"), "nDCG@10": found.get("ndcg_cut_10")}


CHILDREN = {"core": _core, "pytrec_eval": _pytrec_eval, "ranx": _ranx, "ir_measures": _ir_measures,
            "trec_eval": _trec_eval}
NEEDS = {"pytrec_eval": "pytrec_eval", "ranx": "ranx", "ir_measures": "ir_measures"}


def measure(tool: str, run_path: Path, qrels_path: Path) -> dict:
    """Time one tool in a fresh interpreter; None figures when it is not installed."""
    if tool == "trec_eval" and shutil.which("trec_eval") is None:
        return {"skipped": "no trec_eval binary on the PATH"}
    module = NEEDS.get(tool)
    if module:
        probe = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
        if probe.returncode:
            return {"skipped": f"{module} not installed (pip install -r requirements-bench.txt)"}
    res = subprocess.run([sys.executable, __file__, "--child", tool, str(run_path), str(qrels_path)],
                         capture_output=True, text=True)
    if res.returncode:
        return {"skipped": f"failed: {res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.returncode}"}
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="BSARD scale only")
    parser.add_argument("--tools", default="core,pytrec_eval,ranx,ir_measures,trec_eval")
    parser.add_argument("--dir", help="where to write the generated files (default: a temporary folder)")
    parser.add_argument("--child", nargs=3, metavar=("TOOL", "RUN", "QRELS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    scales = ["bsard"] if args.quick else ["bsard", "msmarco"]
    tools = args.tools.split(",")
    keep = Path(args.dir) if args.dir else None
    folder = keep or Path(tempfile.mkdtemp(prefix="lexboard-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, files in {folder}")
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
            if "core" in results:
                for peer in ("trec_eval", "pytrec_eval"):
                    if peer in results:
                        ratio = results[peer]["cpu"] / max(results["core"]["cpu"], 1e-9)
                        print(f"core is {ratio:.1f}x faster than {peer} (CPU time)")
            print(f"load average after the run: {os.getloadavg()[0]:.1f}")
    finally:
        if keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
