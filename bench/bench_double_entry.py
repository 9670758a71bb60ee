"""The worker's double entry at BSARD scale: the time verification adds to scoring one run.

    .venv/bin/python bench/bench_double_entry.py [--repeat 7]

Scores a synthetic 222 x 1,000 run (22,633 documents, 1-5 relevant per
query, BSARD's five measures) the way ``submissions.services.results``
does: ``evaluate`` on the parsed run, then ``verify`` on the stored file
itself, read again by the plain reader (pytrec_eval for float32, the plain
implementation for float64). Prints the CPU time of reading the run, of the
core's ``evaluate`` and of the check (its own reading included), median of
``--repeat`` runs in this process, and the ratio of the check to the core's
work (reading + evaluating); then the check's wall time in one process and
in two (``verify(processes=2)``, the worker's default: half the file read and
scored in a forked process), alternated.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import MACHINE_NOTE, markdown_table, synthetic_run  # noqa: E402
from evaluation.measures import parse_measure  # noqa: E402
from evaluation.qrels import read_qrels  # noqa: E402
from evaluation.runs import read_run  # noqa: E402
from evaluation.scoring import evaluate  # noqa: E402
from evaluation.verify import verify  # noqa: E402

MEASURES = ["R@100", "R@200", "R@500", "MAP@100", "MRR@100"]


def bsard_like(seed: int = 0) -> tuple[bytes, bytes]:
    rng = np.random.default_rng(seed)
    qrels = {str(q): {str(d): 1 for d in rng.choice(22_633, size=int(rng.integers(1, 6)), replace=False) + 1}
             for q in range(1, 223)}
    text = "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()).encode()
    return text, synthetic_run(qrels=qrels, seed=seed)


def cpu(fn, *args, **kwargs) -> tuple[float, object]:
    start = time.process_time()
    out = fn(*args, **kwargs)
    return time.process_time() - start, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    qrels_text, run_text = bsard_like()
    qrels, run = read_qrels(qrels_text), read_run(run_text)
    measures = [parse_measure(m) for m in MEASURES]
    rows = []
    for precision in ("float32", "float64"):
        parse, core, check, walls = [], [], [], {1: [], 2: []}
        for _ in range(args.repeat):
            parse.append(cpu(read_run, run_text)[0])
            t, evaluation = cpu(evaluate, qrels, run, measures, score_precision=precision)
            core.append(t)
            t, verification = cpu(verify, qrels, run_text, evaluation, score_precision=precision)
            assert verification.ok, verification.disagreement
            check.append(t)
            for processes in walls:  # the worker's setting (LEXBOARD_DOUBLE_ENTRY_PROCESSES), alternated
                start = time.perf_counter()
                assert verify(qrels, run_text, evaluation, score_precision=precision, processes=processes).ok
                walls[processes].append(time.perf_counter() - start)
        p, c, v = statistics.median(parse), statistics.median(core), statistics.median(check)
        one, two = statistics.median(walls[1]), statistics.median(walls[2])
        rows.append([precision, verification.method, f"{p * 1000:.0f}", f"{c * 1000:.0f}", f"{v * 1000:.0f}",
                     f"{v / (p + c):.2f}x", f"{one * 1000:.0f}", f"{two * 1000:.0f} ({two / one:.2f}x)",
                     verification.n_values])
    print(f"Double entry at BSARD scale, 222 x 1,000, {len(MEASURES)} measures ({MACHINE_NOTE}; "
          f"CPU ms, median of {args.repeat})\n")
    print(markdown_table(["precision", "second implementation", "reading the run ms", "evaluate ms", "check ms",
                          "check / (read + evaluate)", "check wall ms, 1 process", "check wall ms, 2 processes",
                          "values compared"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
