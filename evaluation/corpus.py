"""Membership of docids in a dataset's corpus.

A corpus can hold millions of ids (MS MARCO: 8.8M), so ``CorpusIds`` keeps one
sorted uint64 per docid (the same hash the run reader uses; exact for ids of at
most 8 bytes, such as BSARD's ``1234`` or ``CivC::11``; for longer ids a false
"inside" needs a 64-bit collision) and tests whole arrays with one binary search.
"""

from __future__ import annotations

import io
from collections.abc import Iterable

import numpy as np

from . import _kernel as K
from .errors import InputError, ProblemCollector


class CorpusIds:
    """A compact set of docids with vectorized membership."""

    def __init__(self, keys: np.ndarray, example: str | None = None):
        self.keys = np.unique(keys.astype(np.uint64))
        self.example = example

    @classmethod
    def from_iterable(cls, docids: Iterable[str]) -> CorpusIds:
        """Build from docid strings; the first one becomes the scheme example."""
        ids = list(docids)
        if not ids:
            return cls(np.zeros(0, dtype=np.uint64))
        return cls(K.hash_words(K.strings_to_words(ids)), example=ids[0])

    @classmethod
    def read(cls, source: K.Source, *, name: str | None = None) -> CorpusIds:
        """Read a file of docids, one per line (path, bytes or binary file; ``.gz`` ok).

        Vectorized like the run reader, so 8.8M ids take seconds, not a list
        of 8.8M Python strings. Blank and ``#`` lines are skipped.
        """
        stream, display, own = K.open_source(source, name)
        collector = ProblemCollector(display, InputError)
        parts: list[np.ndarray] = []
        example = None
        try:
            for chunk in K.iter_chunks(stream, ncols=1, columns_help="document id", collector=collector):
                words = K.column_words(chunk, 0, collector, "document id")
                if example is None and len(words):
                    example = K.words_to_strings(words[:1])[0]
                parts.append(K.hash_words(words))
        finally:
            if own:
                stream.close()
        collector.raise_if_any()
        keys = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
        return cls(keys, example=example)

    def __len__(self) -> int:
        return len(self.keys)

    def __contains__(self, docid: str) -> bool:
        key = K.hash_words(K.strings_to_words([docid]))
        return bool(self.contains_keys(key)[0])

    def contains_keys(self, keys: np.ndarray) -> np.ndarray:
        """Membership of docid keys (``Run.doc_keys``) as a boolean array."""
        if len(self.keys) == 0:
            return np.zeros(len(keys), dtype=bool)
        pos = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        found: np.ndarray = self.keys[pos] == keys
        return found

    def to_bytes(self) -> bytes:
        """Serialize (npz) for caching."""
        buf = io.BytesIO()
        np.savez(buf, keys=self.keys, example=np.array(self.example or ""))
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> CorpusIds:
        """Inverse of ``to_bytes``."""
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return cls(z["keys"], example=str(z["example"]) or None)
