/* The qrels: read whole (a path, or the bytes the wrapper inflated), one judgment a line (query, iteration,
 * docid, grade), into the tables the run is scored with, the ideal rankings and the queries' sorted order. */
#include "fastscore.h"

#include <stdlib.h>

static long to_long(Tok t)
{
    long v = 0;
    int i = t.p[0] == '-';
    for (int j = i; j < t.len; j++) v = v * 10 + (t.p[j] - '0');
    return i ? -v : v;
}

static int grade_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

static int qid_order(const void *a, const void *b) { return tok_cmp(*(const Tok *)a, *(const Tok *)b); }

/* The tables and per-query arrays for at most `n_lines` judgments (and as many queries). */
static int qrels_tables(Mem *M, Ctx *c, size_t n_lines)
{
    c->queries.mask = c->judged.mask = table_size(n_lines) - 1;
    c->queries.slots = M->qslots = calloc(c->queries.mask + 1, sizeof(QEntry));
    c->judged.slots = M->jslots = calloc(c->judged.mask + 1, sizeof(JEntry));
    M->qids = malloc(n_lines * sizeof(Tok));
    c->n_rel = M->n_rel = calloc(n_lines, sizeof(int));
    c->n_pos = M->n_pos = calloc(n_lines, sizeof(int));
    M->grades_all = malloc(n_lines * sizeof(int) * 2);  /* query and grade per judgment */
    return M->qslots && M->jslots && M->qids && M->n_rel && M->n_pos && M->grades_all ? OK : NO_MEMORY;
}

/* One judgment line, split into `t` (`n` tokens): GIVE_UP for anything but four plain columns, an integer grade
 * within a million, ids of at most MAX_ID_BYTES, a pair judged once; else taken (c->nq grows with a new query). */
static int judgment(Mem *M, Ctx *c, const Tok *t, int n, size_t nj, size_t n_lines)
{
    if (n == 0) return GIVE_UP;  /* blank lines are the numpy path's to count */
    if (n != 4 || t[0].p[0] == '#' || !is_integer(t[3], 1)) return GIVE_UP;
    if (t[0].len > MAX_ID_BYTES || t[2].len > MAX_ID_BYTES) return GIVE_UP;
    long g = to_long(t[3]);
    if (g > 1000000 || g < -1000000) return GIVE_UP;
    int inserted;
    int q = qtable_get(&c->queries, t[0], c->nq, &inserted);
    if (inserted) M->qids[c->nq++] = t[0];
    if (!jtable_put(&c->judged, q, t[2], (int)g)) return GIVE_UP;  /* judged twice */
    M->grades_all[nj] = q;
    M->grades_all[n_lines + nj] = (int)g;
    if (g >= c->threshold) M->n_rel[q]++;
    if (g > 0) M->n_pos[q]++;
    return OK;
}

/* Every line of M->qbuf (`qsize` bytes, a leading BOM skipped); `*nj` the judgments. */
static int judgments(Mem *M, Ctx *c, size_t qsize, size_t n_lines, size_t *nj)
{
    size_t pos = 0;
    Tok t[7];
    while (pos < qsize) {
        if (pos == 0 && qsize >= 3 && memcmp(M->qbuf, "\xef\xbb\xbf", 3) == 0) pos = 3;  /* a UTF-8 BOM */
        int n = split_line(M->qbuf + pos, t, 4);
        if (*nj == 0 && n > 0 && looks_like_another_format(t[0])) return GIVE_UP;
        pos = (size_t)((char *)memchr(M->qbuf + pos, '\n', qsize + 1 - pos) - M->qbuf) + 1;
        if (judgment(M, c, t, n, *nj, n_lines) != OK) return GIVE_UP;
        (*nj)++;
    }
    return c->nq ? OK : GIVE_UP;
}

/* Each query's positive grades, descending (the ideal ranking nDCG divides by), in one pool (M->pos_pool). */
static int ideal_grades(Mem *M, Ctx *c, size_t nj, size_t n_lines)
{
    const int *jq = M->grades_all, *jg = M->grades_all + n_lines;
    int nq = c->nq;
    c->pos_grades = M->pos_grades = calloc((size_t)nq, sizeof(int *));
    M->pos_pool = malloc((nj + 1) * sizeof(int));
    int *fill = calloc((size_t)nq, sizeof(int));
    if (!M->pos_grades || !M->pos_pool || !fill) { free(fill); return NO_MEMORY; }
    size_t at = 0;
    for (int q = 0; q < nq; q++) { M->pos_grades[q] = M->pos_pool + at; at += (size_t)M->n_pos[q]; }
    for (size_t j = 0; j < nj; j++) if (jg[j] > 0) M->pos_grades[jq[j]][fill[jq[j]]++] = jg[j];
    free(fill);
    for (int q = 0; q < nq; q++) qsort(M->pos_grades[q], (size_t)M->n_pos[q], sizeof(int), grade_desc);
    return OK;
}

/* The query ids in sorted order (Python's str order is the order of their UTF-8 bytes): M->qids is sorted, and
 * c->sorted_pos maps an original index to its place there. */
static int sort_qids(Mem *M, Ctx *c)
{
    int nq = c->nq;
    Tok *sorted = malloc((size_t)nq * sizeof(Tok));
    c->sorted_pos = M->sorted_pos = malloc((size_t)nq * sizeof(int));
    M->evaluated = malloc((size_t)nq * sizeof(int));
    if (!sorted || !M->sorted_pos || !M->evaluated) { free(sorted); return NO_MEMORY; }
    memcpy(sorted, M->qids, (size_t)nq * sizeof(Tok));
    qsort(sorted, (size_t)nq, sizeof(Tok), qid_order);
    for (int i = 0; i < nq; i++) {
        int inserted;
        M->sorted_pos[qtable_get(&c->queries, sorted[i], -1, &inserted)] = i;
    }
    memcpy(M->qids, sorted, (size_t)nq * sizeof(Tok));  /* from here on, qids are in sorted order */
    free(sorted);
    return OK;
}

/* The values of every measure and query, and the details' arrays when asked (zero for a query the run lacks). */
static int score_room(Mem *M, Ctx *c)
{
    size_t nq = (size_t)c->nq;
    c->values = M->values = calloc((size_t)c->nm * nq, sizeof(double));
    if (!M->values) return NO_MEMORY;
    if (!c->details) return OK;
    c->shown10 = M->shown10 = calloc(nq, sizeof(int));
    c->judged10 = M->judged10 = calloc(nq, sizeof(int));
    c->rel_start = M->rel_start = calloc(nq, sizeof(int));
    c->rel_n = M->rel_n = calloc(nq, sizeof(int));
    return M->shown10 && M->judged10 && M->rel_start && M->rel_n ? OK : NO_MEMORY;
}

/* The qrels into M and c: OK, GIVE_UP (unreadable, gzip bytes, anything the numpy path must read) or NO_MEMORY. */
int read_qrels(Mem *M, Input qrels, Ctx *c)
{
    size_t qsize, nj = 0;
    M->qbuf = qrels.data ? copy_bytes(qrels.data, qrels.len, &qsize) : read_file(qrels.path, &qsize);
    if (!M->qbuf) return qrels.data ? NO_MEMORY : GIVE_UP;
    if (qsize >= 2 && (unsigned char)M->qbuf[0] == 0x1f && (unsigned char)M->qbuf[1] == 0x8b) return GIVE_UP;
    size_t n_lines = 1;  /* for the tables' sizes */
    for (size_t i = 0; i < qsize; i++) n_lines += M->qbuf[i] == '\n';
    int r = qrels_tables(M, c, n_lines);
    if (r == OK) r = judgments(M, c, qsize, n_lines, &nj);
    if (r == OK) r = ideal_grades(M, c, nj, n_lines);
    if (r == OK) r = sort_qids(M, c);
    if (r == OK) r = score_room(M, c);
    return r;
}
