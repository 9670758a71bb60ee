"""JSON runs made to reach the JSON reader's limits (tests/evaluation/test_run_json_child.py, the child itself;
tests/api/test_json_run_child.py, through the upload)."""

from __future__ import annotations

#: Queries and documents of a run whose conversion needs several seconds of CPU and wall time: four million
#: documents, 67 MB of JSON, 3.6-3.8 s where a million took 0.9 s (7 December 2026, so a 1 s cap was a margin of
#: 10%, and a faster machine converted it under the cap).
SLOW = (8_000, 500)


def one_query(n_docs: int) -> bytes:
    """One query holding ``n_docs`` documents: the reader holds them all at once (about 200 bytes each)."""
    return ('{"q1": {' + ", ".join(f'"d{i:07d}": 0.{i}' for i in range(n_docs)) + "}}").encode()


def many_queries(n_queries: int, n_docs: int) -> bytes:
    """Queries of ``n_docs`` documents each: little memory, CPU time in proportion."""
    docs = ", ".join(f'"d{i:05d}": {i}.5' for i in range(n_docs))
    return ("{" + ", ".join(f'"q{q}": {{{docs}}}' for q in range(n_queries)) + "}").encode()
