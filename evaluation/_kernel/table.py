"""Growable column storage for the rows a reader keeps, and the size hint that sizes it.

Invariant: ``Columns`` only appends; a column's first ``n`` entries are the
rows read so far, in file order, and ``get`` returns exactly those.
"""

from __future__ import annotations

import gzip
import io
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from .words import pad_words

if TYPE_CHECKING:
    from numpy.typing import DTypeLike


class Columns:
    """Growable column arrays filled chunk by chunk.

    Writing each chunk into preallocated arrays (instead of keeping per-chunk
    arrays and concatenating) keeps the heap from fragmenting, so the resident
    size after reading a 7M-line run stays close to the data itself.
    """

    def __init__(self, specs: dict[str, tuple[DTypeLike, int]], capacity: int):
        self.n = 0
        self.capacity = max(capacity, 1024)
        self.arrays = {name: np.empty((self.capacity, width) if width else self.capacity, dtype=dtype)
                       for name, (dtype, width) in specs.items()}

    def append(self, **values: np.ndarray) -> None:
        """Append the same number of rows to every column (2-D columns may widen)."""
        m = len(next(iter(values.values())))
        if self.n + m > self.capacity:
            self._grow(max(self.n + m, int(self.capacity * 1.5)))
        for name, v in values.items():
            arr = self.arrays[name]
            if arr.ndim == 2 and v.shape[1] != arr.shape[1]:
                if v.shape[1] > arr.shape[1]:
                    wider = np.zeros((self.capacity, v.shape[1]), dtype=arr.dtype)
                    wider[:self.n, :arr.shape[1]] = arr[:self.n]
                    self.arrays[name] = arr = wider
                else:
                    v = pad_words(v, arr.shape[1])
            arr[self.n:self.n + m] = v
        self.n += m

    def _grow(self, capacity: int) -> None:
        for name, arr in self.arrays.items():
            bigger = np.empty((capacity,) + arr.shape[1:], dtype=arr.dtype)
            bigger[:self.n] = arr[:self.n]
            self.arrays[name] = bigger
        self.capacity = capacity

    def get(self, name: str) -> np.ndarray:
        """The filled part of a column (a view; untouched capacity is never resident)."""
        return self.arrays[name][:self.n]


def size_hint(stream: Any) -> int | None:
    """Expected size in bytes of the text of a stream, when cheaply known.

    For gzip the compressed size is scaled by 5 (runs compress 3 to 5 times):
    overestimating costs nothing, because untouched capacity is never resident,
    while underestimating makes the columns grow by copying.
    """
    if isinstance(stream, gzip.GzipFile):
        inner = size_hint(stream.fileobj) if stream.fileobj is not None else None
        return inner * 5 if inner else None
    try:
        return os.fstat(stream.fileno()).st_size
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        pass
    if isinstance(stream, io.BytesIO):
        return len(stream.getbuffer())
    return None
