"""Vectorized kernel shared by the run, qrels and corpus readers (private), one module per concern.

Why this exists: a 7-million-line run must be read in a few seconds and a few
hundred MB, so no Python object is made per line. A file is read in chunks of
whole lines; in each chunk numpy finds the token boundaries (any run of bytes
<= 0x20 separates tokens: spaces, tabs, CR), checks the column count per line,
and gathers only the columns needed:

* identifiers (query ids, docids, tags) become rows of little-endian uint64
  words holding their bytes, zero padded. That is an exact, compact code: two
  identifiers are equal iff their words are equal, and byte-swapped words sort
  like ``strcmp`` (trec_eval's docid order). ``hash_words`` folds the words into
  one uint64; for identifiers of at most 8 bytes it is a bijection, so the hash
  itself is exact, and longer ones are always re-checked on their words.
* scores are parsed with an exact decimal fast path (Clinger's: at most 15
  significant digits and a power of ten up to 1e22 give the correctly rounded
  double, the same as ``strtod``), and anything else (exponents, long
  mantissas, nan, garbage) goes through Python's ``float`` for those rows only.

Messages for bad lines are built in Python, but only for the lines that fail.

The parts, each stating the invariant it relies on:

* ``sources``: a path, bytes or a stream become one binary stream, gunzipped;
* ``chunks``: whole lines in a padded buffer, token boundaries per row;
* ``numbers``: score and integer columns;
* ``words``: identifiers as uint64 words, their codes, hashes and order;
* ``table``: growable column storage.

The readers use the names below as ``K.name`` (``from . import _kernel as K``).
"""

from .chunks import CHUNK_BYTES, MAX_LINE_BYTES, PAD, Chunk, iter_chunks
from .numbers import as_single, check_integers, check_scores, compared_scores, parse_scores, shown_token
from .sources import UTF8_BOM, Source, open_source, sniff_content
from .table import Columns, size_hint
from .words import (
    MAX_ID_BYTES,
    codes_for,
    column_words,
    hash_words,
    low_mask,
    pad_words,
    pair_key,
    sort_keys_asc,
    sort_keys_desc,
    splitmix64,
    strings_to_words,
    words_to_strings,
)

__all__ = [
    "CHUNK_BYTES", "MAX_ID_BYTES", "MAX_LINE_BYTES", "PAD", "UTF8_BOM", "Chunk", "Columns", "Source", "as_single",
    "check_integers", "check_scores", "codes_for", "column_words", "compared_scores", "hash_words", "iter_chunks", "low_mask",
    "open_source", "pad_words", "pair_key", "parse_scores", "shown_token", "size_hint", "sniff_content", "sort_keys_asc",
    "sort_keys_desc", "splitmix64", "strings_to_words", "words_to_strings",
]
