"""The worker's first entry (scoring, before its double entry) against the command line, on the same file.

    .venv/bin/python bench/bench_first_entry.py [--repeat 9] [--smoke]

A synthetic BSARD-scale run (222 topics x 1,000 rows, 22,633 documents, 1-5 relevant per topic) and its qrels are
written to a temporary folder, plain and gzipped. Per round, interleaved and paired, it measures the CPU time of

* ``python -m evaluation score --qrels Q --run R --measures M`` (the command's compiled fast path), a child
  process: its user + system time (``resource.getrusage(RUSAGE_CHILDREN)`` before and after), start-up included;
* the worker's first entry, ``submissions.services.results.first_entry`` on a ``LazyRun`` of the stored file (what
  ``result_compute`` calls: the fast path), in this process (``time.process_time``), without a corpus and with
  one of 22,633 ids (BSARD's and GreekBarRetrieval's datasets have one: every row within the depth is checked
  against it);
* the same entry on the numpy path (the compiled module switched off: the run parsed by ``read_run``, then
  ``evaluate``), which is what the worker did before;
* ``per_query_pack`` of the result (what the worker stores besides the means), for reference;
* the worker's whole scoring, as ``results.result_compute`` runs it: the double entry begun first
  (``evaluation.verify.begin`` with the worker's options: two processes, the file cut at ``DOUBLE_ENTRY_SHARE``),
  the first entry, ``per_query_pack``, then the double entry finished (every per-query value and mean compared):
  this process's CPU plus its reader's: the helper it forked once and keeps (``verify_halves.Helper``, not reaped
  between runs: its ``/proc/<pid>/schedstat``, in nanoseconds), or a child forked for the run (reaped, so in
  ``RUSAGE_CHILDREN``); the judgments read by the
  second implementation's reader beforehand, as the worker keeps them once per version;
* its peer (#39 item 3: "the whole with its double entry within the command line's plus the second
  implementation's own CPU on that file"): the command line's CPU above plus pytrec_eval's own on the same file,
  a fresh process reading the qrels and the run line by line into dicts (gzip through ``gzip.open``), as its
  users do, and evaluating the same eight measures (``recip_rank`` for MRR@100: the run is 1,000 deep).

Prints the medians and the ratios (worker / command line, medians of the per-round ratios) and writes them to
``var/bench-results/first_entry.json``. The double entry alone, its reading and its two processes are
``bench_double_entry.py``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexboard.settings")

import django  # noqa: E402

django.setup()

from bench.bench_double_entry import bsard_like  # noqa: E402
from bench.common import MACHINE_NOTE, gzipped, markdown_table  # noqa: E402
from evaluation import fastscore  # noqa: E402
from evaluation.corpus import CorpusIds  # noqa: E402
from evaluation.measures import parse_measures  # noqa: E402
from evaluation.qrels import read_qrels  # noqa: E402
from evaluation.reference import read_plain_qrels  # noqa: E402
from evaluation.runs import read_run  # noqa: E402
from evaluation.verify import begin  # noqa: E402
from evaluation.verify_halves import Helper  # noqa: E402
from submissions.services.results import DOUBLE_ENTRY_SHARE, LazyRun, first_entry, per_query_pack  # noqa: E402

MEASURES = "R@100,R@200,R@500,MAP@100,MRR@100,nDCG@10,nDCG@100,P@10"
RESULTS = ROOT / "var" / "bench-results"
#: The eight measures in pytrec_eval's names, for the peer's own run (``PEER``).
TREC_MEASURES = {"recall_100", "recall_200", "recall_500", "map_cut_100", "recip_rank", "ndcg_cut_10",
                 "ndcg_cut_100", "P_10"}
#: pytrec_eval on the file, as its users read one: the second implementation's own CPU (a fresh process).
PEER = f"""
import gzip, sys, pytrec_eval
qrels, run = {{}}, {{}}
with open(sys.argv[1]) as f:
    for line in f:
        q, _, d, g = line.split()
        qrels.setdefault(q, {{}})[d] = int(g)
with (gzip.open(sys.argv[2], "rt") if sys.argv[2].endswith(".gz") else open(sys.argv[2])) as f:
    for line in f:
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {{}})[d] = float(s)
pytrec_eval.RelevanceEvaluator(qrels, {sorted(TREC_MEASURES)!r}).evaluate(run)
"""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cli_cpu(qrels: Path, run: Path) -> float:
    before = _children_cpu()
    subprocess.run([sys.executable, "-m", "evaluation", "score", "--qrels", str(qrels), "--run", str(run),
                    "--measures", MEASURES], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return _children_cpu() - before


def peer_cpu(qrels: Path, run: Path) -> float:
    """pytrec_eval's own CPU on ``run``, its process's start included (as the command line's)."""
    before = _children_cpu()
    subprocess.run([sys.executable, "-c", PEER, str(qrels), str(run)], cwd=ROOT, check=True)
    return _children_cpu() - before


def _helpers_cpu() -> dict[int, float]:
    """CPU seconds of this process's kept double-entry helper, by pid (``/proc/<pid>/schedstat``'s first field)."""
    helper = Helper.kept()
    return {} if helper is None else {helper.pid: int(Path(f"/proc/{helper.pid}/schedstat").read_text().split()[0]) / 1e9}


def whole_cpu(qrels_text: bytes, plain_qrels: dict, run: Path, *, corpus: CorpusIds | None = None) -> float:
    """The worker's scoring with its double entry (``result_compute``'s order): this process's CPU and its
    reader's."""
    measures = parse_measures(MEASURES)
    start, children, helpers = time.process_time(), _children_cpu(), _helpers_cpu()
    with begin(plain_qrels, lambda: open(run, "rb"), measures, depth=1000, threshold=1, score_precision="float32",
               empty_queries="omit", corpus=corpus, processes=2, share=DOUBLE_ENTRY_SHARE) as check:
        evaluation = first_entry(run=LazyRun(lambda: read_run(str(run))), source=lambda: open(run, "rb"),
                                 qrels_text=lambda: qrels_text, qrels=lambda: read_qrels(qrels_text),
                                 measures=measures, depth=1000, threshold=1, score_precision="float32",
                                 empty_queries="omit", corpus=corpus)
        per_query_pack(evaluation, [m.name for m in measures])
        verification = check.finish(evaluation)
    assert verification.disagreement is None, verification.disagreement
    helped = sum(cpu - helpers.get(pid, 0.0) for pid, cpu in _helpers_cpu().items())
    return time.process_time() - start + _children_cpu() - children + helped


def worker_cpu(qrels_text: bytes, run: Path, *, fast: bool, corpus: CorpusIds | None = None):
    measures = parse_measures(MEASURES)
    native = fastscore._native
    if not fast:
        fastscore._native = None  # type: ignore[assignment]
    try:
        lazy = LazyRun(lambda: read_run(str(run)))
        start = time.process_time()
        evaluation = first_entry(run=lazy, source=lambda: open(run, "rb"), qrels_text=lambda: qrels_text,
                                 qrels=lambda: read_qrels(qrels_text), measures=measures, depth=1000, threshold=1,
                                 score_precision="float32", empty_queries="omit", corpus=corpus)
        scored = time.process_time() - start
        per_query_pack(evaluation, [m.name for m in measures])
        packed = time.process_time() - start - scored
    finally:
        fastscore._native = native
    assert lazy.loaded is not fast, "the fast path did not take the run" if fast else "numpy did not read it"
    return scored, packed, evaluation


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--smoke", action="store_true", help="3 rounds (the tests' mode)")
    args = parser.parse_args(argv)
    repeat = 3 if args.smoke else args.repeat
    if not fastscore.available():
        print("evaluation/_fastscore is not built (make native)", file=sys.stderr)
        return 2
    qrels_text, run_text = bsard_like()
    rows, out = [], {}
    with tempfile.TemporaryDirectory(prefix="lexboard-first-entry-") as folder:
        qrels = Path(folder) / "qrels.txt"
        qrels.write_bytes(qrels_text)
        plain_qrels = read_plain_qrels(qrels_text)
        bsard_corpus = CorpusIds.from_iterable(str(d) for d in range(1, 22_634))
        for kind, data, corpus in (("plain", run_text, None), ("gzipped", gzipped(run_text), None),
                                   ("plain, with a corpus of 22,633 ids (BSARD's docid rule)", run_text,
                                    bsard_corpus)):
            run = Path(folder) / (f"run-{kind.split(',')[0]}" + (".gz" if kind == "gzipped" else ""))
            run.write_bytes(data)
            cli, fast, slow, pack, ratio, before, whole, peer, against = [], [], [], [], [], [], [], [], []
            cli_cpu(qrels, run)  # warm the page cache and the command's imports once
            for _ in range(repeat):
                c = cli_cpu(qrels, run)
                f, p, ev_fast = worker_cpu(qrels_text, run, fast=True, corpus=corpus)
                s, _, ev_slow = worker_cpu(qrels_text, run, fast=False, corpus=corpus)
                assert ev_fast.means == ev_slow.means
                w, t = whole_cpu(qrels_text, plain_qrels, run, corpus=corpus), peer_cpu(qrels, run)
                cli.append(c), fast.append(f), slow.append(s), pack.append(p), whole.append(w), peer.append(t)
                ratio.append(f / c), before.append(s / c), against.append(w / (c + t))
            med = statistics.median
            out[kind] = {"cli_cpu_s": cli, "worker_fast_cpu_s": fast, "worker_numpy_cpu_s": slow, "pack_cpu_s": pack,
                         "ratio_fast": med(ratio), "ratio_numpy": med(before), "worker_whole_cpu_s": whole,
                         "pytrec_eval_cpu_s": peer, "ratio_whole": med(against)}
            rows.append([kind, f"{med(cli) * 1000:.0f}", f"{med(fast) * 1000:.0f}", f"{med(ratio):.2f}x",
                         f"{med(slow) * 1000:.0f}", f"{med(before):.2f}x", f"{med(pack) * 1000:.0f}",
                         f"{med(whole) * 1000:.0f}", f"{med(peer) * 1000:.0f}", f"{med(against):.2f}x"])
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / ("first_entry-smoke.json" if args.smoke else "first_entry.json")).write_text(json.dumps(out, indent=2))
    print(f"The worker's first entry against `python -m evaluation score`, BSARD scale 222 x 1,000, 8 measures "
          f"({MACHINE_NOTE}; CPU ms, medians of {repeat} paired rounds)\n")
    print(markdown_table(["run file", "command line", "worker, fast path", "worker / command",
                          "worker, numpy path (before)", "numpy / command", "per_query_pack",
                          "worker's whole, double entry included", "pytrec_eval on the file",
                          "whole / (command line + pytrec_eval)"], rows))
    print("\ntargets (#39 item 3): worker / command <= 1.5x; whole / (command line + pytrec_eval) <= 1.0x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
