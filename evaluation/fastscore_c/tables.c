/* The qrels' hash tables: query ids to their index (also the run's unknown query ids), (query, docid) pairs to
 * their grade. Open addressing with linear probing, sized at least twice the entries, never resized. */
#include "fastscore.h"

/* The slots for `n` entries: a power of two, at least 2n + 16. */
size_t table_size(size_t n)
{
    size_t s = 16;
    while (s < 2 * n + 16) s <<= 1;
    return s;
}

/* Index of `key`, inserting it with `value` when absent (then `*inserted` = 1); a negative `value` only looks
 * (and returns it when `key` is absent). */
int qtable_get(QTable *t, Tok key, int value, int *inserted)
{
    size_t i = hash_bytes(0xcbf29ce484222325ULL, key.p, key.len) & t->mask;
    while (t->slots[i].key.p) {
        if (tok_eq(t->slots[i].key, key)) { *inserted = 0; return t->slots[i].value; }
        i = (i + 1) & t->mask;
    }
    if (value >= 0) { t->slots[i].key = key; t->slots[i].value = value; }
    *inserted = value >= 0;
    return value;
}

/* Insert; returns 0 when the pair is there already. */
int jtable_put(JTable *t, int q, Tok doc, int grade)
{
    size_t i = jhash(q, doc_hash(doc)) & t->mask;
    while (t->slots[i].doc.p) {
        if (t->slots[i].q == q && tok_eq(t->slots[i].doc, doc)) return 0;
        i = (i + 1) & t->mask;
    }
    t->slots[i].q = q; t->slots[i].doc = doc; t->slots[i].grade = grade;
    return 1;
}
