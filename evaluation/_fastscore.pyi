"""Types of the compiled scorer (evaluation/_fastscore.c); see evaluation/fastscore.py."""

from collections.abc import Sequence

def score(run_path: str, qrels_path: str, measures: Sequence[tuple[int, int]], depth: int, threshold: int,
          float32: bool, /) -> tuple[list[str], list[list[float]], list[float], int, int, int] | None: ...
