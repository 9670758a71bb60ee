/* Reading: files and feeds into lines, lines into tokens, as the numpy path reads them, or not at all (the caller
 * then gives up, and the numpy path says why). */
#include "fastscore.h"

#include <stdlib.h>

/* A whole file, with SLACK zero bytes after it, the first of them a '\n' (a sentinel: the last line ends even
 * without its newline); NULL when it cannot be read or memory runs out. */
char *read_file(const char *path, size_t *size)
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
    buf[n] = '\n';
    *size = n;
    return buf;
}

/* The same from bytes in memory (a file the wrapper inflated). */
char *copy_bytes(const char *data, size_t n, size_t *size)
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

void init_classes(void)
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
int split_line(const char *line, Tok *toks, int max)
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

/* The feed's next bytes after r->end: feed(room) -> bytes (b"" at the end) or None (give up), called with the GIL
 * held (the scoring runs without it). 0 when it raised (r->raised, its exception set) or gave up (r->gave_up). */
static int feed_more(Reader *r, size_t *got)
{
    size_t room = r->cap - 1 - r->end;
    *got = 0;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *chunk = PyObject_CallFunction(r->feed, "n", (Py_ssize_t)room);
    if (!chunk) r->raised = 1;
    else if (chunk == Py_None) r->gave_up = 1;
    else if (!PyBytes_Check(chunk) || (size_t)PyBytes_GET_SIZE(chunk) > room) {
        PyErr_SetString(PyExc_TypeError, "feed(room) must return at most room bytes, or None");
        r->raised = 1;
    } else {
        *got = (size_t)PyBytes_GET_SIZE(chunk);
        memcpy(r->buf + r->end, PyBytes_AS_STRING(chunk), *got);
    }
    Py_XDECREF(chunk);
    PyGILState_Release(gil);
    return !(r->raised || r->gave_up);
}

/* The buffer's unread bytes moved to its start and more read after them (none: the end, r->eof); 0 when a line
 * is longer than the buffer, the file cannot be read, or the feed raised or gave up. */
static int refill(Reader *r)
{
    memmove(r->buf, r->buf + r->start, r->end - r->start);
    r->end -= r->start;
    r->start = 0;
    if (r->end >= r->cap - 1) return 0;
    size_t got;
    if (r->feed) {
        if (!feed_more(r, &got)) return 0;
    } else {
        got = fread(r->buf + r->end, 1, r->cap - 1 - r->end, r->f);
        if (got == 0 && ferror(r->f)) return 0;
    }
    if (got == 0) r->eof = 1;
    r->end += got;
    return 1;
}

/* next_line() past the buffer's last whole line: the same answer, the buffer refilled as needed. */
const char *next_line_refilled(Reader *r, int *bad)
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
        if (!refill(r)) { *bad = 1; return NULL; }
    }
}
