"""Growth: scoring time and peak memory of the worker's scoring path for runs of 10k, 100k, 1M and 7M lines.

    .venv/bin/python bench/bench_growth.py              # table + docs/performance/growth.svg
    .venv/bin/python bench/bench_growth.py --sizes 10000,100000 --no-plot

Each size is scored in a fresh subprocess, the way a worker child does it
after its caches are warm: the qrels and the corpus ids are loaded first
(``_qrels_cached`` / ``_corpus_cached`` keep them per process), then the timed
part is exactly ``submissions.services.scoring._score_claimed`` minus the database
writes: ``read_run`` (with the upload caps) → ``evaluate`` (the dataset's 8
measures, depth 1,000, the corpus check) → ``per_query_pack``. Peak memory is
the child's ``ru_maxrss`` (``resource.getrusage``); "scoring memory" is that
peak minus the resident size before scoring.

Runs have 1,000 documents per query (10, 100, 1,000 and 7,000 queries; 7M
lines is MS MARCO dev's size), docids from a corpus of 1M ids; each query has
1 to 6 relevant documents, some of them retrieved. Files are generated once
into var/bench-growth/ and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BASE_DIR, MACHINE_NOTE, PYTHON, log, markdown_table  # noqa: E402

MEASURES = ["R@100", "R@200", "R@500", "MAP@100", "MRR@100", "nDCG@10", "P@10", "RP"]
DEPTH = 1000
CORPUS = 1_000_000
DATA_DIR = BASE_DIR / "var" / "bench-growth"
PLOT = BASE_DIR / "docs" / "performance" / "growth.svg"


# --- data -------------------------------------------------------------------------------------


def make_files(lines: int, folder: Path, corpus_size: int = CORPUS) -> tuple[Path, Path]:
    """A run of ``lines`` lines (``lines // 1000`` queries × 1,000) and its qrels; reused when present."""
    import numpy as np

    n_queries = max(1, lines // DEPTH)
    run_path = folder / f"run-{lines}.txt"
    qrels_path = folder / f"qrels-{lines}.txt"
    if run_path.exists() and qrels_path.exists():
        return run_path, qrels_path
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(lines)
    scores = [f"{s:.4f}" for s in np.linspace(50.0, 1.0, DEPTH)]
    ranks = [str(r) for r in range(1, DEPTH + 1)]
    tmp = run_path.with_suffix(".part")
    qrels_lines = []
    with open(tmp, "w") as out:
        for q in range(1, n_queries + 1):
            # Distinct docids per query: a random start and stride through the corpus.
            start = int(rng.integers(0, corpus_size))
            stride = int(rng.integers(1, corpus_size // DEPTH))
            docs = ((start + np.arange(DEPTH) * stride) % corpus_size + 1).astype(str).tolist()
            qid = str(q)
            out.write("".join(f"{qid} Q0 {d} {r} {s} growth\n" for d, r, s in zip(docs, ranks, scores)))
            n_rel = int(min(6, 1 + rng.poisson(1.2)))
            relevant = set(docs[int(i)] for i in rng.integers(0, DEPTH, size=n_rel // 2 + 1))
            while len(relevant) < n_rel:
                relevant.add(str(int(rng.integers(1, corpus_size + 1))))
            qrels_lines.extend(f"{qid} 0 {d} 1\n" for d in sorted(relevant))
    tmp.rename(run_path)
    qrels_path.write_text("".join(qrels_lines))
    return run_path, qrels_path


# --- the child: one size, one process ----------------------------------------------------------


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _reset_peak() -> None:
    """Reset the kernel's peak-RSS mark of this process (what ``ru_maxrss`` reports) to the current size."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass  # then the peak includes the start-up; the table says "scoring MB" = peak - before either way


def child(run_path: Path, qrels_path: Path, corpus_size: int = CORPUS) -> dict:
    """Score one run as a warm worker child would; the numbers as a dict."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexboard.settings")
    import django

    django.setup()
    from django.conf import settings

    from evaluation.corpus import CorpusIds
    from evaluation.measures import parse_measure
    from evaluation.qrels import read_qrels
    from evaluation.runs import read_run
    from evaluation.scoring import evaluate
    from submissions.services import per_query_pack

    qrels = read_qrels(qrels_path)
    corpus = CorpusIds.from_iterable(str(i) for i in range(1, corpus_size + 1))
    measures = [parse_measure(m) for m in MEASURES]
    _reset_peak()  # building the corpus set is the worker's start-up cost (cached per process), not scoring
    rss_before = _rss_mb()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    with open(run_path, "rb") as fh:
        run = read_run(fh, name=run_path.name, max_lines=settings.LEXBOARD_MAX_RUN_LINES,
                       max_bytes=settings.LEXBOARD_MAX_DECOMPRESSED_BYTES)
    wall_read = time.perf_counter() - wall0
    evaluation = evaluate(qrels, run, measures, depth=DEPTH, corpus=corpus, docid_example="1234")
    wall_eval = time.perf_counter() - wall0 - wall_read
    blob = per_query_pack(evaluation, MEASURES)
    wall = time.perf_counter() - wall0
    cpu = time.process_time() - cpu0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6  # kB (KiB) on Linux
    return {
        "lines": len(run), "queries": len(evaluation.qids), "wall_s": wall, "cpu_s": cpu, "read_s": wall_read,
        "evaluate_s": wall_eval, "pack_s": wall - wall_read - wall_eval, "peak_mb": peak,
        "rss_before_mb": rss_before, "scoring_mb": peak - rss_before, "per_query_bytes": len(blob),
        "file_mb": run_path.stat().st_size / 1e6, "R@100": float(evaluation.means["R@100"]),
    }


def measure(lines: int, folder: Path, corpus_size: int = CORPUS, memory_cap_mb: int | None = None) -> dict:
    run_path, qrels_path = make_files(lines, folder, corpus_size)

    def cap() -> None:  # in the child, before it starts: a hard limit on its address space
        if memory_cap_mb:
            limit = memory_cap_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    out = subprocess.run(
        [PYTHON, __file__, "--child", str(run_path), str(qrels_path), str(corpus_size)], cwd=BASE_DIR, check=True,
        capture_output=True, text=True, env={k: v for k, v in os.environ.items() if not k.startswith("DATABASE")},
        preexec_fn=cap,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- the plot: a small hand-written SVG (no plotting dependency) ---------------------------------


def svg_plot(results: list[dict], *, hard_limit: float) -> str:
    """Two log–log panels: scoring time and scoring memory against run lines, with a linear reference."""
    import math

    width, height, pad = 760, 345, 58
    panel_w = (width - 3 * pad) / 2
    xs = [r["lines"] for r in results]
    x_lo, x_hi = math.log10(min(xs)) - 0.2, math.log10(max(xs)) + 0.2

    def panel(x0: float, key: str, label: str, unit: str) -> list[str]:
        ys = [max(r[key], 1.0 if unit == "MB" else 1e-3) for r in results]
        y_lo, y_hi = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)) + 0.01)
        top, bottom = 40, height - 65

        def px(x):
            return x0 + (math.log10(x) - x_lo) / (x_hi - x_lo) * panel_w

        def py(y):
            return bottom - (math.log10(y) - y_lo) / (y_hi - y_lo) * (bottom - top)

        out = [f'<text x="{x0 + panel_w / 2:.0f}" y="22" text-anchor="middle" class="t">{label}</text>',
               f'<rect x="{x0:.0f}" y="{top}" width="{panel_w:.0f}" height="{bottom - top}" class="frame"/>']
        for e in range(y_lo, y_hi + 1):
            y = py(10**e)
            out.append(f'<line x1="{x0:.0f}" x2="{x0 + panel_w:.0f}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
            out.append(f'<text x="{x0 - 6:.0f}" y="{y + 4:.1f}" text-anchor="end">{_num(10**e)} {unit}</text>')
        for x in xs:
            out.append(f'<text x="{px(x):.1f}" y="{bottom + 16}" text-anchor="middle">{_num(x)}</text>')
        out.append(f'<text x="{x0 + panel_w / 2:.0f}" y="{bottom + 34}" text-anchor="middle">run lines</text>')
        # Linear reference through the largest run: y = c * lines.
        c = ys[-1] / xs[-1]
        ref = [(x, c * x) for x in (xs[0], xs[-1])]
        out.append('<polyline class="ref" points="' + " ".join(f"{px(x):.1f},{py(max(y, 10**y_lo)):.1f}"
                                                             for x, y in ref) + '"/>')
        out.append('<polyline class="line" points="' + " ".join(f"{px(x):.1f},{py(y):.1f}"
                                                              for x, y in zip(xs, ys)) + '"/>')
        for x, y in zip(xs, ys):
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" class="dot"><title>{_num(x)} lines: '
                       f'{y:.3g} {unit}</title></circle>')
        return out

    body = panel(pad, "cpu_s", f"Scoring CPU time (hard limit {hard_limit:.0f} s wall)", "s")
    body += panel(2 * pad + panel_w, "scoring_mb", "Scoring memory (peak − before)", "MB")
    style = ("text{font:11px sans-serif;fill:#333}.t{font-weight:bold;font-size:12px}.frame{fill:none;stroke:#999}"
             ".grid{stroke:#e4e4e4}.line{fill:none;stroke:#1f5fa8;stroke-width:2}.dot{fill:#1f5fa8}"
             ".ref{fill:none;stroke:#c44;stroke-dasharray:4 3}")
    legend = (f'<text x="{width - pad}" y="{height - 6}" text-anchor="end">solid: measured; dashed: linear '
              f'growth through the largest run ({MACHINE_NOTE})</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" role="img" aria-label="Scoring time and memory against run size">'
            f"<style>{style}</style>" + "".join(body) + legend + "</svg>\n")


def _num(x: float) -> str:
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if x >= div:
            return f"{x / div:g}{suffix}"
    return f"{x:g}"


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000,7000000")
    parser.add_argument("--data", type=Path, default=DATA_DIR, help="Where the generated runs go (reused).")
    parser.add_argument("--plot", type=Path, default=PLOT)
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--replot", action="store_true", help="Only redraw the plot from the last --out file.")
    parser.add_argument("--memory-cap-mb", type=int, default=1500,
                        help="Hard cap on each child's address space (RLIMIT_AS), as proposed for a worker child "
                             "(default 1500; 0 = none). A run that needs more fails with MemoryError.")
    parser.add_argument("--out", type=Path, default=BASE_DIR / "var" / "bench-results" / "growth.json")
    parser.add_argument("--smoke", action="store_true", help="Tiny sizes (1k, 5k lines), no plot in docs/.")
    args = parser.parse_args(argv)
    if args.smoke:
        args.out = args.out.with_name(args.out.stem + "-smoke.json")
        args.sizes, args.plot = "1000,5000", args.out.parent / "growth-smoke.svg"
        args.data, corpus_size = args.data / "smoke", 20_000
    else:
        corpus_size = CORPUS

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexboard.settings")
    from lexboard.settings import LEXBOARD_SCORING_HARD_LIMIT as hard_limit

    if args.replot:
        results = json.loads(args.out.read_text())["results"]
        args.plot.write_text(svg_plot(results, hard_limit=hard_limit))
        return 0
    results = []
    for lines in (int(s) for s in args.sizes.split(",")):
        t0 = time.monotonic()
        r = measure(lines, args.data, corpus_size, args.memory_cap_mb or None)
        results.append(r)
        log(f"{lines:>9,} lines: {r['wall_s']:7.2f} s wall, {r['cpu_s']:7.2f} s CPU, peak {r['peak_mb']:6.0f} MB "
            f"(scoring {r['scoring_mb']:5.0f} MB)  [{time.monotonic() - t0:.0f}s with generation]")

    rows = [[f"{r['lines']:,}", f"{r['queries']:,}", f"{r['file_mb']:.1f}", f"{r['read_s']:.2f}",
             f"{r['evaluate_s']:.2f}", f"{r['pack_s']:.2f}", f"{r['wall_s']:.2f}", f"{r['cpu_s']:.2f}",
             f"{r['wall_s'] / r['lines'] * 1e6:.2f}", f"{r['peak_mb']:.0f}", f"{r['scoring_mb']:.0f}"]
            for r in results]
    print(f"Growth of the scoring path ({MACHINE_NOTE}; 1,000 documents per query, 8 measures, corpus check)\n")
    print(markdown_table(["lines", "queries", "file MB", "read s", "evaluate s", "pack s", "total s", "CPU s",
                          "µs per line", "peak MB", "scoring MB"], rows))
    largest = results[-1]
    print(f"\nlargest run: {largest['wall_s']:.1f} s of the worker's hard limit of {hard_limit} s "
          f"(LEXBOARD_SCORING_HARD_LIMIT); peak {largest['peak_mb']:.0f} MB")
    if not args.no_plot:
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        args.plot.write_text(svg_plot(results, hard_limit=hard_limit))
        log(f"plot: {args.plot}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": MACHINE_NOTE, "results": results}, indent=2))
    return 0 if largest["wall_s"] < hard_limit else 1


if __name__ == "__main__":
    sys.exit(main())
