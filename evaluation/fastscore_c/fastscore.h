/* The compiled scorer's internal header (evaluation._fastscore): the types its files share, the small helpers the
 * hot loops inline, and what each file offers the others. README.md, beside it, says what the module computes,
 * the rules it keeps and where each is tested. */
#ifndef LEXBOARD_FASTSCORE_H
#define LEXBOARD_FASTSCORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The families computed, by code: evaluation/fastscore.py's FAMILY_CODES names the same numbers
 * (tests/architecture/test_registries.py checks that they agree). */
enum { F_R = 0, F_P, F_MAP, F_MRR, F_NDCG, F_RP, F_SUCCESS, N_FAMILIES };

/* Which qrels queries are averaged (``conventions.EMPTY_QUERIES``): those with a relevant document (omit),
 * all of them (count: trec_eval -c), or those the run has (trec_eval). */
enum { E_OMIT = 0, E_COUNT, E_TREC_EVAL };

/* What a step of the reading returns, up to run_score and fast_score: go on (or scored), give up (the numpy path
 * takes the files), read the run again with grouped false, out of memory, the feed raised (its exception is set). */
enum { GIVE_UP = 0, OK = 1, UNGROUPED = 2, NO_MEMORY = -1, FEED_RAISED = -2 };

/* Every buffer a token lives in has SLACK bytes after its data, so that 8-byte loads never leave it. */
#define SLACK 16

/* The numpy path refuses longer query ids, docids and tags (``_kernel.words.MAX_ID_BYTES``). */
#define MAX_ID_BYTES 256

/* Run query ids the qrels lack: kept (copied) to see a query come back after another, which the numpy path
 * orders; beyond this many the fast path gives up. The notice shows the first SHOWN_UNKNOWN. */
#define MAX_UNKNOWN (1 << 16)
#define SHOWN_UNKNOWN 5

/* A token: bytes of a line or of a copy, followed by at least SLACK readable bytes. */
typedef struct { const char *p; int len; } Tok;

/* ------------------------------------------------------------------ inlined helpers (hot loops) */

static inline uint64_t load8(const void *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

/* Equal tokens; short ones (query ids, tags, most docids) compared as one masked word (SLACK). */
static inline int tok_eq(Tok a, Tok b)
{
    if (a.len != b.len) return 0;
    if (a.len <= 8) {
        uint64_t m = a.len ? ~0ULL >> (64 - 8 * a.len) : 0;
        return ((load8(a.p) ^ load8(b.p)) & m) == 0;
    }
    return memcmp(a.p, b.p, (size_t)a.len) == 0;
}

/* trec_eval's docid order is strcmp's: bytes, then the shorter first. */
static inline int tok_cmp(Tok a, Tok b)
{
    int n = a.len < b.len ? a.len : b.len;
    int c = memcmp(a.p, b.p, (size_t)n);
    return c ? c : (a.len > b.len) - (a.len < b.len);
}

/* A hash of a token, a word at a time (tokens are followed by readable bytes: SLACK). */
static inline uint64_t hash_bytes(uint64_t h, const char *p, int len)
{
    h ^= (uint64_t)len * 0x9e3779b97f4a7c15ULL;
    for (;;) {
        uint64_t x = load8(p);
        if (len < 8) x &= (len ? ~0ULL >> (64 - 8 * len) : 0);
        h = (h ^ x) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
        if (len <= 8) return h;
        p += 8;
        len -= 8;
    }
}

static inline uint64_t doc_hash(Tok doc) { return hash_bytes(0xcbf29ce484222325ULL, doc.p, doc.len); }

/* ------------------------------------------------------------------ tables (tables.c) */

typedef struct { Tok key; int value; } QEntry;             /* query id -> index */
typedef struct { int q; Tok doc; int grade; } JEntry;        /* (query index, docid) -> grade */

/* Open addressing, linear probing; `mask` + 1 slots, a power of two; a slot is empty while its token's p is NULL. */
typedef struct { size_t mask; QEntry *slots; } QTable;
typedef struct { size_t mask; JEntry *slots; } JTable;

size_t table_size(size_t n);
int qtable_get(QTable *t, Tok key, int value, int *inserted);
int jtable_put(JTable *t, int q, Tok doc, int grade);

/* A (query, docid) pair's slot hash from the docid's own hash, which the run's rows compute once. */
static inline uint64_t jhash(int q, uint64_t h)
{
    h ^= (uint64_t)(unsigned)q * 0x9e3779b97f4a7c15ULL;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 31);
}

/* The judgment of (q, doc), `h` the docid's doc_hash; NULL when the qrels do not judge it. */
static inline const JEntry *jtable_find(const JTable *t, int q, Tok doc, uint64_t h)
{
    size_t i = jhash(q, h) & t->mask;
    while (t->slots[i].doc.p) {
        if (t->slots[i].q == q && tok_eq(t->slots[i].doc, doc)) return &t->slots[i];
        i = (i + 1) & t->mask;
    }
    return NULL;
}

/* ------------------------------------------------------------------ the call's state */

/* A file to read: its path, its bytes (`data`: qrels the wrapper inflated) or a feed (a gzipped run: Reader). */
typedef struct { const char *path; const char *data; size_t len; PyObject *feed; } Input;

/* One call's parameters and what the scoring reads and writes; the arrays are views of Mem's (never freed
 * through Ctx), but for relpool, which query_details grows and fast_score frees. */
typedef struct {
    int depth, threshold, single, empty_mode, grouped;  /* score()'s arguments; single: float32 scores */
    QTable queries;      /* qrels query id -> original index */
    JTable judged;       /* (original index, docid) -> grade */
    int nq;              /* qrels queries */
    int *n_rel;          /* per query (original index) */
    int **pos_grades;    /* positive grades, descending, per query */
    int *n_pos;
    int nm;
    int *fam, *k;
    double *values;      /* [measure][sorted query position], every qrels query */
    int *sorted_pos;     /* original query index -> sorted position */
    /* details (the worker's stored vectors, ``scoring.Evaluation``), per original query index, when asked */
    int details;
    int *shown10, *judged10, *rel_start, *rel_n;
    int *relpool;        /* the ranks of the relevant documents found, query after query */
    size_t relpool_n, relpool_cap;
    /* the dataset's corpus, when it has one: ``CorpusIds.keys`` (sorted ``_kernel.hash_words`` of its docids) */
    const uint64_t *corpus;
    size_t n_corpus;
    /* its keys by their top bits (corpus_index(), corpus.c): bucket b is corpus[corpus_start[b] ..
     * corpus_start[b + 1]); NULL: the whole array is searched */
    const uint32_t *corpus_start;
    int corpus_shift;
} Ctx;

/* What the wrapper says besides the values: the numpy path's notices, counted (``evaluation.errors``). */
typedef struct {
    long tie_groups, tie_queries, n_lines, n_cut, n_over;
    int n_no_relevant, n_empty_evaluated, n_missing, n_unknown, n_evaluated;
    int n_in_both;        /* qrels queries the run has rows for, averaged or not (0: nothing to score) */
    long n_outside;       /* rows within the depth naming a document outside the corpus (any: hand back, once the
                           * whole run is read: a group read before the run proves ungrouped is not its query's) */
} Counts;

/* A row of the query being finished: its docid (in Mem's arena) and its score as compared. */
typedef struct { Tok doc; double cmp; } Row;

/* Every allocation of a call: zeroed by fast_score, freed by release() whatever the outcome. */
typedef struct {
    char *qbuf, *rbuf, *arena;
    size_t *doc_at;
    FILE *run_file;
    QEntry *qslots, *uslots;
    JEntry *jslots;
    Tok *qids;
    char **unknown;
    int *n_rel, *n_pos, *grades_all, *pos_pool, **pos_grades, *sorted_pos, *fam, *k, *seen_q, *hr, *hg;
    int *evaluated;      /* sorted positions of the averaged queries, ascending (n_evaluated of them) */
    double *values;
    Row *rows;
    size_t rows_cap;     /* the room of rows, doc_at, hr and hg; dup has table_size(rows_cap) slots */
    uint64_t *dup;
    size_t *begin;
    /* a run not grouped by query: every row, compactly (17 bytes: the score as compared, in float32 when that is
     * the precision, else 21; the docid's length less one and offset, the query, the place in the grouping) */
    double *all_cmp;
    float *all_cmpf;
    uint8_t *all_len;
    uint32_t *all_doc, *perm;
    int *all_q, *first_order, *app_slot;
    int *shown10, *judged10, *rel_start, *rel_n;  /* the details' (Ctx), when asked */
    uint32_t *corpus_start;  /* Ctx's */
} Mem;

/* ------------------------------------------------------------------ reading (text.c) */

/* Whole lines from a file or from a Python callable that hands out the next bytes (`feed`: a gzip file inflated
 * as it is read), through a buffer that is refilled as they are consumed. */
typedef struct {
    FILE *f; char *buf; size_t cap, start, end; int eof;
    PyObject *feed; int gave_up, raised;
} Reader;

#define READ_BYTES (1 << 20)

void init_classes(void);
char *read_file(const char *path, size_t *size);
char *copy_bytes(const char *data, size_t n, size_t *size);
int split_line(const char *line, Tok *toks, int max);
const char *next_line_refilled(Reader *r, int *bad);

/* The next line (its '\n' included; one is added to a last line without it), NULL at the end or when the reader
 * fails (`*bad` = 1: a line longer than the buffer, a read error, the feed raised or gave up). The previous line's
 * bytes are invalid afterwards. Inline for a line already in the buffer; text.c refills it. */
static inline const char *next_line(Reader *r, int *bad)
{
    char *nl = r->start < r->end ? memchr(r->buf + r->start, '\n', r->end - r->start) : NULL;
    if (!nl) return next_line_refilled(r, bad);
    const char *line = r->buf + r->start;
    r->start = (size_t)(nl - r->buf) + 1;
    return line;
}

/* A file whose first text starts like JSON, HTML or a PDF: the numpy path refuses it by name
 * (``_kernel.sources.sniff_content``), so the fast path leaves it alone. */
static inline int looks_like_another_format(Tok first)
{
    char c = first.p[0];
    return c == '{' || c == '[' || c == '<' || c == '%';
}

static inline int is_integer(Tok t, int allow_minus)
{
    int i = 0;
    if (allow_minus && t.len > 1 && t.p[0] == '-') i = 1;
    if (t.len - i < 1 || t.len - i > 9) return 0;  /* |value| < 1e9: no overflow */
    for (; i < t.len; i++) if (t.p[i] < '0' || t.p[i] > '9') return 0;
    return 1;
}

/* ------------------------------------------------------------------ the parts of a call */

int read_qrels(Mem *M, Input qrels, Ctx *c);                              /* qrels.c */
int run_score(Mem *M, Input run, Input qrels, Ctx *c, Counts *out);       /* run.c */
int rows_reserve(Mem *M, size_t need);                                    /* query.c */
int finish_query(Mem *M, Ctx *c, int q, size_t nr, Counts *out);
int corpus_index(Mem *M, Ctx *c);                                        /* corpus.c */
long outside_corpus(const Ctx *c, const Row *rows, size_t n);
void query_values(Ctx *c, int q, const int *hr, const int *hg, int nh);   /* measures.c */
int query_details(Ctx *c, int q, size_t nr, const int *hr, const int *hg, int nh);
double pairwise_sum(const double *a, Py_ssize_t n);

#endif
