/* The command line's compiled scorer: no numpy, a few milliseconds at BSARD's scale.
 *
 * Why: at the leaderboard's own scale (222 topics x 1,000 rows) trec_eval takes about 0.2 s of CPU, and the
 * numpy path of ``python -m evaluation score`` spends more than that on importing numpy alone. This module
 * reads the qrels and the run itself and computes the per-query values of the usual families (R, P, MAP,
 * MRR, nDCG, RP, Success) with the same arithmetic, in the same order, as ``evaluation.kernels`` (so the
 * doubles are the same bits), and their means with numpy's pairwise summation.
 *
 * It takes what researchers usually send, and counts what the numpy path's notices say, so that the wrapper
 * (fastscore.py) gives them in the same words: runs that miss qrels queries or have queries the qrels lack,
 * qrels queries without a relevant document (under each averaging convention), rows beyond the depth (cut
 * after sorting), UTF-8 identifiers, gzip files (inflated by the wrapper as they are read). It gives up
 * (returns None) on anything else, so that the numpy path, which knows every rule and says every refusal and
 * the rarer notices, handles it: a control byte other than a space, a tab or a CR (CRLF line ends and a leading
 * BOM are taken), text that is not UTF-8, a comment or a line with other than 4 (qrels) or 6 (run) columns
 * (text after the tag is the numpy path's to note), a line over 1 MiB, an identifier of more than 256 bytes, a
 * file that starts like JSON, HTML or a PDF, a score that is not plain decimal, a rank or grade that is not an
 * integer, a qrels pair twice, a docid twice in a query, several run tags, a score
 * beyond a C float, an empty run, more than 65,536 run queries the qrels lack. Nothing it
 * returns can differ from the numpy path (tests/evaluation/test_fastscore.py compares them byte for byte,
 * notices included, and each give-up case).
 *
 * A run not grouped by query is taken too, in a second reading (the wrapper calls again with grouped false,
 * when the first says "ungrouped"): every row is kept, then grouped by query (17 bytes a row and its docid,
 * against the grouped reading's one query at a time).
 *
 * score(run, qrels, measures, depth, threshold, float32, empty_queries, grouped=True)
 *   run: a path (str) or a feed, feed(room) -> at most room bytes, b"" at the end, None to give up (called with
 *   the GIL held: fastscore.Inflate); qrels: a path or their bytes (inflated by the wrapper); measures: sequence of (family code, k) with codes R=0 P=1
 *   MAP=2 MRR=3 nDCG=4 RP=5 Success=6 (k unused by RP); empty_queries: 0 omit, 1 count, 2 trec_eval.
 *   Returns None, "ungrouped" (read it again with grouped false) or (qids, per_query, means, counts): the averaged qids sorted, one list of floats per measure,
 *   one mean per measure, and a dict of what the notices count (tie_groups, tie_queries, n_lines, n_queries,
 *   no_relevant, empty_evaluated, missing, unknown_shown, unknown, cut_rows, cut_queries, in_both: the qrels
 *   queries the run has rows for, which the wrapper refuses to be 0 as trec_eval does).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { F_R = 0, F_P, F_MAP, F_MRR, F_NDCG, F_RP, F_SUCCESS, N_FAMILIES };

typedef struct { const char *p; int len; } Tok;

/* Every buffer a token lives in has SLACK bytes after its data, so that 8-byte loads never leave it. */
#define SLACK 16

/* The numpy path refuses longer query ids, docids and tags (``_kernel.words.MAX_ID_BYTES``). */
#define MAX_ID_BYTES 256

static inline uint64_t load8(const void *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

/* ------------------------------------------------------------------ reading */

static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + SLACK);
    if (!buf) { fclose(f); return NULL; }
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        cap *= 2;
        char *grown = realloc(buf, cap + SLACK);
        if (!grown) { free(buf); fclose(f); return NULL; }
        buf = grown;
    }
    int err = ferror(f);
    fclose(f);
    if (err) { free(buf); return NULL; }
    memset(buf + n, 0, SLACK);
    buf[n] = '\n';  /* a sentinel: the last line ends even without its newline */
    *size = n;
    return buf;
}

/* The same from bytes in memory (a file the wrapper inflated). */
static char *copy_bytes(const char *data, size_t n, size_t *size)
{
    char *buf = malloc(n + SLACK);
    if (!buf) return NULL;
    memcpy(buf, data, n);
    memset(buf + n, 0, SLACK);
    buf[n] = '\n';
    *size = n;
    return buf;
}

/* Byte classes for the tokenizer: a token byte (0x21 and above: printable ASCII, DEL and UTF-8's bytes, as in the
 * numpy path, where every byte above 0x20 belongs to a token), a separator (space, tab, CR), the line's end, or
 * another control byte, which the fast path leaves to the numpy path. */
enum { C_TOKEN = 0, C_SEP, C_END, C_OTHER };
static unsigned char byte_class[256];

static void init_classes(void)
{
    for (int c = 0; c < 256; c++) byte_class[c] = c >= 0x21 ? C_TOKEN : C_OTHER;
    byte_class[' '] = byte_class['\t'] = byte_class['\r'] = C_SEP;  /* CR: CRLF line ends, as the numpy path */
    byte_class['\n'] = C_END;
}

/* Whether [p, p + len) is well-formed UTF-8 as Python's strict decoder reads it (no overlong form, no surrogate,
 * nothing above U+10FFFF): the numpy path refuses a file that is not. */
static int valid_utf8(const unsigned char *p, int len)
{
    const unsigned char *end = p + len;
    while (p < end) {
        unsigned c = *p++;
        if (c < 0x80) continue;
        int more;
        unsigned lo = 0x80, hi = 0xbf;  /* the range of the byte after the lead */
        if (c >= 0xc2 && c <= 0xdf) more = 1;
        else if (c >= 0xe0 && c <= 0xef) { more = 2; if (c == 0xe0) lo = 0xa0; if (c == 0xed) hi = 0x9f; }
        else if (c >= 0xf0 && c <= 0xf4) { more = 3; if (c == 0xf0) lo = 0x90; if (c == 0xf4) hi = 0x8f; }
        else return 0;
        if (end - p < more || *p < lo || *p > hi) return 0;
        p++;
        for (int i = 1; i < more; i++, p++) if (*p < 0x80 || *p > 0xbf) return 0;
    }
    return 1;
}

/* Split one line (ending with '\n') into at most `max` tokens; returns the count (max + 1 when there are
 * more), or -1 when a byte is a control byte other than a space, a tab or a CR, or a token is not UTF-8. */
static int split_line(const char *line, Tok *toks, int max)
{
    const unsigned char *p = (const unsigned char *)line;
    int n = 0;
    for (;;) {
        while (byte_class[*p] == C_SEP) p++;
        if (byte_class[*p] != C_TOKEN) return byte_class[*p] == C_END ? n : -1;
        const unsigned char *s = p;
        uint64_t high = 0;  /* the words read, ORed: no top bit set means an ASCII token (a set one may come from
                               the bytes after it; valid_utf8 then reads the token's own bytes) */
        for (;;) {  /* eight bytes at a time: the first byte below 0x21 ends the token */
            uint64_t x = load8(p);
            uint64_t stop = (x - 0x2121212121212121ULL) & ~x & 0x8080808080808080ULL;  /* exact at the lowest
                flagged byte: a byte of 0x21 or more borrows nothing, so nothing reaches it from below */
            high |= x;
            if (stop) {
                p += __builtin_ctzll(stop) >> 3;
                break;
            }
            p += 8;
        }
        if ((high & 0x8080808080808080ULL) && !valid_utf8(s, (int)(p - s))) return -1;
        if (n == max) return max + 1;
        toks[n].p = (const char *)s;
        toks[n].len = (int)(p - s);
        n++;
    }
}

/* Whole lines from a file or from a Python callable that hands out the next bytes (`feed`: a gzip file inflated
 * as it is read), through a buffer that is refilled as they are consumed. */
typedef struct {
    FILE *f; char *buf; size_t cap, start, end; int eof;
    PyObject *feed; int gave_up, raised;
} Reader;

#define READ_BYTES (1 << 20)

/* The next line (its '\n' included; one is added to a last line without it), NULL at the end or on a line
 * longer than the buffer (`*bad` = 1). The previous line's bytes are invalid afterwards. */
static const char *next_line(Reader *r, int *bad)
{
    for (;;) {
        char *nl = r->start < r->end ? memchr(r->buf + r->start, '\n', r->end - r->start) : NULL;
        if (nl) {
            const char *line = r->buf + r->start;
            r->start = (size_t)(nl - r->buf) + 1;
            return line;
        }
        if (r->eof) {
            if (r->start == r->end) return NULL;
            r->buf[r->end++] = '\n';  /* the buffer keeps a byte free for this */
            continue;
        }
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
        if (r->end >= r->cap - 1) { *bad = 1; return NULL; }
        size_t got;
        if (r->feed) {  /* feed(room) -> bytes (b"" at the end) or None (give up); called with the GIL held */
            size_t room = r->cap - 1 - r->end;
            got = 0;
            PyGILState_STATE gil = PyGILState_Ensure();
            PyObject *chunk = PyObject_CallFunction(r->feed, "n", (Py_ssize_t)room);
            if (!chunk) r->raised = 1;
            else if (chunk == Py_None) r->gave_up = 1;
            else if (!PyBytes_Check(chunk) || (size_t)PyBytes_GET_SIZE(chunk) > room) {
                PyErr_SetString(PyExc_TypeError, "feed(room) must return at most room bytes, or None");
                r->raised = 1;
            } else {
                got = (size_t)PyBytes_GET_SIZE(chunk);
                memcpy(r->buf + r->end, PyBytes_AS_STRING(chunk), got);
            }
            Py_XDECREF(chunk);
            PyGILState_Release(gil);
            if (r->raised || r->gave_up) { *bad = 1; return NULL; }
            if (got == 0) r->eof = 1;
        } else {
            got = fread(r->buf + r->end, 1, r->cap - 1 - r->end, r->f);
            if (got == 0) { if (ferror(r->f)) { *bad = 1; return NULL; } r->eof = 1; }
        }
        r->end += got;
    }
}

/* A file whose first text starts like JSON, HTML or a PDF: the numpy path refuses it by name
 * (``_kernel.sources.sniff_content``), so the fast path leaves it alone. */
static int looks_like_another_format(Tok first)
{
    char c = first.p[0];
    return c == '{' || c == '[' || c == '<' || c == '%';
}

static int is_integer(Tok t, int allow_minus)
{
    int i = 0;
    if (allow_minus && t.len > 1 && t.p[0] == '-') i = 1;
    if (t.len - i < 1 || t.len - i > 9) return 0;  /* |value| < 1e9: no overflow */
    for (; i < t.len; i++) if (t.p[i] < '0' || t.p[i] > '9') return 0;
    return 1;
}

static long to_long(Tok t)
{
    long v = 0;
    int i = t.p[0] == '-';
    for (int j = i; j < t.len; j++) v = v * 10 + (t.p[j] - '0');
    return i ? -v : v;
}

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
                               1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A plain decimal score, -?digits(.digits)?, correctly rounded as the numpy path reads it: at most 15
 * significant digits and 22 decimals are exact by Clinger's fast path (an exact integer over an exact power
 * of ten, one rounding); anything longer goes through strtod, which also rounds correctly. */
static int parse_score(Tok t, double *out)
{
    int i = 0, digits = 0, dot = 0, decimals = 0;
    uint64_t mant = 0;
    if (t.p[0] == '-') i = 1;
    for (; i < t.len; i++) {
        char c = t.p[i];
        if (c >= '0' && c <= '9') {
            if (digits < 19) mant = mant * 10 + (uint64_t)(c - '0');
            digits++;
            decimals += dot;
        }
        else if (c == '.' && !dot && digits && i + 1 < t.len) dot = 1;
        else return 0;
    }
    if (!digits) return 0;
    if (digits <= 15 && decimals <= 22) {
        double v = (double)mant / POW10[decimals];
        *out = t.p[0] == '-' ? -v : v;
        return 1;
    }
    char tmp[64];
    if (t.len >= (int)sizeof tmp) return 0;
    memcpy(tmp, t.p, (size_t)t.len);
    tmp[t.len] = 0;
    errno = 0;
    *out = strtod(tmp, NULL);
    return errno == 0 && isfinite(*out);
}

/* A hash of a token, a word at a time (tokens are followed by readable bytes: SLACK). */
static uint64_t hash_bytes(uint64_t h, const char *p, int len)
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
static int tok_cmp(Tok a, Tok b)
{
    int n = a.len < b.len ? a.len : b.len;
    int c = memcmp(a.p, b.p, (size_t)n);
    return c ? c : (a.len > b.len) - (a.len < b.len);
}

/* ------------------------------------------------------------------ tables */

typedef struct { Tok key; int value; } QEntry;             /* query id -> index */
typedef struct { int q; Tok doc; int grade; } JEntry;        /* (query index, docid) -> grade */

typedef struct { size_t mask; QEntry *slots; } QTable;
typedef struct { size_t mask; JEntry *slots; } JTable;

static size_t table_size(size_t n)
{
    size_t s = 16;
    while (s < 2 * n + 16) s <<= 1;
    return s;
}

/* Index of `key`, inserting it with `value` when absent (then `*inserted` = 1). */
static int qtable_get(QTable *t, Tok key, int value, int *inserted)
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

static inline uint64_t doc_hash(Tok doc) { return hash_bytes(0xcbf29ce484222325ULL, doc.p, doc.len); }

/* A (query, docid) pair's slot hash from the docid's own hash, which the run's rows compute once. */
static inline uint64_t jhash(int q, uint64_t h)
{
    h ^= (uint64_t)(unsigned)q * 0x9e3779b97f4a7c15ULL;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 31);
}

/* Insert; returns 0 when the pair is there already. */
static int jtable_put(JTable *t, int q, Tok doc, int grade)
{
    size_t i = jhash(q, doc_hash(doc)) & t->mask;
    while (t->slots[i].doc.p) {
        if (t->slots[i].q == q && tok_eq(t->slots[i].doc, doc)) return 0;
        i = (i + 1) & t->mask;
    }
    t->slots[i].q = q; t->slots[i].doc = doc; t->slots[i].grade = grade;
    return 1;
}

static const JEntry *jtable_find(const JTable *t, int q, Tok doc, uint64_t h)
{
    size_t i = jhash(q, h) & t->mask;
    while (t->slots[i].doc.p) {
        if (t->slots[i].q == q && tok_eq(t->slots[i].doc, doc)) return &t->slots[i];
        i = (i + 1) & t->mask;
    }
    return NULL;
}

/* ------------------------------------------------------------------ the run's rows */

typedef struct { Tok doc; double cmp; } Row;

static int row_order(const void *a, const void *b)  /* score descending, then docid descending */
{
    const Row *x = a, *y = b;
    if (x->cmp != y->cmp) return x->cmp > y->cmp ? -1 : 1;
    return -tok_cmp(x->doc, y->doc);
}

static int qid_order(const void *a, const void *b) { return tok_cmp(*(const Tok *)a, *(const Tok *)b); }

static int grade_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

/* numpy's pairwise summation (what ndarray.mean sums with), so that the means are numpy's bits. */
static double pairwise_sum(const double *a, Py_ssize_t n)
{
    if (n < 8) {
        double res = 0.;
        for (Py_ssize_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8], res;
        Py_ssize_t i;
        for (int j = 0; j < 8; j++) r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    Py_ssize_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

/* ------------------------------------------------------------------ scoring */

typedef struct {
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
} Ctx;

/* The per-query values of one query from its judged hits in rank order: kernels.py's arithmetic (a query
 * without a relevant document has 0 where kernels divide by |relevant|: ``kernels._per_relevant``). */
static void query_values(Ctx *c, int q, const int *hr, const int *hg, int nh, int threshold)
{
    double n_rel = (double)c->n_rel[q];
    int first = 0;
    for (int h = 0; h < nh; h++) if (hg[h] >= threshold) { first = hr[h]; break; }
    for (int m = 0; m < c->nm; m++) {
        int k = c->k[m];
        double v = 0.0;
        switch (c->fam[m]) {
        case F_R: case F_P: case F_RP: {
            int cut = c->fam[m] == F_RP ? c->n_rel[q] : k;
            double count = 0.0;
            for (int h = 0; h < nh; h++) if (hg[h] >= threshold && hr[h] <= cut) count += 1.0;
            v = c->fam[m] == F_P ? count / (double)k : (n_rel > 0 ? count / n_rel : 0.0);
            break;
        }
        case F_MAP: {
            double total = 0.0, so_far = 0.0;
            for (int h = 0; h < nh; h++) {
                if (hg[h] < threshold) continue;
                so_far += 1.0;
                if (hr[h] <= k) total += so_far / (double)hr[h];
            }
            v = n_rel > 0 ? total / n_rel : 0.0;
            break;
        }
        case F_MRR:
            v = (first > 0 && first <= k) ? 1.0 / (double)first : 0.0;
            break;
        case F_SUCCESS:
            v = (first > 0 && first <= k) ? 1.0 : 0.0;
            break;
        case F_NDCG: {
            double dcg = 0.0, idcg = 0.0;
            for (int h = 0; h < nh; h++)
                if (hr[h] <= k && hg[h] > 0) dcg += (double)hg[h] / log2((double)hr[h] + 1.0);
            for (int i = 0; i < c->n_pos[q] && i < k; i++)
                idcg += (double)c->pos_grades[q][i] / log2((double)(i + 1) + 1.0);
            v = idcg > 0 ? dcg / idcg : 0.0;
            break;
        }
        }
        c->values[(size_t)m * (size_t)c->nq + (size_t)c->sorted_pos[q]] = v;
    }
}

/* The details of one query (``scoring.evaluate``'s judged_at_10 and rel_ranks): its rows shown in the top 10
 * (within the depth), its judged rows among them, the ranks of its relevant hits. 0 when out of memory. */
static int query_details(Ctx *c, int q, size_t nr, int depth, const int *hr, const int *hg, int nh, int threshold)
{
    int top = depth < 10 ? depth : 10, judged = 0, rel = 0;
    c->shown10[q] = nr < (size_t)top ? (int)nr : top;
    for (int h = 0; h < nh; h++) { judged += hr[h] <= 10; rel += hg[h] >= threshold; }
    c->judged10[q] = judged;
    if (c->relpool_n + (size_t)rel > c->relpool_cap) {
        size_t grown = 2 * c->relpool_cap + (size_t)rel + 1024;
        int *pool = realloc(c->relpool, grown * sizeof(int));
        if (!pool) return 0;
        c->relpool = pool;
        c->relpool_cap = grown;
    }
    c->rel_start[q] = (int)c->relpool_n;
    c->rel_n[q] = rel;
    for (int h = 0; h < nh; h++) if (hg[h] >= threshold) c->relpool[c->relpool_n++] = hr[h];
    return 1;
}

/* Which qrels queries are averaged (``conventions.EMPTY_QUERIES``): those with a relevant document (omit),
 * all of them (count: trec_eval -c), or those the run has (trec_eval). */
enum { E_OMIT = 0, E_COUNT, E_TREC_EVAL };

/* Run query ids the qrels lack: kept (copied) to see a query come back after another, which the numpy path
 * orders; beyond this many the fast path gives up. */
#define MAX_UNKNOWN (1 << 16)
#define SHOWN_UNKNOWN 5

/* What the wrapper says besides the values: the numpy path's notices, counted (``evaluation.errors``). */
typedef struct {
    long tie_groups, tie_queries, n_lines, n_cut, n_over;
    int n_no_relevant, n_empty_evaluated, n_missing, n_unknown, n_evaluated;
    int n_in_both;        /* qrels queries the run has rows for, averaged or not (0: nothing to score) */
    long n_outside;       /* rows within the depth naming a document outside the corpus (any: hand back, once the
                           * whole run is read: a group read before the run proves ungrouped is not its query's) */
    int *evaluated;      /* sorted positions of the evaluated queries, ascending */
} Counts;

typedef struct {
    char *qbuf, *rbuf, *arena;
    size_t *doc_at;
    FILE *run_file;
    QEntry *qslots, *uslots;
    JEntry *jslots;
    Tok *qids;
    char **unknown;
    int *n_rel, *n_pos, *grades_all, **pos_grades, *sorted_pos, *fam, *k, *seen_q, *hr, *hg, *evaluated;
    double *values;
    Row *rows;
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
} Mem;

static void release(Mem *m)
{
    free(m->qbuf); free(m->rbuf); free(m->qslots); free(m->jslots); free(m->qids); free(m->n_rel);
    free(m->n_pos); free(m->grades_all); free(m->pos_grades); free(m->sorted_pos); free(m->fam); free(m->k);
    free(m->seen_q); free(m->hr); free(m->hg); free(m->values); free(m->rows); free(m->dup);
    free(m->arena); free(m->doc_at); free(m->uslots); free(m->evaluated);
    free(m->all_cmp); free(m->all_cmpf); free(m->all_len); free(m->all_doc); free(m->all_q); free(m->first_order); free(m->app_slot); free(m->perm);
    free(m->begin);
    free(m->shown10); free(m->judged10); free(m->rel_start); free(m->rel_n);
    if (m->unknown) for (int i = 0; i < MAX_UNKNOWN && m->unknown[i]; i++) free(m->unknown[i]);
    free(m->unknown);
    if (m->run_file) fclose(m->run_file);
}

/* The index of a run query the qrels lack, `id` (a token of the line), kept in a copy of its own the first time
 * (`*added` then 1); -1 when out of memory, -2 past MAX_UNKNOWN (the numpy path takes such a run). */
static int unknown_index(Mem *M, QTable *ut, Tok id, Counts *out, int *added)
{
    int inserted;
    int u = qtable_get(ut, id, -1, &inserted);
    *added = u < 0;
    if (u >= 0) return u;
    if (out->n_unknown >= MAX_UNKNOWN) return -2;
    char *copy = malloc((size_t)id.len + SLACK);
    if (!copy) return -1;
    memcpy(copy, id.p, (size_t)id.len);
    memset(copy + id.len, 0, SLACK);
    u = out->n_unknown;
    qtable_get(ut, (Tok){ copy, id.len }, u, &inserted);
    M->unknown[out->n_unknown++] = copy;
    return u;
}

/* A file to read: its path, its bytes (`data`: qrels the wrapper inflated) or a feed (a gzipped run: Reader). */
typedef struct { const char *path; const char *data; size_t len; PyObject *feed; } Input;

/* Room for `need` rows of a query: the rows, their docids' offsets, the hits and the docid set grow together. */
static int rows_reserve(Mem *M, size_t *cap, size_t *dup_size, size_t need)
{
    if (need <= *cap) return 1;
    size_t grown = *cap * 2 > need ? *cap * 2 : need;
    Row *rows = realloc(M->rows, grown * sizeof(Row));
    if (rows) M->rows = rows;
    size_t *doc_at = realloc(M->doc_at, grown * sizeof(size_t));
    if (doc_at) M->doc_at = doc_at;
    int *hr = realloc(M->hr, grown * sizeof(int));
    if (hr) M->hr = hr;
    int *hg = realloc(M->hg, grown * sizeof(int));
    if (hg) M->hg = hg;
    size_t ds = table_size(grown);
    uint64_t *dup = realloc(M->dup, ds * sizeof(uint64_t));
    if (dup) M->dup = dup;
    if (!rows || !doc_at || !hr || !hg || !dup) return 0;
    *cap = grown;
    *dup_size = ds;
    return 1;
}

/* ``_kernel.words``' fold of a docid (``hash_words``): its UTF-8 bytes as little-endian 8-byte words, zero
 * padded; the first word mixed (``_mix_fast``), each later non-zero word i folded in with splitmix64. The same
 * key the corpus was built with, so membership here is ``CorpusIds.contains_keys``' exactly. */
static inline uint64_t splitmix64(uint64_t x)
{
    x ^= x >> 30; x *= 0xBF58476D1CE4E5B9ULL; x ^= x >> 27; x *= 0x94D049BB133111EBULL; x ^= x >> 31;
    return x;
}

static uint64_t corpus_key(Tok doc)
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

/* Whether a docid is in the corpus (a binary search of its sorted keys); true when there is no corpus. */
static int in_corpus(const Ctx *c, Tok doc)
{
    if (!c->corpus) return 1;
    uint64_t key = corpus_key(doc);
    size_t lo = 0, hi = c->n_corpus;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->corpus[mid] < key) lo = mid + 1; else hi = mid;
    }
    return lo < c->n_corpus && c->corpus[lo] == key;
}

/* One query's rows (M->rows, their docids at M->arena + M->doc_at), in file order: order them, check them
 * (0 when a docid comes twice: the numpy path names the lines), count those within the depth outside the corpus
 * (``Counts.n_outside``), count their ties and depth cut, and score them
 * when the qrels know the query (q >= 0), with its details when asked (-1: out of memory). */
static int finish_query(Mem *M, Ctx *c, const JTable *jt, int q, size_t nr, int depth, int threshold, Counts *out)
{
    for (size_t i = 0; i < nr; i++) M->rows[i].doc.p = M->arena + M->doc_at[i];
    int ranked = 1;
    for (size_t i = 1; i < nr && ranked; i++) ranked = row_order(&M->rows[i - 1], &M->rows[i]) < 0;
    if (!ranked) qsort(M->rows, nr, sizeof(Row), row_order);
    /* a docid twice: a hash set of this query's docids, sized by its rows (the room reserved holds them), so
     * that clearing it costs what they do */
    size_t slots = table_size(nr);
    memset(M->dup, 0, slots * sizeof(uint64_t));
    int nh = 0, in_tie = 0, had_tie = 0;
    for (size_t i = 0; i < nr; i++) {
        uint64_t dh = doc_hash(M->rows[i].doc), h = dh | 1;
        size_t s = h & (slots - 1);
        while (M->dup[s]) {
            if (M->dup[s] == h) {  /* same hash: compare the docids themselves */
                for (size_t j = 0; j < i; j++) if (tok_eq(M->rows[j].doc, M->rows[i].doc)) return 0;
            }
            s = (s + 1) & (slots - 1);
        }
        M->dup[s] = h;
        /* a group of equal scores counts when it starts within the depth (it decides an order there) */
        if (i > 0 && M->rows[i].cmp == M->rows[i - 1].cmp) {
            if (!in_tie && i <= (size_t)depth) { out->tie_groups++; had_tie = 1; }
            in_tie = 1;
        } else in_tie = 0;
        if (i < (size_t)depth && !in_corpus(c, M->rows[i].doc)) out->n_outside++;
        if (q >= 0 && i < (size_t)depth) {
            const JEntry *e = jtable_find(jt, q, M->rows[i].doc, dh);
            if (e) { M->hr[nh] = (int)i + 1; M->hg[nh] = e->grade; nh++; }
        }
    }
    out->tie_queries += had_tie;
    if (nr > (size_t)depth) { out->n_cut += (long)(nr - (size_t)depth); out->n_over++; }
    if (q >= 0) query_values(c, q, M->hr, M->hg, nh, threshold);
    if (q >= 0 && c->details && !query_details(c, q, nr, depth, M->hr, M->hg, nh, threshold)) return -1;
    return 1;
}

/* 1 = scored, 0 = not the case this path takes (give up), -1 = out of memory, -2 = the feed raised, 2 = the run
 * is not grouped by query (read it again with `grouped` 0: every row is kept, then the rows are grouped by query
 * in the order the queries first appear, and each query is finished as in a grouped run). */
static int run_score(Mem *M, Input run, Input qrels, int depth, int threshold, int single, int empty_mode,
                     int grouped, Ctx *c, Counts *out)
{
    size_t qsize;
    M->qbuf = qrels.data ? copy_bytes(qrels.data, qrels.len, &qsize) : read_file(qrels.path, &qsize);
    if (!M->qbuf) return qrels.data ? -1 : 0;
    if (qsize >= 2 && (unsigned char)M->qbuf[0] == 0x1f && (unsigned char)M->qbuf[1] == 0x8b) return 0;

    /* qrels: count lines for the tables' sizes */
    size_t n_q_lines = 1;
    for (size_t i = 0; i < qsize; i++) n_q_lines += M->qbuf[i] == '\n';
    QTable qt = { table_size(n_q_lines) - 1, NULL };
    JTable jt = { table_size(n_q_lines) - 1, NULL };
    M->qslots = calloc(qt.mask + 1, sizeof(QEntry));
    M->jslots = calloc(jt.mask + 1, sizeof(JEntry));
    M->qids = malloc(n_q_lines * sizeof(Tok));
    M->n_rel = calloc(n_q_lines, sizeof(int));
    M->n_pos = calloc(n_q_lines, sizeof(int));
    M->grades_all = malloc(n_q_lines * sizeof(int) * 2);
    if (!M->qslots || !M->jslots || !M->qids || !M->n_rel || !M->n_pos || !M->grades_all) return -1;
    qt.slots = M->qslots; jt.slots = M->jslots;
    int *jq = M->grades_all, *jg = M->grades_all + n_q_lines;  /* query and grade per judgment */
    int nq = 0;
    size_t nj = 0, pos = 0;
    Tok t[7];
    while (pos < qsize) {
        if (pos == 0 && qsize >= 3 && memcmp(M->qbuf, "\xef\xbb\xbf", 3) == 0) pos = 3;  /* a UTF-8 BOM */
        int n = split_line(M->qbuf + pos, t, 4);
        if (nj == 0 && n > 0 && looks_like_another_format(t[0])) return 0;
        pos = (size_t)((char *)memchr(M->qbuf + pos, '\n', qsize + 1 - pos) - M->qbuf) + 1;
        if (n == 0) return 0;  /* blank lines are the numpy path's to count */
        if (n != 4 || t[0].p[0] == '#' || !is_integer(t[3], 1)) return 0;
        if (t[0].len > MAX_ID_BYTES || t[2].len > MAX_ID_BYTES) return 0;
        long g = to_long(t[3]);
        if (g > 1000000 || g < -1000000) return 0;
        int inserted;
        int q = qtable_get(&qt, t[0], nq, &inserted);
        if (inserted) M->qids[nq++] = t[0];
        if (!jtable_put(&jt, q, t[2], (int)g)) return 0;  /* judged twice */
        jq[nj] = q; jg[nj] = (int)g; nj++;
        if (g >= threshold) M->n_rel[q]++;
        if (g > 0) M->n_pos[q]++;
    }
    if (nq == 0) return 0;
    /* positive grades per query, descending (the ideal ranking) */
    M->pos_grades = calloc((size_t)nq, sizeof(int *));
    int *pool = malloc((nj + 1) * sizeof(int)), *fill = calloc((size_t)nq, sizeof(int));
    if (!M->pos_grades || !pool || !fill) { free(pool); free(fill); return -1; }
    size_t at = 0;
    for (int q = 0; q < nq; q++) { M->pos_grades[q] = pool + at; at += (size_t)M->n_pos[q]; }
    for (size_t j = 0; j < nj; j++) if (jg[j] > 0) M->pos_grades[jq[j]][fill[jq[j]]++] = jg[j];
    free(fill);
    for (int q = 0; q < nq; q++) qsort(M->pos_grades[q], (size_t)M->n_pos[q], sizeof(int), grade_desc);
    /* sorted order of the query ids (Python's str order is the order of their UTF-8 bytes) */
    Tok *sorted = malloc((size_t)nq * sizeof(Tok));
    M->sorted_pos = malloc((size_t)nq * sizeof(int));
    M->evaluated = malloc((size_t)nq * sizeof(int));
    if (!sorted || !M->sorted_pos || !M->evaluated) { free(sorted); free(pool); return -1; }
    memcpy(sorted, M->qids, (size_t)nq * sizeof(Tok));
    qsort(sorted, (size_t)nq, sizeof(Tok), qid_order);
    for (int i = 0; i < nq; i++) {
        int inserted;
        M->sorted_pos[qtable_get(&qt, sorted[i], -1, &inserted)] = i;
    }
    memcpy(M->qids, sorted, (size_t)nq * sizeof(Tok));  /* from here on, qids are in sorted order */
    free(sorted);

    c->nq = nq; c->n_rel = M->n_rel; c->pos_grades = M->pos_grades; c->n_pos = M->n_pos;
    c->sorted_pos = M->sorted_pos;
    M->values = calloc((size_t)c->nm * (size_t)nq, sizeof(double));
    if (!M->values) { free(pool); return -1; }
    c->values = M->values;
    if (c->details) {  /* zero for a qrels query the run lacks */
        c->shown10 = M->shown10 = calloc((size_t)nq, sizeof(int));
        c->judged10 = M->judged10 = calloc((size_t)nq, sizeof(int));
        c->rel_start = M->rel_start = calloc((size_t)nq, sizeof(int));
        c->rel_n = M->rel_n = calloc((size_t)nq, sizeof(int));
        if (!M->shown10 || !M->judged10 || !M->rel_start || !M->rel_n) { free(pool); return -1; }
    }

    /* the run, read line by line; a query's docids are copied into the arena until it is scored */
    int result = 0;
    Reader rd = { NULL, NULL, READ_BYTES, 0, 0, 0, run.feed, 0, 0 };
    if (!run.feed) {
        rd.f = M->run_file = fopen(run.path, "rb");
        if (!rd.f) goto done;
    }
    M->rbuf = rd.buf = calloc(rd.cap + SLACK, 1);
    M->seen_q = calloc((size_t)nq, sizeof(int));
    M->uslots = calloc(2 * MAX_UNKNOWN, sizeof(QEntry));
    M->unknown = calloc(MAX_UNKNOWN, sizeof(char *));
    size_t cap = 0, dup_size = 0, arena_cap = 1 << 16, arena_used = 0;
    M->arena = malloc(arena_cap + SLACK);
    if (!rd.buf || !M->seen_q || !M->uslots || !M->unknown || !M->arena
        || !rows_reserve(M, &cap, &dup_size, (size_t)(depth < 4096 ? depth + 1 : 4096))) {
        result = -1;
        goto done;
    }
    QTable ut = { 2 * MAX_UNKNOWN - 1, M->uslots };
    char tag[MAX_ID_BYTES + SLACK];
    int tag_len = -1, cur_q = -1, bad = 0, in_query = 0, cur_slot = -1, n_slots = 0;
    size_t n_all = 0, all_cap = 0;
    if (!grouped) {
        M->first_order = malloc(((size_t)nq + MAX_UNKNOWN) * sizeof(int));
        M->app_slot = malloc(((size_t)nq + MAX_UNKNOWN) * sizeof(int));
        if (!M->first_order || !M->app_slot) { result = -1; goto done; }
    }
    Tok cur = { NULL, 0 };
    size_t nr = 0;
    long n_lines = 0;
    for (;;) {
        const char *line = next_line(&rd, &bad);
        if (bad) { result = rd.raised ? -2 : 0; goto done; }
        if (line) {
            if (n_lines == 0 && (unsigned char)line[0] == 0x1f) goto done;  /* gzip: the wrapper inflates it */
            if (n_lines == 0 && memcmp(line, "\xef\xbb\xbf", 3) == 0) line += 3;  /* a UTF-8 BOM (SLACK) */
            n_lines++;
            if (split_line(line, t, 6) != 6 || t[0].p[0] == '#') goto done;
            if (n_lines == 1 && looks_like_another_format(t[0])) goto done;
            if (t[0].len > MAX_ID_BYTES || t[2].len > MAX_ID_BYTES) goto done;
        }
        if (grouped && (!line || !tok_eq(t[0], cur))) {
            if (in_query) {
                int fin = finish_query(M, c, &jt, cur_q, nr, depth, threshold, out);
                if (fin != 1) { result = fin; goto done; }
            }
            if (!line) break;
            int inserted;
            cur_q = qtable_get(&qt, t[0], -1, &inserted);
            if (cur_q >= 0) {
                if (M->seen_q[cur_q]) { result = 2; goto done; }  /* not grouped by query: read it again */
                M->seen_q[cur_q] = 1;
                cur = M->qids[M->sorted_pos[cur_q]];  /* the qrels' copy of the id: it outlives the line */
            } else {  /* a query the qrels lack: ignored, but its rows are checked and its ties counted */
                int added, u = unknown_index(M, &ut, t[0], out, &added);
                if (u < 0) { result = u == -1 ? -1 : 0; goto done; }
                if (!added) { result = 2; goto done; }  /* seen before: not grouped */
                cur = (Tok){ M->unknown[u], t[0].len };
            }
            in_query = 1;
            nr = 0;
            arena_used = 0;
        }
        if (!grouped) {  /* every row kept, with its query's slot: a known query's index, or nq + an unknown one's */
            if (!line) break;
            if (!tok_eq(t[0], cur)) {
                int inserted;
                cur_q = qtable_get(&qt, t[0], -1, &inserted);
                if (cur_q >= 0) {
                    cur_slot = cur_q;
                    cur = M->qids[M->sorted_pos[cur_q]];
                    if (!M->seen_q[cur_q]) { M->seen_q[cur_q] = 1; M->app_slot[n_slots] = cur_slot; M->first_order[cur_slot] = n_slots++; }
                } else {
                    int added, u = unknown_index(M, &ut, t[0], out, &added);
                    if (u < 0) { result = u == -1 ? -1 : 0; goto done; }
                    if (added) { M->app_slot[n_slots] = nq + u; M->first_order[nq + u] = n_slots++; }
                    cur = (Tok){ M->unknown[u], t[0].len };
                    cur_slot = nq + u;
                }
            }
        }
        if (tag_len < 0) {
            if (t[5].len > MAX_ID_BYTES) goto done;
            memcpy(tag, t[5].p, (size_t)t[5].len);
            tag_len = t[5].len;
        }
        else if (!tok_eq(t[5], (Tok){ tag, tag_len })) goto done;
        if (!is_integer(t[3], 0)) goto done;
        double s;
        if (!parse_score(t[4], &s)) goto done;
        double cmp = s;
        if (single) {
            float f = (float)s;
            if (isinf(f)) goto done;
            cmp = (double)f;
        }
        if (grouped && nr + 1 > cap && !rows_reserve(M, &cap, &dup_size, nr + 1)) { result = -1; goto done; }
        if (!grouped && n_all == all_cap) {
            /* from 4M rows on: big enough that malloc maps them (untouched pages cost nothing, growth is mremap),
             * not taken from the heap, where every step would leave the last one behind */
            size_t grown = all_cap ? all_cap + all_cap / 2 : (size_t)1 << 22;
            if (grown > UINT32_MAX) goto done;  /* more rows than a place holds: the numpy path */
            void *r;
            if (single) { r = realloc(M->all_cmpf, grown * sizeof(float)); if (r) M->all_cmpf = r; }
            else { r = realloc(M->all_cmp, grown * sizeof(double)); if (r) M->all_cmp = r; }
            uint8_t *l = realloc(M->all_len, grown * sizeof(uint8_t));
            if (l) M->all_len = l;
            uint32_t *d = realloc(M->all_doc, grown * sizeof(uint32_t));
            if (d) M->all_doc = d;
            int *q = realloc(M->all_q, grown * sizeof(int));
            if (q) M->all_q = q;
            if (!r || !l || !d || !q) { result = -1; goto done; }
            all_cap = grown;
        }
        if (arena_used + (size_t)t[2].len > arena_cap) {
            char *grown = realloc(M->arena, 2 * arena_cap + (size_t)t[2].len + SLACK);
            if (!grown) { result = -1; goto done; }
            M->arena = grown;
            arena_cap = 2 * arena_cap + (size_t)t[2].len;
        }
        memcpy(M->arena + arena_used, t[2].p, (size_t)t[2].len);
        if (grouped) {
            M->doc_at[nr] = arena_used;
            M->rows[nr].doc.len = t[2].len;
            M->rows[nr].cmp = cmp;
            nr++;
        } else {
            if (arena_used > UINT32_MAX - (size_t)t[2].len) goto done;  /* docids past 4 GiB: the numpy path */
            M->all_doc[n_all] = (uint32_t)arena_used;
            M->all_len[n_all] = (uint8_t)(t[2].len - 1);  /* 1 to MAX_ID_BYTES (256) */
            if (single) M->all_cmpf[n_all] = (float)cmp;  /* exact: cmp is a float's value in single precision */
            else M->all_cmp[n_all] = cmp;
            M->all_q[n_all] = cur_slot;
            n_all++;
        }
        arena_used += (size_t)t[2].len;
    }
    if (n_lines == 0) goto done;  /* an empty run: the numpy path says so */
    if (!grouped) {  /* the rows by query, queries in the order they first appear, rows in file order */
        M->begin = calloc((size_t)n_slots + 1, sizeof(size_t));
        M->perm = malloc((n_all + 1) * sizeof(uint32_t));
        if (!M->begin || !M->perm) { result = -1; goto done; }
        for (size_t r = 0; r < n_all; r++) M->begin[M->first_order[M->all_q[r]] + 1]++;
        for (int a = 0; a < n_slots; a++) M->begin[a + 1] += M->begin[a];
        for (size_t r = 0; r < n_all; r++) M->perm[M->begin[M->first_order[M->all_q[r]]]++] = (uint32_t)r;
        for (int a = n_slots; a > 0; a--) M->begin[a] = M->begin[a - 1];  /* back to each group's start */
        M->begin[0] = 0;
        for (int a = 0; a < n_slots; a++) {
            nr = 0;
            for (size_t i = M->begin[a]; i < M->begin[a + 1]; i++, nr++) {
                if (nr + 1 > cap && !rows_reserve(M, &cap, &dup_size, nr + 1)) { result = -1; goto done; }
                uint32_t r = M->perm[i];
                M->rows[nr].doc.len = (int)M->all_len[r] + 1;
                M->rows[nr].cmp = single ? (double)M->all_cmpf[r] : M->all_cmp[r];
                M->doc_at[nr] = M->all_doc[r];
            }
            int slot = M->app_slot[a];
            int fin = finish_query(M, c, &jt, slot < nq ? slot : -1, nr, depth, threshold, out);
            if (fin != 1) { result = fin; goto done; }
        }
    }
    /* the averaged queries, in sorted order, and what the notices count */
    int *orig = M->evaluated;  /* first: sorted position -> original index */
    for (int q = 0; q < nq; q++) orig[M->sorted_pos[q]] = q;
    int ne = 0;
    for (int i = 0; i < nq; i++) {
        int q = orig[i], empty = M->n_rel[q] == 0, in_run = M->seen_q[q];
        out->n_no_relevant += empty;
        out->n_in_both += in_run;
        int counted = empty_mode == E_COUNT || (empty_mode == E_OMIT ? !empty : in_run);
        if (!counted) continue;
        out->n_empty_evaluated += empty;
        out->n_missing += !in_run;
        M->evaluated[ne++] = i;  /* ne <= i: orig[i] was read above */
    }
    out->n_evaluated = ne;
    out->n_lines = n_lines;
    if (out->n_outside) goto done;  /* the numpy path counts those rows as non-relevant and says so, or refuses */
    result = 1;
done:
    free(pool);
    return result;
}

/* `o` as an Input: a str is a path; the run may be a feed (a callable), the qrels their content (bytes). */
static int get_input(PyObject *o, Input *in, int is_run)
{
    if (is_run && PyCallable_Check(o)) {
        in->feed = o;
        return 1;
    }
    if (!is_run && PyBytes_Check(o)) {
        in->data = PyBytes_AS_STRING(o);
        in->len = (size_t)PyBytes_GET_SIZE(o);
        return 1;
    }
    Py_ssize_t n;
    in->path = PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, &n) : NULL;
    if (!in->path) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "the run is a path (str) or a feed, the qrels a path or their bytes");
        return 0;
    }
    if ((size_t)n != strlen(in->path)) {
        PyErr_SetString(PyExc_ValueError, "embedded null character in path");
        return 0;
    }
    return 1;
}

/* The details of the averaged queries (`evaluated`: their sorted positions), as the bytes of arrays in machine
 * order: (n_relevant int64, first_relevant_rank int64, judged_at_10 float64, rel_ranks int32, rel_offsets int64);
 * ``scoring.evaluate``'s arithmetic (judged_at_10: judged / shown, 0 when nothing is shown). */
static PyObject *query_details_out(const Ctx *c, const int *evaluated, int ne)
{
    int *orig = malloc(((size_t)c->nq + 1) * sizeof(int));
    int64_t *n_rel = malloc(((size_t)ne + 1) * sizeof(int64_t)), *first = malloc(((size_t)ne + 1) * sizeof(int64_t));
    int64_t *offsets = malloc(((size_t)ne + 1) * sizeof(int64_t));
    double *judged = malloc(((size_t)ne + 1) * sizeof(double));
    int32_t *ranks = malloc((c->relpool_n + 1) * sizeof(int32_t));
    PyObject *out = NULL;
    if (!orig || !n_rel || !first || !offsets || !judged || !ranks) { PyErr_NoMemory(); goto end; }
    for (int q = 0; q < c->nq; q++) orig[c->sorted_pos[q]] = q;
    size_t at = 0;
    offsets[0] = 0;
    for (int i = 0; i < ne; i++) {
        int q = orig[evaluated[i]];
        n_rel[i] = c->n_rel[q];
        first[i] = c->rel_n[q] ? c->relpool[c->rel_start[q]] : 0;
        judged[i] = c->shown10[q] > 0 ? (double)c->judged10[q] / (double)c->shown10[q] : 0.0;
        for (int j = 0; j < c->rel_n[q]; j++) ranks[at++] = c->relpool[c->rel_start[q] + j];
        offsets[i + 1] = (int64_t)at;
    }
    out = Py_BuildValue("(y#y#y#y#y#)", (const char *)n_rel, (Py_ssize_t)ne * 8, (const char *)first,
                        (Py_ssize_t)ne * 8, (const char *)judged, (Py_ssize_t)ne * 8, (const char *)ranks,
                        (Py_ssize_t)at * 4, (const char *)offsets, (Py_ssize_t)(ne + 1) * 8);
end:
    free(orig); free(n_rel); free(first); free(offsets); free(judged); free(ranks);
    return out;
}

static PyObject *fast_score(PyObject *self, PyObject *args)
{
    PyObject *run_arg, *qrels_arg, *measures, *corpus_arg = Py_None;
    int depth, threshold, single, empty_mode, grouped = 1, details = 0;
    if (!PyArg_ParseTuple(args, "OOOiipi|ppO", &run_arg, &qrels_arg, &measures, &depth, &threshold, &single,
                          &empty_mode, &grouped, &details, &corpus_arg))
        return NULL;
    Input run = { NULL, NULL, 0, NULL }, qrels = { NULL, NULL, 0, NULL };
    if (!get_input(run_arg, &run, 1) || !get_input(qrels_arg, &qrels, 0)) return NULL;
    if (empty_mode < E_OMIT || empty_mode > E_TREC_EVAL) {
        PyErr_SetString(PyExc_ValueError, "empty_queries is 0 (omit), 1 (count) or 2 (trec_eval)");
        return NULL;
    }
    if (depth < 1) Py_RETURN_NONE;
    PyObject *seq = PySequence_Fast(measures, "measures must be a sequence of (family code, k)");
    if (!seq) return NULL;
    Mem M;
    memset(&M, 0, sizeof M);
    Ctx c;
    memset(&c, 0, sizeof c);
    c.details = details;
    c.nm = (int)PySequence_Fast_GET_SIZE(seq);
    M.fam = malloc(((size_t)c.nm + 1) * sizeof(int));
    M.k = malloc(((size_t)c.nm + 1) * sizeof(int));
    if (!M.fam || !M.k) { Py_DECREF(seq); release(&M); return PyErr_NoMemory(); }
    c.fam = M.fam; c.k = M.k;
    for (int m = 0; m < c.nm; m++) {
        int fam, k;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, m), "ii", &fam, &k)) {
            Py_DECREF(seq); release(&M); return NULL;
        }
        if (fam < 0 || fam >= N_FAMILIES || (fam != F_RP && k < 1)) {
            Py_DECREF(seq); release(&M);
            PyErr_SetString(PyExc_ValueError, "unknown family code or cutoff");
            return NULL;
        }
        c.fam[m] = fam; c.k[m] = k;
    }
    Py_DECREF(seq);
    Py_buffer corpus = { 0 };
    if (corpus_arg != Py_None) {  /* sorted uint64 keys, C-contiguous (``CorpusIds.keys``) */
        if (PyObject_GetBuffer(corpus_arg, &corpus, PyBUF_C_CONTIGUOUS) < 0) { release(&M); return NULL; }
        if (corpus.len % 8) {
            PyBuffer_Release(&corpus); release(&M);
            PyErr_SetString(PyExc_ValueError, "the corpus is its sorted uint64 keys");
            return NULL;
        }
        c.corpus = corpus.buf;
        c.n_corpus = (size_t)corpus.len / 8;
    }
    Counts n;
    memset(&n, 0, sizeof n);
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = run_score(&M, run, qrels, depth, threshold, single, empty_mode, grouped, &c, &n);
    Py_END_ALLOW_THREADS
    if (corpus_arg != Py_None) PyBuffer_Release(&corpus);
    if (ok != 1) free(c.relpool);
    if (ok == -2) { release(&M); return NULL; }  /* the feed's exception */
    if (ok < 0) { release(&M); return PyErr_NoMemory(); }
    if (ok == 0) { release(&M); Py_RETURN_NONE; }
    if (ok == 2) { release(&M); return PyUnicode_FromString("ungrouped"); }  /* call again with grouped false */
    PyObject *extra = NULL;
    if (details) {
        extra = query_details_out(&c, M.evaluated, n.n_evaluated);
        free(c.relpool);
        if (!extra) { release(&M); return NULL; }
    }
    int ne = n.n_evaluated, shown = n.n_unknown < SHOWN_UNKNOWN ? n.n_unknown : SHOWN_UNKNOWN;
    double *column = malloc(((size_t)ne + 1) * sizeof(double));
    PyObject *qids = PyList_New(ne), *per_query = PyList_New(c.nm), *means = PyList_New(c.nm);
    PyObject *unknown = PyList_New(shown);
    if (!column || !qids || !per_query || !means || !unknown) goto fail;
    for (int i = 0; i < ne; i++) {
        const Tok *q = &M.qids[M.evaluated[i]];
        PyObject *s = PyUnicode_DecodeUTF8(q->p, q->len, NULL);
        if (!s) goto fail;
        PyList_SET_ITEM(qids, i, s);
    }
    for (int i = 0; i < shown; i++) {
        PyObject *s = PyUnicode_DecodeUTF8(M.unknown[i], (Py_ssize_t)strlen(M.unknown[i]), NULL);
        if (!s) goto fail;
        PyList_SET_ITEM(unknown, i, s);
    }
    for (int m = 0; m < c.nm; m++) {
        const double *v = c.values + (size_t)m * (size_t)c.nq;
        for (int i = 0; i < ne; i++) column[i] = v[M.evaluated[i]];
        PyObject *col = PyList_New(ne);  /* no query averaged: a mean of 0, as the numpy path's */
        PyObject *mean = PyFloat_FromDouble(ne ? pairwise_sum(column, ne) / (double)ne : 0.0);
        if (!col || !mean) { Py_XDECREF(col); Py_XDECREF(mean); goto fail; }
        for (int i = 0; i < ne; i++) {
            PyObject *x = PyFloat_FromDouble(column[i]);
            if (!x) { Py_DECREF(col); Py_DECREF(mean); goto fail; }
            PyList_SET_ITEM(col, i, x);
        }
        PyList_SET_ITEM(per_query, m, col);
        PyList_SET_ITEM(means, m, mean);
    }
    free(column);
    release(&M);
    if (extra)
        return Py_BuildValue("(NNN{s:l,s:l,s:l,s:i,s:i,s:i,s:i,s:N,s:i,s:l,s:l,s:i}N)", qids, per_query, means,
                             "tie_groups", n.tie_groups, "tie_queries", n.tie_queries, "n_lines", n.n_lines,
                             "n_queries", c.nq, "no_relevant", n.n_no_relevant, "empty_evaluated",
                             n.n_empty_evaluated, "missing", n.n_missing, "unknown_shown", unknown, "unknown",
                             n.n_unknown, "cut_rows", n.n_cut, "cut_queries", n.n_over, "in_both", n.n_in_both,
                             extra);
    return Py_BuildValue("(NNN{s:l,s:l,s:l,s:i,s:i,s:i,s:i,s:N,s:i,s:l,s:l,s:i})", qids, per_query, means,
                         "tie_groups", n.tie_groups, "tie_queries", n.tie_queries, "n_lines", n.n_lines,
                         "n_queries", c.nq, "no_relevant", n.n_no_relevant, "empty_evaluated", n.n_empty_evaluated,
                         "missing", n.n_missing, "unknown_shown", unknown, "unknown", n.n_unknown,
                         "cut_rows", n.n_cut, "cut_queries", n.n_over, "in_both", n.n_in_both);
fail:
    free(column);
    Py_XDECREF(extra);
    Py_XDECREF(qids); Py_XDECREF(per_query); Py_XDECREF(means); Py_XDECREF(unknown);
    release(&M);
    return NULL;
}

static PyMethodDef methods[] = {
    {"score", fast_score, METH_VARARGS,
     "score(run, qrels, measures, depth, threshold, float32, empty_queries, grouped=True, details=False, "
     "corpus=None) -> None or "
     "(qids, per_query, means, counts); see the module's source for the case it takes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "evaluation._fastscore",
    "The command line's compiled scorer (evaluation/fastscore.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastscore(void)
{
    init_classes();
    return PyModule_Create(&module);
}
