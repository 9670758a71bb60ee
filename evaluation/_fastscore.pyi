"""Types of the compiled scorer (evaluation/fastscore_c/); see evaluation/fastscore.py."""

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

def score(run: str | Callable[[int], bytes | None], qrels: str | bytes, measures: Sequence[tuple[int, int]],
          depth: int, threshold: int, float32: bool, empty_queries: int, grouped: bool = True,
          details: bool = False, corpus: NDArray[np.uint64] | None = None, /,
          ) -> (tuple[list[str], list[list[float]], list[float], dict[str, int | list[str]]]
                | tuple[list[str], list[list[float]], list[float], dict[str, int | list[str]],
                        tuple[bytes, bytes, bytes, bytes, bytes]]
                | str | None): ...
