/* One query of the run, once its rows are read: ordered as trec_eval orders them, checked, counted for the
 * notices, matched with the qrels and scored (measures.c). */
#include "fastscore.h"

#include <stdlib.h>

/* Room for `need` rows of a query: the rows, their docids' offsets, the hits and the docid set grow together
 * (M->rows_cap); 0 when out of memory. */
int rows_reserve(Mem *M, size_t need)
{
    if (need <= M->rows_cap) return 1;
    size_t grown = M->rows_cap * 2 > need ? M->rows_cap * 2 : need;
    Row *rows = realloc(M->rows, grown * sizeof(Row));
    if (rows) M->rows = rows;
    size_t *doc_at = realloc(M->doc_at, grown * sizeof(size_t));
    if (doc_at) M->doc_at = doc_at;
    int *hr = realloc(M->hr, grown * sizeof(int));
    if (hr) M->hr = hr;
    int *hg = realloc(M->hg, grown * sizeof(int));
    if (hg) M->hg = hg;
    uint64_t *dup = realloc(M->dup, table_size(grown) * sizeof(uint64_t));
    if (dup) M->dup = dup;
    if (!rows || !doc_at || !hr || !hg || !dup) return 0;
    M->rows_cap = grown;
    return 1;
}

static int row_order(const void *a, const void *b)  /* score descending, then docid descending */
{
    const Row *x = a, *y = b;
    if (x->cmp != y->cmp) return x->cmp > y->cmp ? -1 : 1;
    return -tok_cmp(x->doc, y->doc);
}

/* The rows in trec_eval's order (sorted only when the file's order is not it already). */
static void order_rows(Mem *M, size_t nr)
{
    for (size_t i = 0; i < nr; i++) M->rows[i].doc.p = M->arena + M->doc_at[i];
    int ranked = 1;
    for (size_t i = 1; i < nr && ranked; i++) ranked = row_order(&M->rows[i - 1], &M->rows[i]) < 0;
    if (!ranked) qsort(M->rows, nr, sizeof(Row), row_order);
}

/* Whether row i's docid came before in the query: a hash set of the query's docids (`h`: row i's hash, odd),
 * `slots` of them, sized by its rows (the room reserved holds them), so that clearing it costs what they do. */
static inline int docid_again(Mem *M, size_t i, uint64_t h, size_t slots)
{
    size_t s = h & (slots - 1);
    while (M->dup[s]) {
        if (M->dup[s] == h) {  /* same hash: compare the docids themselves */
            for (size_t j = 0; j < i; j++) if (tok_eq(M->rows[j].doc, M->rows[i].doc)) return 1;
        }
        s = (s + 1) & (slots - 1);
    }
    M->dup[s] = h;
    return 0;
}

/* One query's rows (M->rows, their docids at M->arena + M->doc_at), in file order: order them, check them
 * (GIVE_UP when a docid comes twice: the numpy path names the lines), count those within the depth outside the
 * corpus (``Counts.n_outside``), count their ties and depth cut, and score them when the qrels know the query
 * (q >= 0), with its details when asked (NO_MEMORY when there is no room for them). */
int finish_query(Mem *M, Ctx *c, int q, size_t nr, Counts *out)
{
    size_t depth = (size_t)c->depth, slots = table_size(nr);
    order_rows(M, nr);
    memset(M->dup, 0, slots * sizeof(uint64_t));
    int nh = 0, in_tie = 0, had_tie = 0;
    for (size_t i = 0; i < nr; i++) {
        uint64_t dh = doc_hash(M->rows[i].doc);
        if (docid_again(M, i, dh | 1, slots)) return GIVE_UP;
        /* a group of equal scores counts when it starts within the depth (it decides an order there) */
        if (i > 0 && M->rows[i].cmp == M->rows[i - 1].cmp) {
            if (!in_tie && i <= depth) { out->tie_groups++; had_tie = 1; }
            in_tie = 1;
        } else in_tie = 0;
        if (q >= 0 && i < depth) {
            const JEntry *e = jtable_find(&c->judged, q, M->rows[i].doc, dh);
            if (e) { M->hr[nh] = (int)i + 1; M->hg[nh] = e->grade; nh++; }
        }
    }
    out->tie_queries += had_tie;
    out->n_outside += outside_corpus(c, M->rows, nr < depth ? nr : depth);
    if (nr > depth) { out->n_cut += (long)(nr - depth); out->n_over++; }
    if (q >= 0) query_values(c, q, M->hr, M->hg, nh);
    if (q >= 0 && c->details && !query_details(c, q, nr, M->hr, M->hg, nh)) return NO_MEMORY;
    return OK;
}
