"""Generate the big cases of the bad-input corpus at test time (never committed: they are megabytes).

Each function writes one file into the folder it is given and returns its
path. The tests call them into ``tmp_path``; ``python tests/data/bad/make_big.py
OUT_DIR`` writes them all by hand.

* ``million_queries`` — a run with 1,000,000 rows, each for a different query
  (gzip-compressed, about 5 MB): accepted with a warning that the queries are
  unknown to the split, or refused at line ``max_lines + 1`` under a line cap.
* ``many_docs_one_query`` — 100,000 documents for one query: accepted, the
  rows beyond the dataset's depth are cut with a warning.
* ``gzip_bomb`` — a few hundred KB of gzip that decompresses to
  ``decompressed_bytes`` (default 64 MB) of valid-looking lines: refused once
  the decompressed size passes the cap, without inflating it all.
* ``long_line`` — one 2 MB line (a 2 MB document id): refused at line 1.
* ``zip_bomb`` — a zip whose member inflates to ``decompressed_bytes``: the
  admin import refuses it from the sizes in its directory.
"""

from __future__ import annotations

import gzip
import sys
import zipfile
from pathlib import Path

LINE = b"1 Q0 12 1 14.2 bm25\n"


def million_queries(folder: Path, *, n: int = 1_000_000) -> Path:
    """One row per query, query ids q0000000…, docid 12 (in the corpus), gzip level 1 for speed."""
    path = Path(folder) / "million_queries.txt.gz"
    with gzip.open(path, "wb", compresslevel=1) as out:
        step = 100_000
        for start in range(0, n, step):
            out.write("".join(f"q{i:07d} Q0 12 1 1.0 bm25\n" for i in range(start, min(n, start + step))).encode())
    return path


def many_docs_one_query(folder: Path, *, n: int = 100_000) -> Path:
    """Query 1 with docids 1…n, scores descending so the top 1,000 are corpus ids 1…1000."""
    path = Path(folder) / "hundred_thousand_docs_one_query.txt.gz"
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write("".join(f"1 Q0 {d} {d} {n - d + 1}.0 bm25\n" for d in range(1, n + 1)).encode())
    return path


def gzip_bomb(folder: Path, *, decompressed_bytes: int = 64 << 20) -> Path:
    """Valid-looking run lines repeated until ``decompressed_bytes``; compresses about 1000:1."""
    path = Path(folder) / "gzip_bomb.txt.gz"
    block = LINE * (1 << 16)  # 1.3 MB
    with gzip.open(path, "wb", compresslevel=6) as out:
        written = 0
        while written < decompressed_bytes:
            out.write(block)
            written += len(block)
    return path


def long_line(folder: Path, *, n_bytes: int = 2 << 20) -> Path:
    """One line longer than the readers' 1 MB limit: a 2 MB document id (it once made every row 2 MB wide)."""
    path = Path(folder) / "long_line.txt"
    path.write_bytes(b"1 Q0 " + b"x" * n_bytes + b" 1 1.0 bm25\n")
    return path


def zip_bomb(folder: Path, *, decompressed_bytes: int = 64 << 20) -> Path:
    """A zip holding one qrels file of ``decompressed_bytes`` zeros (deflate shrinks it to ~60 KB)."""
    path = Path(folder) / "zip_bomb.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open("qrels/test.tsv", "w", force_zip64=True) as member:
            chunk = bytes(1 << 20)
            for _ in range(decompressed_bytes // len(chunk)):
                member.write(chunk)
    return path


ALL = (million_queries, many_docs_one_query, gzip_bomb, long_line, zip_bomb)

if __name__ == "__main__":
    out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out_dir.mkdir(parents=True, exist_ok=True)
    for make in ALL:
        print(make(out_dir))
