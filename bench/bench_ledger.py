"""The release ledger's cost per release: the crafted-shape check on a corpus of BSARD's size.

    .venv/bin/python bench/bench_ledger.py            # 22,633 documents, 222 topics x 100 documents
    .venv/bin/python bench/bench_ledger.py --smoke    # 2,000 documents, 20 topics, one repeat

After a release on a hidden split commits, the worker reads the released run
once (``submissions.services.ledger.release_check_shape``): the documents
ranked ahead of each topic's last one are looked up in the corpus text the
dataset stores (``Corpus.texts``, one streaming pass over the gzip JSON
Lines) and compared with the question (``crafted_reasons``). Timed here on a
synthetic corpus (110 words of a 20,000-word vocabulary per document) and a
run of 100 random documents per topic: the two parts, wall time, the median
of ``--repeat`` runs. Django is set up (the corpus is an unsaved model row); no
database is used. Results go to var/bench-results/ledger.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexboard.settings")

import django  # noqa: E402

django.setup()

from bench.common import BASE_DIR, MACHINE_NOTE, markdown_table  # noqa: E402
from catalogue.models import Corpus  # noqa: E402
from submissions.services.ledger import crafted_reasons  # noqa: E402


def case(n_docs: int, n_topics: int, depth: int, *, seed: int = 0):
    rng = random.Random(seed)
    vocab = [f"word{i:05d}" for i in range(20_000)]
    lines = (json.dumps({"_id": str(i), "title": "", "text": " ".join(rng.choices(vocab, k=110))})
             for i in range(1, n_docs + 1))
    corpus = Corpus(documents_gz=gzip.compress("\n".join(lines).encode(), mtime=0))
    topics = {f"q{i}": " ".join(rng.choices(vocab, k=15)) for i in range(n_topics)}
    ranking = {q: [str(rng.randint(1, n_docs)) for _ in range(depth)] for q in topics}
    return corpus, topics, ranking


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="a small corpus, one repeat")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    n_docs, n_topics, depth = (2_000, 20, 100) if args.smoke else (22_633, 222, 100)
    repeat = 1 if args.smoke else args.repeat
    corpus, topics, ranking = case(n_docs, n_topics, depth)
    scans, checks = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        wanted = {d for docs in ranking.values() for d in docs[:-1]}
        texts = {d: f"{title} {text}" for d, (title, text) in corpus.texts(wanted).items()}
        middle = time.perf_counter()
        reasons = crafted_reasons(ranking=ranking, topics=topics, texts=texts)
        scans.append(middle - start)
        checks.append(time.perf_counter() - middle)
    record = {"documents": n_docs, "topics": n_topics, "depth": depth, "corpus_gz_bytes": len(corpus.documents_gz),
              "texts_read": len(texts), "corpus_pass_s": statistics.median(scans),
              "shape_check_s": statistics.median(checks), "flagged": bool(reasons)}
    print(markdown_table(["documents", "topics x depth", "corpus (MB gz)", "corpus pass (s)", "shape check (s)",
                          "flagged"],
                         [[f"{n_docs:,}", f"{n_topics} x {depth}", f"{len(corpus.documents_gz) / 1e6:.1f}",
                           f"{record['corpus_pass_s']:.2f}", f"{record['shape_check_s']:.2f}", record["flagged"]]]))
    print(MACHINE_NOTE)
    out = BASE_DIR / "var" / "bench-results" / ("ledger-smoke.json" if args.smoke else "ledger.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
