/* The measures: one query's values from its judged hits, with ``evaluation.kernels``' arithmetic in the same order
 * (so that the doubles are the same bits), its details for the worker, and numpy's summation for the means. */
#include "fastscore.h"

#include <math.h>
#include <stdlib.h>

/* The query's relevant hits ranked at most `cut` (R, P, RP). */
static inline double relevant_within(const int *hr, const int *hg, int nh, int threshold, int cut)
{
    double count = 0.0;
    for (int h = 0; h < nh; h++) if (hg[h] >= threshold && hr[h] <= cut) count += 1.0;
    return count;
}

/* MAP@k: the precision at each relevant hit ranked at most k, summed in rank order, over |relevant|. */
static inline double average_precision(const int *hr, const int *hg, int nh, int threshold, int k, double n_rel)
{
    double total = 0.0, so_far = 0.0;
    for (int h = 0; h < nh; h++) {
        if (hg[h] < threshold) continue;
        so_far += 1.0;
        if (hr[h] <= k) total += so_far / (double)hr[h];
    }
    return n_rel > 0 ? total / n_rel : 0.0;
}

/* nDCG@k: the gains of the positive hits ranked at most k over the ideal ranking's (the positive grades,
 * descending), both discounted by libm's log2 (NDCG_MAX_K in evaluation/fastscore.py says why k stops at 1000). */
static inline double ndcg(const Ctx *c, int q, const int *hr, const int *hg, int nh, int k)
{
    double dcg = 0.0, idcg = 0.0;
    for (int h = 0; h < nh; h++)
        if (hr[h] <= k && hg[h] > 0) dcg += (double)hg[h] / log2((double)hr[h] + 1.0);
    for (int i = 0; i < c->n_pos[q] && i < k; i++)
        idcg += (double)c->pos_grades[q][i] / log2((double)(i + 1) + 1.0);
    return idcg > 0 ? dcg / idcg : 0.0;
}

/* Measure m of query q; `first` is the rank of its first relevant hit (0: none). A query without a relevant
 * document has 0 where kernels divide by |relevant| (``kernels._per_relevant``). */
static inline double measure_value(const Ctx *c, int m, int q, const int *hr, const int *hg, int nh, int first)
{
    int k = c->k[m], threshold = c->threshold;
    double n_rel = (double)c->n_rel[q];
    switch (c->fam[m]) {
    case F_R:
        return n_rel > 0 ? relevant_within(hr, hg, nh, threshold, k) / n_rel : 0.0;
    case F_P:
        return relevant_within(hr, hg, nh, threshold, k) / (double)k;
    case F_RP:
        return n_rel > 0 ? relevant_within(hr, hg, nh, threshold, c->n_rel[q]) / n_rel : 0.0;
    case F_MAP:
        return average_precision(hr, hg, nh, threshold, k, n_rel);
    case F_MRR:
        return (first > 0 && first <= k) ? 1.0 / (double)first : 0.0;
    case F_SUCCESS:
        return (first > 0 && first <= k) ? 1.0 : 0.0;
    case F_NDCG:
        return ndcg(c, q, hr, hg, nh, k);
    }
    return 0.0;  /* not reached: fast_score takes known family codes only */
}

/* Every measure of query q (original index) from its judged hits in rank order (ranks `hr`, grades `hg`), into
 * c->values at the query's sorted position. */
void query_values(Ctx *c, int q, const int *hr, const int *hg, int nh)
{
    int first = 0;
    for (int h = 0; h < nh; h++) if (hg[h] >= c->threshold) { first = hr[h]; break; }
    for (int m = 0; m < c->nm; m++)
        c->values[(size_t)m * (size_t)c->nq + (size_t)c->sorted_pos[q]] = measure_value(c, m, q, hr, hg, nh, first);
}

/* The details of one query (``scoring.evaluate``'s judged_at_10 and rel_ranks): its rows shown in the top 10
 * (within the depth), its judged rows among them, the ranks of its relevant hits. 0 when out of memory. */
int query_details(Ctx *c, int q, size_t nr, const int *hr, const int *hg, int nh)
{
    int top = c->depth < 10 ? c->depth : 10, judged = 0, rel = 0;
    c->shown10[q] = nr < (size_t)top ? (int)nr : top;
    for (int h = 0; h < nh; h++) { judged += hr[h] <= 10; rel += hg[h] >= c->threshold; }
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
    for (int h = 0; h < nh; h++) if (hg[h] >= c->threshold) c->relpool[c->relpool_n++] = hr[h];
    return 1;
}

/* numpy's pairwise summation (what ndarray.mean sums with), so that the means are numpy's bits. */
double pairwise_sum(const double *a, Py_ssize_t n)
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
