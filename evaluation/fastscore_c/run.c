/* The run, read line by line after the qrels, and one call's whole computation (run_score).
 *
 * A run grouped by query (every query's rows together, the usual case) is scored query by query as it is read:
 * a query's docids are copied into the arena until the query is finished (query.c). Seeing a query come back
 * after another, the reading stops with UNGROUPED; the wrapper calls again with grouped false, and then every row
 * is kept (17 bytes and its docid), grouped by query once the run is read, and each query finished as in a
 * grouped run, in the order the queries first appear. */
#include "fastscore.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

/* unknown_index's answer past MAX_UNKNOWN unknown queries (the caller gives up). */
#define TOO_MANY_UNKNOWN (-3)

/* Where the run's rows go and what the reading knows so far. */
typedef struct {
    Reader rd;
    QTable unknown;                 /* run query ids the qrels lack -> their index in M->unknown */
    char tag[MAX_ID_BYTES + SLACK]; /* the run's one tag */
    int tag_len;                    /* -1 before the first row */
    Tok cur;                        /* the current query's id: a copy that outlives the line */
    int cur_q;                      /* its qrels index, -1 for a query the qrels lack */
    int cur_slot;                   /* ungrouped: its slot, the qrels index or nq + its unknown index */
    int in_query;                   /* grouped: a query is being read */
    int n_slots;                    /* ungrouped: queries seen, in the order they first appear */
    size_t nr;                      /* grouped: the current query's rows */
    size_t arena_used, arena_cap;   /* the docids' bytes (M->arena) */
    size_t n_all, all_cap;          /* ungrouped: every row */
    long n_lines;
} RunRead;

/* The run opened and the reading's memory: GIVE_UP when the file cannot be opened, NO_MEMORY. */
static int open_run(Mem *M, Input run, const Ctx *c, RunRead *s)
{
    memset(s, 0, sizeof *s);
    s->rd = (Reader){ NULL, NULL, READ_BYTES, 0, 0, 0, run.feed, 0, 0 };
    s->tag_len = s->cur_q = s->cur_slot = -1;
    if (!run.feed) {
        s->rd.f = M->run_file = fopen(run.path, "rb");
        if (!s->rd.f) return GIVE_UP;
    }
    M->rbuf = s->rd.buf = calloc(s->rd.cap + SLACK, 1);
    M->seen_q = calloc((size_t)c->nq, sizeof(int));
    M->uslots = calloc(2 * MAX_UNKNOWN, sizeof(QEntry));
    M->unknown = calloc(MAX_UNKNOWN, sizeof(char *));
    s->arena_cap = 1 << 16;
    M->arena = malloc(s->arena_cap + SLACK);
    if (!s->rd.buf || !M->seen_q || !M->uslots || !M->unknown || !M->arena
        || !rows_reserve(M, (size_t)(c->depth < 4096 ? c->depth + 1 : 4096)))
        return NO_MEMORY;
    s->unknown = (QTable){ 2 * MAX_UNKNOWN - 1, M->uslots };
    if (!c->grouped) {
        M->first_order = malloc(((size_t)c->nq + MAX_UNKNOWN) * sizeof(int));
        M->app_slot = malloc(((size_t)c->nq + MAX_UNKNOWN) * sizeof(int));
        if (!M->first_order || !M->app_slot) return NO_MEMORY;
    }
    return OK;
}

/* A line's six columns into `t`: GIVE_UP for a gzip file (the wrapper inflates it), anything but six plain
 * columns, a comment, a file that starts like another format, an id longer than MAX_ID_BYTES. */
static int line_tokens(RunRead *s, const char *line, Tok *t)
{
    if (s->n_lines == 0 && (unsigned char)line[0] == 0x1f) return GIVE_UP;
    if (s->n_lines == 0 && memcmp(line, "\xef\xbb\xbf", 3) == 0) line += 3;  /* a UTF-8 BOM (SLACK) */
    s->n_lines++;
    if (split_line(line, t, 6) != 6 || t[0].p[0] == '#') return GIVE_UP;
    if (s->n_lines == 1 && looks_like_another_format(t[0])) return GIVE_UP;
    if (t[0].len > MAX_ID_BYTES || t[2].len > MAX_ID_BYTES) return GIVE_UP;
    return OK;
}

/* The index of a run query the qrels lack, `id` (a token of the line), kept in a copy of its own the first time
 * (`*added` then 1); NO_MEMORY, or TOO_MANY_UNKNOWN past MAX_UNKNOWN (the numpy path takes such a run). */
static int unknown_index(Mem *M, QTable *ut, Tok id, Counts *out, int *added)
{
    int inserted;
    int u = qtable_get(ut, id, -1, &inserted);
    *added = u < 0;
    if (u >= 0) return u;
    if (out->n_unknown >= MAX_UNKNOWN) return TOO_MANY_UNKNOWN;
    char *copy = malloc((size_t)id.len + SLACK);
    if (!copy) return NO_MEMORY;
    memcpy(copy, id.p, (size_t)id.len);
    memset(copy + id.len, 0, SLACK);
    u = out->n_unknown;
    qtable_get(ut, (Tok){ copy, id.len }, u, &inserted);
    M->unknown[out->n_unknown++] = copy;
    return u;
}

/* Grouped reading, at a row of another query than the current one: the current one finished, the new one looked
 * up; UNGROUPED when it was seen before. */
static int enter_grouped(Mem *M, Ctx *c, RunRead *s, Tok id, Counts *out)
{
    if (s->in_query) {
        int fin = finish_query(M, c, s->cur_q, s->nr, out);
        if (fin != OK) return fin;
    }
    int inserted;
    s->cur_q = qtable_get(&c->queries, id, -1, &inserted);
    if (s->cur_q >= 0) {
        if (M->seen_q[s->cur_q]) return UNGROUPED;
        M->seen_q[s->cur_q] = 1;
        s->cur = M->qids[c->sorted_pos[s->cur_q]];  /* the qrels' copy of the id: it outlives the line */
    } else {  /* a query the qrels lack: ignored, but its rows are checked and its ties counted */
        int added, u = unknown_index(M, &s->unknown, id, out, &added);
        if (u < 0) return u == NO_MEMORY ? NO_MEMORY : GIVE_UP;
        if (!added) return UNGROUPED;
        s->cur = (Tok){ M->unknown[u], id.len };
    }
    s->in_query = 1;
    s->nr = 0;
    s->arena_used = 0;
    return OK;
}

/* Ungrouped reading, at a row of another query than the previous row's: its slot (a known query's index, or nq +
 * an unknown one's), given the next place in the order of first appearance when it is new. */
static int enter_ungrouped(Mem *M, Ctx *c, RunRead *s, Tok id, Counts *out)
{
    int inserted;
    s->cur_q = qtable_get(&c->queries, id, -1, &inserted);
    if (s->cur_q >= 0) {
        s->cur_slot = s->cur_q;
        s->cur = M->qids[c->sorted_pos[s->cur_q]];
        if (!M->seen_q[s->cur_q]) {
            M->seen_q[s->cur_q] = 1;
            M->app_slot[s->n_slots] = s->cur_slot;
            M->first_order[s->cur_slot] = s->n_slots++;
        }
        return OK;
    }
    int added, u = unknown_index(M, &s->unknown, id, out, &added);
    if (u < 0) return u == NO_MEMORY ? NO_MEMORY : GIVE_UP;
    if (added) { M->app_slot[s->n_slots] = c->nq + u; M->first_order[c->nq + u] = s->n_slots++; }
    s->cur = (Tok){ M->unknown[u], id.len };
    s->cur_slot = c->nq + u;
    return OK;
}

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
                               1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A plain decimal score, -?digits(.digits)?, correctly rounded as the numpy path reads it: at most 15
 * significant digits and 22 decimals are exact by Clinger's fast path (an exact integer over an exact power
 * of ten, one rounding); anything longer goes through strtod, which also rounds correctly. Inline: one a row. */
static inline int parse_score(Tok t, double *out)
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

/* The row's tag, rank and score as the numpy path takes them: one tag for the whole run, an integer rank, a plain
 * decimal score (a float's, in float32); `*cmp`: the score as rows are compared. GIVE_UP otherwise. */
static inline int row_score(RunRead *s, const Tok *t, int single, double *cmp)
{
    if (s->tag_len < 0) {
        if (t[5].len > MAX_ID_BYTES) return GIVE_UP;
        memcpy(s->tag, t[5].p, (size_t)t[5].len);
        s->tag_len = t[5].len;
    }
    else if (!tok_eq(t[5], (Tok){ s->tag, s->tag_len })) return GIVE_UP;
    if (!is_integer(t[3], 0)) return GIVE_UP;
    double v;
    if (!parse_score(t[4], &v)) return GIVE_UP;
    *cmp = v;
    if (single) {
        float f = (float)v;
        if (isinf(f)) return GIVE_UP;
        *cmp = (double)f;
    }
    return OK;
}

/* Ungrouped: room for more rows. From 4M rows on: big enough that malloc maps them (untouched pages cost
 * nothing, growth is mremap), not taken from the heap, where every step would leave the last one behind. */
static int grow_all(Mem *M, RunRead *s, int single)
{
    size_t grown = s->all_cap ? s->all_cap + s->all_cap / 2 : (size_t)1 << 22;
    if (grown > UINT32_MAX) return GIVE_UP;  /* more rows than a place holds: the numpy path */
    void *r;
    if (single) { r = realloc(M->all_cmpf, grown * sizeof(float)); if (r) M->all_cmpf = r; }
    else { r = realloc(M->all_cmp, grown * sizeof(double)); if (r) M->all_cmp = r; }
    uint8_t *l = realloc(M->all_len, grown * sizeof(uint8_t));
    if (l) M->all_len = l;
    uint32_t *d = realloc(M->all_doc, grown * sizeof(uint32_t));
    if (d) M->all_doc = d;
    int *q = realloc(M->all_q, grown * sizeof(int));
    if (q) M->all_q = q;
    if (!r || !l || !d || !q) return NO_MEMORY;
    s->all_cap = grown;
    return OK;
}

/* The docid's bytes appended to the arena; its offset in `*at`. */
static inline int arena_put(Mem *M, RunRead *s, Tok doc, size_t *at)
{
    if (s->arena_used + (size_t)doc.len > s->arena_cap) {
        char *grown = realloc(M->arena, 2 * s->arena_cap + (size_t)doc.len + SLACK);
        if (!grown) return NO_MEMORY;
        M->arena = grown;
        s->arena_cap = 2 * s->arena_cap + (size_t)doc.len;
    }
    memcpy(M->arena + s->arena_used, doc.p, (size_t)doc.len);
    *at = s->arena_used;
    s->arena_used += (size_t)doc.len;
    return OK;
}

/* A row kept: as the current query's next row (grouped), or among all the rows with its query's slot. */
static inline int keep_row(Mem *M, const Ctx *c, RunRead *s, Tok doc, double cmp)
{
    size_t at;
    if (c->grouped && s->nr + 1 > M->rows_cap && !rows_reserve(M, s->nr + 1)) return NO_MEMORY;
    if (!c->grouped && s->n_all == s->all_cap) {
        int grown = grow_all(M, s, c->single);
        if (grown != OK) return grown;
    }
    if (arena_put(M, s, doc, &at) != OK) return NO_MEMORY;
    if (c->grouped) {
        M->doc_at[s->nr] = at;
        M->rows[s->nr].doc.len = doc.len;
        M->rows[s->nr].cmp = cmp;
        s->nr++;
        return OK;
    }
    if (at > UINT32_MAX - (size_t)doc.len) return GIVE_UP;  /* docids past 4 GiB: the numpy path */
    M->all_doc[s->n_all] = (uint32_t)at;
    M->all_len[s->n_all] = (uint8_t)(doc.len - 1);  /* 1 to MAX_ID_BYTES (256) */
    if (c->single) M->all_cmpf[s->n_all] = (float)cmp;  /* exact: cmp is a float's value in single precision */
    else M->all_cmp[s->n_all] = cmp;
    M->all_q[s->n_all] = s->cur_slot;
    s->n_all++;
    return OK;
}

/* Every line of the run: OK when it was read whole (a grouped run's queries all finished), else the outcome. */
static int read_rows(Mem *M, Ctx *c, RunRead *s, Counts *out)
{
    Tok t[7];
    int bad = 0, r;
    double cmp;
    for (;;) {
        const char *line = next_line(&s->rd, &bad);
        if (bad) return s->rd.raised ? FEED_RAISED : GIVE_UP;
        if (!line) break;
        if (line_tokens(s, line, t) != OK) return GIVE_UP;
        Tok doc = t[2];  /* a local, taken right after its length is checked: the compiler copies it inline */
        if (!tok_eq(t[0], s->cur)) {
            r = c->grouped ? enter_grouped(M, c, s, t[0], out) : enter_ungrouped(M, c, s, t[0], out);
            if (r != OK) return r;
        }
        if (row_score(s, t, c->single, &cmp) != OK) return GIVE_UP;
        if ((r = keep_row(M, c, s, doc, cmp)) != OK) return r;
    }
    if (c->grouped && s->in_query) return finish_query(M, c, s->cur_q, s->nr, out);
    return OK;
}

/* Ungrouped: the rows' order by query (M->perm), queries in the order they first appear, rows in file order;
 * M->begin[a] is where query a's rows start. */
static int group_rows(Mem *M, const RunRead *s)
{
    int n_slots = s->n_slots;
    M->begin = calloc((size_t)n_slots + 1, sizeof(size_t));
    M->perm = malloc((s->n_all + 1) * sizeof(uint32_t));
    if (!M->begin || !M->perm) return NO_MEMORY;
    for (size_t r = 0; r < s->n_all; r++) M->begin[M->first_order[M->all_q[r]] + 1]++;
    for (int a = 0; a < n_slots; a++) M->begin[a + 1] += M->begin[a];
    for (size_t r = 0; r < s->n_all; r++) M->perm[M->begin[M->first_order[M->all_q[r]]]++] = (uint32_t)r;
    for (int a = n_slots; a > 0; a--) M->begin[a] = M->begin[a - 1];  /* back to each group's start */
    M->begin[0] = 0;
    return OK;
}

/* Ungrouped: each query's rows into M->rows, finished as a grouped run's, in the order they first appear. */
static int finish_groups(Mem *M, Ctx *c, const RunRead *s, Counts *out)
{
    for (int a = 0; a < s->n_slots; a++) {
        size_t nr = 0;
        for (size_t i = M->begin[a]; i < M->begin[a + 1]; i++, nr++) {
            if (nr + 1 > M->rows_cap && !rows_reserve(M, nr + 1)) return NO_MEMORY;
            uint32_t r = M->perm[i];
            M->rows[nr].doc.len = (int)M->all_len[r] + 1;
            M->rows[nr].cmp = c->single ? (double)M->all_cmpf[r] : M->all_cmp[r];
            M->doc_at[nr] = M->all_doc[r];
        }
        int slot = M->app_slot[a];
        int fin = finish_query(M, c, slot < c->nq ? slot : -1, nr, out);
        if (fin != OK) return fin;
    }
    return OK;
}

/* The averaged queries (M->evaluated: their sorted positions, ascending) and what the notices count of them. */
static void count_averaged(Mem *M, const Ctx *c, Counts *out)
{
    int *orig = M->evaluated;  /* first: sorted position -> original index */
    for (int q = 0; q < c->nq; q++) orig[c->sorted_pos[q]] = q;
    int ne = 0;
    for (int i = 0; i < c->nq; i++) {
        int q = orig[i], empty = c->n_rel[q] == 0, in_run = M->seen_q[q];
        out->n_no_relevant += empty;
        out->n_in_both += in_run;
        int counted = c->empty_mode == E_COUNT || (c->empty_mode == E_OMIT ? !empty : in_run);
        if (!counted) continue;
        out->n_empty_evaluated += empty;
        out->n_missing += !in_run;
        M->evaluated[ne++] = i;  /* ne <= i: orig[i] was read above */
    }
    out->n_evaluated = ne;
}

/* One call: OK (scored), GIVE_UP (not the case this path takes), NO_MEMORY, FEED_RAISED, or UNGROUPED (the run is
 * not grouped by query: call again with c->grouped 0). */
int run_score(Mem *M, Input run, Input qrels, Ctx *c, Counts *out)
{
    RunRead s;
    int r = read_qrels(M, qrels, c);
    if (r == OK) r = open_run(M, run, c, &s);
    if (r == OK) r = read_rows(M, c, &s, out);
    if (r != OK) return r;
    if (s.n_lines == 0) return GIVE_UP;  /* an empty run: the numpy path says so */
    if (!c->grouped && ((r = group_rows(M, &s)) != OK || (r = finish_groups(M, c, &s, out)) != OK)) return r;
    count_averaged(M, c, out);
    out->n_lines = s.n_lines;
    /* rows outside the corpus: the numpy path counts them as non-relevant and says so, or refuses the run */
    return out->n_outside ? GIVE_UP : OK;
}
