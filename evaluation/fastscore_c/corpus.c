/* The corpus check: whether a run's docid is one of the dataset's documents, by the key the corpus was stored
 * with (``evaluation.corpus.CorpusIds.keys``, sorted; ``_kernel.words.hash_words`` makes them). */
#include "fastscore.h"

static inline uint64_t splitmix64(uint64_t x)
{
    x ^= x >> 30; x *= 0xBF58476D1CE4E5B9ULL; x ^= x >> 27; x *= 0x94D049BB133111EBULL; x ^= x >> 31;
    return x;
}

/* ``_kernel.words``' fold of a docid (``hash_words``): its UTF-8 bytes as little-endian 8-byte words, zero
 * padded; the first word mixed (``_mix_fast``), each later non-zero word i folded in with splitmix64. The same
 * key the corpus was built with, so membership here is ``CorpusIds.contains_keys``' exactly. */
static inline uint64_t corpus_key(Tok doc)
{
    uint64_t h = 0;
    for (int at = 0, i = 0; at < doc.len; at += 8, i++) {
        uint64_t w = 0;
        for (int j = 0; j < 8 && at + j < doc.len; j++) w |= (uint64_t)(unsigned char)doc.p[at + j] << (8 * j);
        if (i == 0) { h = w ^ (w >> 32); h *= 0xD6E8FEB86659FD93ULL; h ^= h >> 29; }
        else if (w) h = splitmix64(h ^ splitmix64(w ^ (uint64_t)i));
    }
    return h;
}

/* Whether a docid is in the corpus (a binary search of its sorted keys). */
static inline int in_corpus(const Ctx *c, Tok doc)
{
    uint64_t key = corpus_key(doc);
    size_t lo = 0, hi = c->n_corpus;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->corpus[mid] < key) lo = mid + 1; else hi = mid;
    }
    return lo < c->n_corpus && c->corpus[lo] == key;
}

/* How many of a query's first `n` rows (those within the depth) name a document outside the corpus; 0 when the
 * dataset has no corpus. One call a query: the check inlined in its loop. */
long outside_corpus(const Ctx *c, const Row *rows, size_t n)
{
    long outside = 0;
    if (!c->corpus) return 0;
    for (size_t i = 0; i < n; i++) outside += !in_corpus(c, rows[i].doc);
    return outside;
}
