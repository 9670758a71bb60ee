/* evaluation._fastscore: the command line's and the worker's compiled scorer, no numpy, a few milliseconds at
 * BSARD's scale. This file is its Python side: score()'s arguments, its answer, the module. README.md, beside it,
 * says what the module computes and hands back, and the rules its files keep; fastscore.h lists the parts.
 *
 * score(run, qrels, measures, depth, threshold, float32, empty_queries, grouped=True, details=False, corpus=None)
 *   run: a path (str) or a feed, feed(room) -> at most room bytes, b"" at the end, None to give up (called with
 *   the GIL held: fastscore.Inflate, fastscore.Capped); qrels: a path or their bytes (inflated by the wrapper);
 *   measures: a sequence of (family code, k), the codes of fastscore.h's enum (k unused by RP); empty_queries:
 *   0 omit, 1 count, 2 trec_eval; corpus: the dataset's sorted uint64 keys (``CorpusIds.keys``) or None.
 *   Returns None (the numpy path takes the files), "ungrouped" (read it again with grouped false) or
 *   (qids, per_query, means, counts[, details]): the averaged qids sorted, one list of floats per measure, one
 *   mean per measure, a dict of what the notices count (tie_groups, tie_queries, n_lines, n_queries,
 *   no_relevant, empty_evaluated, missing, unknown_shown, unknown, cut_rows, cut_queries, in_both: the qrels
 *   queries the run has rows for, which the wrapper refuses to be 0 as trec_eval does), and with details the
 *   averaged queries' details as bytes (query_details_out).
 */
#include "fastscore.h"

#include <stdlib.h>

/* Every allocation of a call (Mem), whatever was allocated before it stopped. */
static void release(Mem *m)
{
    free(m->qbuf); free(m->rbuf); free(m->qslots); free(m->jslots); free(m->qids); free(m->n_rel);
    free(m->n_pos); free(m->grades_all); free(m->pos_pool); free(m->pos_grades); free(m->sorted_pos);
    free(m->fam); free(m->k); free(m->seen_q); free(m->hr); free(m->hg); free(m->values); free(m->rows);
    free(m->dup); free(m->arena); free(m->doc_at); free(m->uslots); free(m->evaluated);
    free(m->all_cmp); free(m->all_cmpf); free(m->all_len); free(m->all_doc); free(m->all_q);
    free(m->first_order); free(m->app_slot); free(m->perm); free(m->begin);
    free(m->shown10); free(m->judged10); free(m->rel_start); free(m->rel_n); free(m->corpus_start);
    if (m->unknown) for (int i = 0; i < MAX_UNKNOWN && m->unknown[i]; i++) free(m->unknown[i]);
    free(m->unknown);
    if (m->run_file) fclose(m->run_file);
}

/* `o` as an Input: a str is a path; the run may be a feed (a callable), the qrels their content (bytes). The
 * Input borrows `o`'s buffer: it lives as long as the call's argument. */
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

/* The measures, (family code, k) pairs, into c->fam and c->k (owned by M); 0 with an exception set. */
static int get_measures(PyObject *measures, Mem *M, Ctx *c)
{
    PyObject *seq = PySequence_Fast(measures, "measures must be a sequence of (family code, k)");
    if (!seq) return 0;
    c->nm = (int)PySequence_Fast_GET_SIZE(seq);
    c->fam = M->fam = malloc(((size_t)c->nm + 1) * sizeof(int));
    c->k = M->k = malloc(((size_t)c->nm + 1) * sizeof(int));
    int ok = M->fam && M->k;
    if (!ok) PyErr_NoMemory();
    for (int m = 0; ok && m < c->nm; m++) {
        int fam, k;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, m), "ii", &fam, &k)) ok = 0;
        else if (fam < 0 || fam >= N_FAMILIES || (fam != F_RP && k < 1)) {
            PyErr_SetString(PyExc_ValueError, "unknown family code or cutoff");
            ok = 0;
        }
        else { c->fam[m] = fam; c->k[m] = k; }
    }
    Py_DECREF(seq);
    return ok;
}

/* The corpus's keys (sorted uint64, C-contiguous: ``CorpusIds.keys``) as c->corpus, a view the caller releases
 * after the scoring; 0 with an exception set (and nothing to release). */
static int get_corpus(PyObject *o, Py_buffer *view, Ctx *c)
{
    if (PyObject_GetBuffer(o, view, PyBUF_C_CONTIGUOUS) < 0) return 0;
    if (view->len % 8) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "the corpus is its sorted uint64 keys");
        return 0;
    }
    c->corpus = view->buf;
    c->n_corpus = (size_t)view->len / 8;
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

/* The averaged queries' ids, sorted (a new list). */
static PyObject *evaluated_qids(const Mem *M, int ne)
{
    PyObject *qids = PyList_New(ne);
    for (int i = 0; qids && i < ne; i++) {
        const Tok *q = &M->qids[M->evaluated[i]];
        PyObject *s = PyUnicode_DecodeUTF8(q->p, q->len, NULL);
        if (!s) Py_CLEAR(qids);
        else PyList_SET_ITEM(qids, i, s);
    }
    return qids;
}

/* The first SHOWN_UNKNOWN run query ids the qrels lack, in the order they came (a new list). */
static PyObject *unknown_shown(const Mem *M, const Counts *n)
{
    int shown = n->n_unknown < SHOWN_UNKNOWN ? n->n_unknown : SHOWN_UNKNOWN;
    PyObject *unknown = PyList_New(shown);
    for (int i = 0; unknown && i < shown; i++) {
        PyObject *s = PyUnicode_DecodeUTF8(M->unknown[i], (Py_ssize_t)strlen(M->unknown[i]), NULL);
        if (!s) Py_CLEAR(unknown);
        else PyList_SET_ITEM(unknown, i, s);
    }
    return unknown;
}

/* A list of floats (a new list). */
static PyObject *float_list(const double *v, int n)
{
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        PyObject *x = PyFloat_FromDouble(v[i]);
        if (!x) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, x);
    }
    return list;
}

/* Per measure, the averaged queries' values (`*per_query`, a list of lists) and their mean by numpy's pairwise
 * summation (`*means`; no query averaged: a mean of 0, as the numpy path's); 0 with an exception set (the caller
 * clears what is there). */
static int measure_lists(const Mem *M, const Ctx *c, int ne, PyObject **per_query, PyObject **means)
{
    double *column = malloc(((size_t)ne + 1) * sizeof(double));
    *per_query = PyList_New(c->nm);
    *means = PyList_New(c->nm);
    int ok = column && *per_query && *means;
    if (!column) PyErr_NoMemory();
    for (int m = 0; ok && m < c->nm; m++) {
        const double *v = c->values + (size_t)m * (size_t)c->nq;
        for (int i = 0; i < ne; i++) column[i] = v[M->evaluated[i]];
        PyObject *col = float_list(column, ne);
        PyObject *mean = PyFloat_FromDouble(ne ? pairwise_sum(column, ne) / (double)ne : 0.0);
        if (!col || !mean) { Py_XDECREF(col); Py_XDECREF(mean); ok = 0; break; }
        PyList_SET_ITEM(*per_query, m, col);
        PyList_SET_ITEM(*means, m, mean);
    }
    free(column);
    return ok;
}

/* What the notices count, as the wrapper reads them (a new dict; takes `unknown`, the shown ids, whatever
 * happens). */
static PyObject *counts_dict(const Ctx *c, const Counts *n, PyObject *unknown)
{
    return Py_BuildValue("{s:l,s:l,s:l,s:i,s:i,s:i,s:i,s:N,s:i,s:l,s:l,s:i}",
                         "tie_groups", n->tie_groups, "tie_queries", n->tie_queries, "n_lines", n->n_lines,
                         "n_queries", c->nq, "no_relevant", n->n_no_relevant, "empty_evaluated",
                         n->n_empty_evaluated, "missing", n->n_missing, "unknown_shown", unknown, "unknown",
                         n->n_unknown, "cut_rows", n->n_cut, "cut_queries", n->n_over, "in_both", n->n_in_both);
}

/* score()'s answer for a scored call: (qids, per_query, means, counts), and the details when asked. */
static PyObject *scores_out(const Mem *M, const Ctx *c, const Counts *n)
{
    int ne = n->n_evaluated;
    PyObject *extra = c->details ? query_details_out(c, M->evaluated, ne) : NULL;
    if (c->details && !extra) return NULL;
    PyObject *per_query = NULL, *means = NULL, *counts = NULL, *unknown = NULL;
    PyObject *qids = evaluated_qids(M, ne);
    if (qids && (unknown = unknown_shown(M, n)) && measure_lists(M, c, ne, &per_query, &means))
        counts = counts_dict(c, n, unknown);  /* takes unknown */
    else Py_XDECREF(unknown);
    if (!counts) {
        Py_XDECREF(extra); Py_XDECREF(qids); Py_XDECREF(per_query); Py_XDECREF(means);
        return NULL;
    }
    if (extra) return Py_BuildValue("(NNNNN)", qids, per_query, means, counts, extra);
    return Py_BuildValue("(NNNN)", qids, per_query, means, counts);
}

/* score()'s answer for a call that did not score (run_score's outcome). */
static PyObject *outcome_out(int outcome)
{
    if (outcome == FEED_RAISED) return NULL;  /* the feed's exception */
    if (outcome == NO_MEMORY) return PyErr_NoMemory();
    if (outcome == UNGROUPED) return PyUnicode_FromString("ungrouped");  /* call again with grouped false */
    Py_RETURN_NONE;
}

static PyObject *fast_score(PyObject *self, PyObject *args)
{
    PyObject *run_arg, *qrels_arg, *measures, *corpus_arg = Py_None;
    Ctx c;
    memset(&c, 0, sizeof c);
    c.grouped = 1;
    if (!PyArg_ParseTuple(args, "OOOiipi|ppO", &run_arg, &qrels_arg, &measures, &c.depth, &c.threshold, &c.single,
                          &c.empty_mode, &c.grouped, &c.details, &corpus_arg))
        return NULL;
    Input run = { NULL, NULL, 0, NULL }, qrels = { NULL, NULL, 0, NULL };
    if (!get_input(run_arg, &run, 1) || !get_input(qrels_arg, &qrels, 0)) return NULL;
    if (c.empty_mode < E_OMIT || c.empty_mode > E_TREC_EVAL) {
        PyErr_SetString(PyExc_ValueError, "empty_queries is 0 (omit), 1 (count) or 2 (trec_eval)");
        return NULL;
    }
    if (c.depth < 1) Py_RETURN_NONE;
    Mem M;
    memset(&M, 0, sizeof M);
    Py_buffer corpus = { 0 };
    if (!get_measures(measures, &M, &c) || (corpus_arg != Py_None && !get_corpus(corpus_arg, &corpus, &c))) {
        release(&M);
        return NULL;
    }
    if (corpus_arg != Py_None && !corpus_index(&M, &c)) {
        PyBuffer_Release(&corpus);
        release(&M);
        return PyErr_NoMemory();
    }
    Counts n;
    memset(&n, 0, sizeof n);
    int outcome;
    Py_BEGIN_ALLOW_THREADS
    outcome = run_score(&M, run, qrels, &c, &n);
    Py_END_ALLOW_THREADS
    if (corpus_arg != Py_None) PyBuffer_Release(&corpus);
    PyObject *answer = outcome == OK ? scores_out(&M, &c, &n) : outcome_out(outcome);
    free(c.relpool);
    release(&M);
    return answer;
}

static PyMethodDef methods[] = {
    {"score", fast_score, METH_VARARGS,
     "score(run, qrels, measures, depth, threshold, float32, empty_queries, grouped=True, details=False, "
     "corpus=None) -> None, \"ungrouped\" or (qids, per_query, means, counts[, details]); "
     "evaluation/fastscore_c/README.md says what it takes and hands back."},
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
