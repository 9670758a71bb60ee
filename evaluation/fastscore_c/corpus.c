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

/* The most buckets corpus_index() makes (4 MiB of offsets): a corpus of more than 2^20 documents has a few keys a
 * bucket, still searched in a handful of steps. */
#define MAX_BUCKET_BITS 20

/* The corpus's sorted keys indexed by their top bits, so that a lookup searches one bucket of about one key instead
 * of the whole array: the binary search over BSARD's 22,633 keys, 15 unpredictable steps a row, was more than half
 * the worker's first entry on a BSARD-scale run (plain 17 ms of CPU, with the corpus 38 ms). 2^bits buckets with
 * 2^bits <= n_corpus (at least 2^4, at most 2^MAX_BUCKET_BITS); bucket b holds the keys whose top bits are b, the
 * keys being sorted. 0 when memory runs out; no index (the whole array searched) for a corpus too large for 32-bit
 * offsets. Membership is the same either way: only where the search starts changes. */
int corpus_index(Mem *M, Ctx *c)
{
    if (!c->corpus || c->n_corpus >= UINT32_MAX) return 1;
    int bits = 4;
    while (bits < MAX_BUCKET_BITS && ((size_t)1 << (bits + 1)) <= c->n_corpus) bits++;
    size_t buckets = (size_t)1 << bits;
    uint32_t *start = malloc((buckets + 1) * sizeof(uint32_t));
    if (!start) return 0;
    int shift = 64 - bits;
    size_t i = 0;
    for (size_t b = 0; b < buckets; b++) {
        while (i < c->n_corpus && (c->corpus[i] >> shift) < b) i++;
        start[b] = (uint32_t)i;
    }
    start[buckets] = (uint32_t)c->n_corpus;
    M->corpus_start = start;
    c->corpus_start = start;
    c->corpus_shift = shift;
    return 1;
}

/* Whether a docid is in the corpus (a binary search of its key's bucket, or of all the sorted keys). */
static inline int in_corpus(const Ctx *c, Tok doc)
{
    uint64_t key = corpus_key(doc);
    size_t lo = 0, hi = c->n_corpus;
    if (c->corpus_start) {
        size_t b = (size_t)(key >> c->corpus_shift);
        lo = c->corpus_start[b];
        hi = c->corpus_start[b + 1];
    }
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
