/* The compiled fast path of rows.flatten for OTLP protobuf trace requests.
 *
 * It walks the wire format once and writes the span table's Arrow columns straight into buffers:
 * ids as hex, attributes, events, links, resource and scope as JSON, and the promoted columns
 * (normalize.promote, the same rules; llm.invocation_parameters is read as JSON only as far as the
 * answer is sure, see invocation_model). It handles the shapes exporters send; anything else —
 * malformed, a nested or bytes attribute value, a duplicate key, a repeated singular message,
 * a non-ASCII kind — makes it answer None, and the caller decodes the request with the
 * pure-Python path, which is the reference and decides what is wrong with it. So a request gives
 * the same rows either way (the equivalence tests check this value by value). It reads the wire
 * by protobuf's own rules (see rd_varint), so it never takes a body protobuf rejects.
 *
 * It also folds the rows into the trace lookup parts and the exposition's stats (store.summary's
 * fold and BatchStats.add, the same rules), so no Python runs per span. The parts are folded by the
 * summary's declaration, given at configure: a fixed set of primitive folds (min, max, arg_min,
 * count, set) over span columns, each for the spans a conjunction of tests holds for.
 *
 * configure(keys, ops, kinds, texts, llm_ops, buckets[, summary]) is called once with the strings
 * it matches against, the duration buckets and the summary's columns (from reach_otel.semconv,
 * batch_stats and store.summary, so they live in one place); flatten(body, parts=True) then returns
 * None or (rows, columns, folds, rejected, reason codes) — see fast.py for the shapes; without
 * ``parts`` the parts are not folded (a store that computes them itself). cost(body) is the
 * request's cost from a walk of tags and lengths (see tally).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- growable buffers */

typedef struct {
    char *p;
    size_t len, cap;
} Buf;

/* Every buffer touched gets storage (the test is strict: a buffer keeps a spare byte), so no
 * NULL pointer is ever offset or copied from. */
static int buf_grow(Buf *b, size_t need) {
    size_t cap = b->cap ? b->cap : 1024;
    while (cap <= b->len + need) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

/* Token sums saturate at the int64 range, as batch_stats' fold does: a wrap would turn two huge
   counts into a negative one (and signed overflow is undefined behaviour in C). */
static inline int64_t add_sat(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline int buf_reserve(Buf *b, size_t need) { return b->len + need < b->cap ? 0 : buf_grow(b, need); }

static inline int buf_put(Buf *b, const void *s, size_t n) {
    if (n == 0) return 0; /* s may be NULL then: memcpy(dst, NULL, 0) is undefined */
    if (buf_reserve(b, n)) return -1;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    return 0;
}

static inline int buf_ch(Buf *b, char c) {
    if (buf_reserve(b, 1)) return -1;
    b->p[b->len++] = c;
    return 0;
}

#define PUTS(b, lit) buf_put((b), (lit), sizeof(lit) - 1)

/* ---------------------------------------------------------------- errors */

/* FALLBACK: a shape it leaves to the reference, which also answers for every malformed body. */
enum { OK = 0, FALLBACK = 1, NOMEM = 2 };
#define TRY(x)                      \
    do {                            \
        int _rc = (x);              \
        if (_rc) return _rc;        \
    } while (0)
#define MEM(x)                      \
    do {                            \
        if (x) return NOMEM;        \
    } while (0)

/* ---------------------------------------------------------------- wire reading */

typedef struct {
    const uint8_t *p, *end;
} Rd;

/* Where an empty field points before it is read: never NULL, so lengths are differences of
 * pointers into one object. */
static const uint8_t EMPTY[1] = {0};

/* The rules are protobuf's (upb's), checked against it by the tests: a value varint has at most
 * 10 bytes (bits past 64 are dropped); a tag or a length at most 5; non-minimal encodings are
 * fine. A tag is at most 2**32 - 1 with a field number other than 0 and a wire type of 0-5; a
 * length fits in what is left of its message. A known field sent with another wire type is an
 * unknown field, and unknown fields are skipped (groups too, when well nested). */
static inline int rd_varint(Rd *r, uint64_t *out) {
    if (r->p < r->end && *r->p < 0x80) {
        *out = *r->p++;
        return OK;
    }
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end) return FALLBACK;
        uint8_t byte = *r->p++;
        v |= (uint64_t)(byte & 0x7f) << (7 * i); /* the 10th byte: only its lowest bit stays */
        if (!(byte & 0x80)) {
            *out = v;
            return OK;
        }
    }
    return FALLBACK;
}

/* A tag's or a length's varint: at most 5 bytes, at most 2**32 - 1. */
static inline int rd_varint32(Rd *r, uint32_t *out) {
    if (r->p < r->end && *r->p < 0x80) {
        *out = *r->p++;
        return OK;
    }
    uint64_t v = 0;
    for (int i = 0; i < 5; i++) {
        if (r->p >= r->end) return FALLBACK;
        uint8_t byte = *r->p++;
        v |= (uint64_t)(byte & 0x7f) << (7 * i);
        if (!(byte & 0x80)) {
            if (v > UINT32_MAX) return FALLBACK;
            *out = (uint32_t)v;
            return OK;
        }
    }
    return FALLBACK;
}

static inline int rd_len(Rd *r, Rd *sub) {
    uint32_t n;
    TRY(rd_varint32(r, &n));
    if (n >= INT32_MAX || n > (uint64_t)(r->end - r->p)) return FALLBACK;
    sub->p = r->p;
    sub->end = r->p + n;
    r->p += n;
    return OK;
}

static inline int rd_fixed64(Rd *r, uint64_t *out) {
    if (r->end - r->p < 8) return FALLBACK;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | r->p[i];
    r->p += 8;
    *out = v;
    return OK;
}

static inline int rd_fixed32(Rd *r, uint32_t *out) {
    if (r->end - r->p < 4) return FALLBACK;
    *out = (uint32_t)r->p[0] | ((uint32_t)r->p[1] << 8) | ((uint32_t)r->p[2] << 16) | ((uint32_t)r->p[3] << 24);
    r->p += 4;
    return OK;
}

static inline int rd_tag(Rd *r, uint32_t *field, int *wire) {
    uint32_t tag;
    TRY(rd_varint32(r, &tag));
    if ((tag >> 3) == 0 || (tag & 7) > 5) return FALLBACK;
    *field = tag >> 3;
    *wire = (int)(tag & 7);
    return OK;
}

/* Groups nested deeper than this are left to the reference (protobuf's own limit is its
 * message depth, 100, which groups count towards). */
#define MAX_GROUP_DEPTH 32

static int rd_skip_at(Rd *r, uint32_t field, int wire, int depth) {
    uint64_t v;
    Rd sub;
    switch (wire) {
        case 0: return rd_varint(r, &v);
        case 1: return rd_fixed64(r, &v);
        case 2: return rd_len(r, &sub);
        case 3: /* a group: its fields up to the end-group tag of the same number */
            if (depth >= MAX_GROUP_DEPTH) return FALLBACK;
            for (;;) {
                uint32_t f2;
                int w2;
                if (r->p >= r->end) return FALLBACK; /* never closed */
                TRY(rd_tag(r, &f2, &w2));
                if (w2 == 4) return f2 == field ? OK : FALLBACK;
                TRY(rd_skip_at(r, f2, w2, depth + 1));
            }
        case 5: {
            uint32_t w;
            return rd_fixed32(r, &w);
        }
        default: return FALLBACK; /* 4: an end-group tag outside its group */
    }
}

/* Skips the value of a field whose tag was just read. */
static inline int rd_skip(Rd *r, uint32_t field, int wire) { return rd_skip_at(r, field, wire, 0); }

/* A known field with another wire type than its own: protobuf keeps it as an unknown field. */
#define EXPECT(rd, field, wire, want)          \
    if ((wire) != (want)) {                    \
        TRY(rd_skip((rd), (field), (wire)));   \
        continue;                              \
    }

/* Strict UTF-8 (no surrogates, no overlongs), as protobuf requires of string fields. */
static int utf8_ok(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            if (i + 1 >= n || (s[i + 1] & 0xc0) != 0x80) return 0;
            i += 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            if (i + 2 >= n || (s[i + 1] & 0xc0) != 0x80 || (s[i + 2] & 0xc0) != 0x80) return 0;
            if (c == 0xe0 && s[i + 1] < 0xa0) return 0;
            if (c == 0xed && s[i + 1] > 0x9f) return 0;
            i += 3;
        } else if (c >= 0xf0 && c <= 0xf4) {
            if (i + 3 >= n || (s[i + 1] & 0xc0) != 0x80 || (s[i + 2] & 0xc0) != 0x80 ||
                (s[i + 3] & 0xc0) != 0x80)
                return 0;
            if (c == 0xf0 && s[i + 1] < 0x90) return 0;
            if (c == 0xf4 && s[i + 1] > 0x8f) return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

static inline int rd_string(Rd *r, Rd *s) {
    TRY(rd_len(r, s));
    return utf8_ok(s->p, (size_t)(s->end - s->p)) ? OK : FALLBACK;
}

/* ---------------------------------------------------------------- configuration */

/* The attribute keys promotion reads, in the order of fast.KEYS. */
enum {
    K_OPERATION, K_TL_KIND, K_TL_ENTITY, K_TL_REQUEST_TYPE, K_OI_KIND, K_HOP, K_LOOP,
    K_HANDOFF_STATUS, K_ERROR_TYPE, K_AGENT_NAME, K_OI_AGENT_NAME, K_REACH_HANDOFF_SOURCE,
    K_HANDOFF_FROM, K_REACH_AGENT_NAME, K_REACH_HANDOFF_TARGET, K_TRANSFER_TARGET, K_HANDOFF_TO,
    K_REACH_HANDOFF_MODE, K_TRANSFER_MODE, K_TOOL_NAME, K_OI_TOOL_NAME, K_REQUEST_MODEL,
    K_RESPONSE_MODEL, K_OI_MODEL, K_PROVIDER_NAME, K_SYSTEM, K_OI_PROVIDER, K_OI_SYSTEM,
    K_INPUT, K_PROMPT, K_OI_PROMPT, K_OUTPUT, K_COMPLETION, K_OI_COMPLETION, K_CONVERSATION,
    K_OI_SESSION, K_OI_INVOCATION, K_OI_INPUT, K_OI_OUTPUT, K_SERVICE_NAME, K_EXCEPTION_TYPE, N_KEYS
};
/* Operation names, in the order of fast.OPS. */
enum { OP_WORKFLOW, OP_AGENT, OP_TOOL, OP_CHAT, OP_TEXT_COMPLETION, OP_EMBEDDINGS, OP_HANDOFF, N_OPS };
/* Source values mapped onto operations, in the order of fast.KINDS. */
enum {
    TLK_WORKFLOW, TLK_AGENT, TLK_TOOL, TLR_CHAT, TLR_COMPLETION, TLR_EMBEDDING, OIK_LLM, OIK_AGENT,
    OIK_TOOL, OIK_EMBEDDING, N_KINDS
};
/* Other names, in the order of fast.TEXTS. */
enum {
    T_EXCEPTION_EVENT, T_LOOP_EVENT, T_HEARTBEAT, T_REDACTED, T_HANDOFF_SPAN, T_HANDOFF_TO, T_MODEL_KEY,
    T_MODEL_NAME_KEY, N_TEXTS
};

typedef struct {
    char *s;
    size_t n;
} Str;

static Str g_keys[N_KEYS], g_ops[N_OPS], g_kinds[N_KINDS], g_texts[N_TEXTS];
#define MAX_LLM_OPS 8
static Str g_llm[MAX_LLM_OPS]; /* sc.LLM_OPERATIONS */
static int g_nllm = 0;
static int g_configured = 0;
#define HASH_SLOTS 256
static int g_hash[HASH_SLOTS]; /* key index + 1, open addressing */

static inline uint32_t fnv(const uint8_t *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 16777619u;
    return h;
}

static int known_key(const uint8_t *s, size_t n) {
    uint32_t h = fnv(s, n) & (HASH_SLOTS - 1);
    for (;;) {
        int k = g_hash[h] - 1;
        if (k < 0) return -1;
        if (g_keys[k].n == n && memcmp(g_keys[k].s, s, n) == 0) return k;
        h = (h + 1) & (HASH_SLOTS - 1);
    }
}

static inline int str_eq(const uint8_t *s, size_t n, const Str *t) {
    return t->n == n && memcmp(t->s, s, n) == 0;
}

/* ---------------------------------------------------------------- attributes */

enum { V_NULL, V_STR, V_BOOL, V_INT, V_DBL, V_ARR };

typedef struct {
    const uint8_t *key;
    uint32_t klen;
    uint8_t type;
    const uint8_t *s; /* V_STR text (or a static NaN/Infinity text), V_ARR payload */
    uint32_t slen;
    int64_t i; /* V_INT, V_BOOL */
    double d;
} Attr;

typedef struct {
    Attr *a;
    size_t n, cap;
    int slot[N_KEYS]; /* index into a, or -1 */
} Attrs;

#define MAX_ATTRS 128 /* more, and the reference path takes the request (duplicate checks are n^2) */

static const char NAN_TEXT[] = "NaN", INF_TEXT[] = "Infinity", NINF_TEXT[] = "-Infinity";

/* One scalar AnyValue (no arrays, no kvlists, no bytes: those fall back). */
static int parse_scalar(Rd *r, Attr *out, int allow_array) {
    int seen = 0;
    out->type = V_NULL;
    while (r->p < r->end) {
        uint32_t field;
        int wire;
        TRY(rd_tag(r, &field, &wire));
        uint64_t v;
        Rd sub;
        switch (field) {
            case 1:
                EXPECT(r, field, wire, 2);
                TRY(rd_string(r, &sub));
                out->type = V_STR;
                out->s = sub.p;
                out->slen = (uint32_t)(sub.end - sub.p);
                break;
            case 2:
                EXPECT(r, field, wire, 0);
                TRY(rd_varint(r, &v));
                out->type = V_BOOL;
                out->i = v != 0;
                break;
            case 3:
                EXPECT(r, field, wire, 0);
                TRY(rd_varint(r, &v));
                out->type = V_INT;
                out->i = (int64_t)v;
                break;
            case 4:
                EXPECT(r, field, wire, 1);
                TRY(rd_fixed64(r, &v));
                memcpy(&out->d, &v, 8);
                if (isnan(out->d)) {
                    out->type = V_STR, out->s = (const uint8_t *)NAN_TEXT, out->slen = 3;
                } else if (isinf(out->d)) {
                    out->type = V_STR;
                    out->s = (const uint8_t *)(out->d > 0 ? INF_TEXT : NINF_TEXT);
                    out->slen = out->d > 0 ? 8 : 9;
                } else {
                    out->type = V_DBL;
                }
                break;
            case 5: {
                EXPECT(r, field, wire, 2);
                if (!allow_array) return FALLBACK;
                TRY(rd_len(r, &sub));
                /* Every element must be a scalar; checked now so writing cannot fail later. */
                Rd it = sub;
                while (it.p < it.end) {
                    uint32_t f2;
                    int w2;
                    TRY(rd_tag(&it, &f2, &w2));
                    if (f2 != 1) {
                        TRY(rd_skip(&it, f2, w2));
                        continue;
                    }
                    EXPECT(&it, f2, w2, 2);
                    Rd el;
                    TRY(rd_len(&it, &el));
                    Attr tmp;
                    TRY(parse_scalar(&el, &tmp, 0));
                }
                out->type = V_ARR;
                out->s = sub.p;
                out->slen = (uint32_t)(sub.end - sub.p);
                break;
            }
            case 6:
            case 7:
            case 8: /* kvlist, bytes, a string-table index: the reference's */
                EXPECT(r, field, wire, field == 8 ? 0 : 2);
                return FALLBACK;
            default:
                TRY(rd_skip(r, field, wire));
                continue;
        }
        if (seen++) return FALLBACK; /* two members of the oneof: let the reference decide */
    }
    return OK;
}

static int attrs_add(Attrs *as, Rd *kv) {
    if (as->n >= MAX_ATTRS) return FALLBACK;
    if (as->n == as->cap) {
        size_t cap = as->cap ? as->cap * 2 : 32;
        Attr *a = realloc(as->a, cap * sizeof(Attr));
        if (!a) return NOMEM;
        as->a = a;
        as->cap = cap;
    }
    Attr *at = &as->a[as->n];
    memset(at, 0, sizeof(*at));
    at->key = (const uint8_t *)"";
    int value_seen = 0;
    while (kv->p < kv->end) {
        uint32_t field;
        int wire;
        TRY(rd_tag(kv, &field, &wire));
        Rd sub;
        if (field == 1) {
            EXPECT(kv, field, wire, 2);
            TRY(rd_string(kv, &sub));
            at->key = sub.p;
            at->klen = (uint32_t)(sub.end - sub.p);
        } else if (field == 2) {
            EXPECT(kv, field, wire, 2);
            if (value_seen++) return FALLBACK; /* values merge: the reference's */
            TRY(rd_len(kv, &sub));
            TRY(parse_scalar(&sub, at, 1));
        } else {
            TRY(rd_skip(kv, field, wire));
        }
    }
    /* A duplicate key: the reference keeps the first position with the last value. */
    for (size_t j = 0; j < as->n; j++)
        if (as->a[j].klen == at->klen && memcmp(as->a[j].key, at->key, at->klen) == 0) return FALLBACK;
    int k = known_key(at->key, at->klen);
    if (k >= 0) as->slot[k] = (int)as->n;
    as->n++;
    return OK;
}

static void attrs_reset(Attrs *as) {
    as->n = 0;
    for (int k = 0; k < N_KEYS; k++) as->slot[k] = -1;
}

static inline const Attr *get(const Attrs *as, int k) {
    int i = as->slot[k];
    return i < 0 ? NULL : &as->a[i];
}

/* ---------------------------------------------------------------- JSON */

static const char HEX[] = "0123456789abcdef";

static int json_str(Buf *b, const uint8_t *s, size_t n) {
    MEM(buf_reserve(b, n + 2));
    b->p[b->len++] = '"';
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        MEM(buf_put(b, s + start, i - start));
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t len = 2;
        switch (c) {
            case '"': esc[1] = '"'; break;
            case '\\': esc[1] = '\\'; break;
            case '\n': esc[1] = 'n'; break;
            case '\r': esc[1] = 'r'; break;
            case '\t': esc[1] = 't'; break;
            case '\b': esc[1] = 'b'; break;
            case '\f': esc[1] = 'f'; break;
            default:
                esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = HEX[c >> 4], esc[5] = HEX[c & 15];
                len = 6;
        }
        MEM(buf_put(b, esc, len));
        start = i + 1;
    }
    MEM(buf_put(b, s + start, n - start));
    MEM(buf_ch(b, '"'));
    return OK;
}

static int json_u64(Buf *b, uint64_t v, int negative) {
    char tmp[24];
    int i = 24;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (negative) tmp[--i] = '-';
    MEM(buf_put(b, tmp + i, (size_t)(24 - i)));
    return OK;
}

static int json_i64(Buf *b, int64_t v) {
    return v < 0 ? json_u64(b, (uint64_t)0 - (uint64_t)v, 1) : json_u64(b, (uint64_t)v, 0);
}

static inline int number_char(char c) { return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == 'e'; }

/* The shortest of 15, 16 or 17 significant digits that reads back as the same double (17 always
 * does), always with a '.' or an exponent. printf and strtod follow the process's LC_NUMERIC,
 * whose decimal point may be a comma or several bytes: whatever printf wrote between the digits
 * becomes '.', so the JSON is the same under any locale. */
static int json_double(Buf *b, double d) {
    char tmp[48];
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (n <= 0 || n >= (int)sizeof tmp) return FALLBACK;
        if (prec == 17 || strtod(tmp, NULL) == d) break;
    }
    char out[52];
    int m = 0, dot = 0, exp = 0;
    for (int i = 0; i < n;) {
        if (number_char(tmp[i])) {
            exp |= tmp[i] == 'e';
            out[m++] = tmp[i++];
        } else { /* the decimal point */
            out[m++] = '.';
            dot = 1;
            while (i < n && !number_char(tmp[i])) i++;
        }
    }
    if (!dot && !exp) {
        out[m++] = '.';
        out[m++] = '0';
    }
    MEM(buf_put(b, out, (size_t)m));
    return OK;
}

static int json_value(Buf *b, const Attr *a);

static int json_array(Buf *b, const uint8_t *p, size_t n) {
    Rd it = {p, p + n};
    MEM(buf_ch(b, '['));
    int first = 1;
    while (it.p < it.end) {
        uint32_t field;
        int wire;
        TRY(rd_tag(&it, &field, &wire));
        if (field != 1) {
            TRY(rd_skip(&it, field, wire));
            continue;
        }
        EXPECT(&it, field, wire, 2);
        Rd el;
        TRY(rd_len(&it, &el));
        Attr tmp;
        TRY(parse_scalar(&el, &tmp, 0));
        if (!first) MEM(buf_ch(b, ','));
        first = 0;
        TRY(json_value(b, &tmp));
    }
    MEM(buf_ch(b, ']'));
    return OK;
}

static int json_value(Buf *b, const Attr *a) {
    switch (a->type) {
        case V_STR: return json_str(b, a->s, a->slen);
        case V_BOOL: MEM(a->i ? PUTS(b, "true") : PUTS(b, "false")); return OK;
        case V_INT: return json_i64(b, a->i);
        case V_DBL: return json_double(b, a->d);
        case V_ARR: return json_array(b, a->s, a->slen);
        default: MEM(PUTS(b, "null")); return OK;
    }
}

static int json_attrs(Buf *b, const Attrs *as) {
    MEM(buf_ch(b, '{'));
    for (size_t i = 0; i < as->n; i++) {
        if (i) MEM(buf_ch(b, ','));
        TRY(json_str(b, as->a[i].key, as->a[i].klen));
        MEM(buf_ch(b, ':'));
        TRY(json_value(b, &as->a[i]));
    }
    MEM(buf_ch(b, '}'));
    return OK;
}

static int json_hex(Buf *b, const uint8_t *s, size_t n) {
    MEM(buf_reserve(b, 2 * n + 2));
    b->p[b->len++] = '"';
    for (size_t i = 0; i < n; i++) {
        b->p[b->len++] = HEX[s[i] >> 4];
        b->p[b->len++] = HEX[s[i] & 15];
    }
    b->p[b->len++] = '"';
    return OK;
}

/* ---------------------------------------------------------------- Arrow columns */

/* The span table's columns, in store.schema.SPAN_COLUMNS order. */
enum {
    C_TRACE_ID, C_SPAN_ID, C_PARENT, C_NAME, C_KIND, C_START, C_END, C_DURATION, C_STATUS,
    C_STATUS_MESSAGE, C_SERVICE, C_OPERATION, C_AGENT, C_TOOL, C_MODEL, C_PROVIDER, C_INPUT,
    C_OUTPUT, C_HANDOFF_SOURCE, C_HANDOFF_TARGET, C_HANDOFF_STATUS, C_HANDOFF_MODE, C_HOP,
    C_LOOP, C_ERROR_TYPE, C_CONVERSATION, C_TRACE_STATE, C_FLAGS, C_ATTRIBUTES, C_EVENTS, C_LINKS,
    C_RESOURCE, C_SCOPE, N_COLS
};
enum { A_STR, A_U8, A_I64, A_F64, A_I32, A_BOOL, A_U32 };
static const int COL_TYPE[N_COLS] = {
    A_STR, A_STR, A_STR, A_STR, A_U8, A_I64, A_I64, A_F64, A_U8, A_STR, A_STR, A_STR, A_STR,
    A_STR, A_STR, A_STR, A_I64, A_I64, A_STR, A_STR, A_STR, A_STR, A_I32, A_BOOL, A_STR, A_STR,
    A_STR, A_U32, A_STR, A_STR, A_STR, A_STR, A_STR,
};
static const int WIDTH[] = {0, 1, 8, 8, 4, 1, 4};

/* The trace summary's columns (store.summary.SUMMARY), set at configure: each a primitive fold of
 * one span column (SK_*, in summary's kind order) for the spans every test holds for (ST_*, in
 * summary's test order). An arg_min takes its value from the row its ``by`` column (a min) chose. */
enum { SK_MIN, SK_MAX, SK_ARG_MIN, SK_COUNT, SK_SET, N_SUM_KINDS };
enum { ST_NULL, ST_NOT_NULL, ST_EQ, ST_NON_EMPTY, N_SUM_TESTS };
#define MAX_SUMMARY 32
#define MAX_TESTS 4

typedef struct {
    int col, op;
    Str text;    /* ST_EQ on a string column */
    int64_t num; /* ST_EQ on an integer column */
} SumTest;

typedef struct {
    int kind, value, by, ntests; /* value: a column (-1 for a count); by: a summary column or -1 */
    SumTest tests[MAX_TESTS];
} SumCol;

static SumCol g_sum[MAX_SUMMARY];
static int g_nsum = 0;
static int g_sum_configured = 0;

typedef struct {
    Buf values;  /* fixed-width values, or string bytes; bools one byte each until packed */
    Buf offsets; /* int32, strings only */
    Buf valid;   /* one byte per row until packed */
    int64_t nulls;
} Col;

typedef struct {
    Col col[N_COLS];
    int64_t rows;
} Table;

static inline int col_valid(Col *c, int ok) {
    MEM(buf_ch(&c->valid, (char)ok));
    if (!ok) c->nulls++;
    return OK;
}

/* Arrow's string offsets are int32: a column refuses to grow past 2 GiB (before it allocates,
 * where it can). */
#define COL_MAX ((size_t)INT32_MAX)
static inline int col_room(const Col *c, size_t n) { return c->values.len <= COL_MAX && n <= COL_MAX - c->values.len; }

static inline int col_end_string(Col *c) {
    /* The string's bytes are already in values; record where it ends. */
    if (c->values.len > COL_MAX) return FALLBACK;
    int32_t off = (int32_t)c->values.len;
    MEM(buf_put(&c->offsets, &off, 4));
    return col_valid(c, 1);
}

static inline int col_str(Col *c, const void *s, size_t n) {
    if (!col_room(c, n)) return FALLBACK;
    MEM(buf_put(&c->values, s, n));
    return col_end_string(c);
}

static inline int col_null(Col *c, int type) {
    if (type == A_STR) {
        int32_t off = (int32_t)c->values.len;
        MEM(buf_put(&c->offsets, &off, 4));
    } else {
        static const char zero[8] = {0};
        MEM(buf_put(&c->values, zero, (size_t)WIDTH[type]));
    }
    return col_valid(c, 0);
}

static inline int col_fixed(Col *c, const void *v, int type) {
    MEM(buf_put(&c->values, v, (size_t)WIDTH[type]));
    return col_valid(c, 1);
}

static int table_init(Table *t) {
    memset(t, 0, sizeof(*t));
    for (int i = 0; i < N_COLS; i++)
        if (COL_TYPE[i] == A_STR) {
            int32_t zero = 0;
            MEM(buf_put(&t->col[i].offsets, &zero, 4));
        }
    return OK;
}

static void table_free(Table *t) {
    for (int i = 0; i < N_COLS; i++) {
        free(t->col[i].values.p);
        free(t->col[i].offsets.p);
        free(t->col[i].valid.p);
    }
}

/* ---------------------------------------------------------------- promotion (normalize.promote) */

typedef struct {
    const uint8_t *s;
    size_t n;
    int set;
} Text;

static inline Text text_of(const Attr *a) {
    Text t = {NULL, 0, 0};
    if (a && a->type == V_STR && a->slen) t.s = a->s, t.n = a->slen, t.set = 1;
    return t;
}

/* _str: the first non-empty string among the keys. */
static Text first_str(const Attrs *as, const int *keys, int n) {
    for (int i = 0; i < n; i++) {
        Text t = text_of(get(as, keys[i]));
        if (t.set) return t;
    }
    return (Text){NULL, 0, 0};
}

/* _int: the first int (or integral float under 2**63) among the keys. */
static int first_int(const Attrs *as, const int *keys, int n, int64_t *out) {
    for (int i = 0; i < n; i++) {
        const Attr *a = get(as, keys[i]);
        if (!a) continue;
        if (a->type == V_INT) {
            *out = a->i;
            return 1;
        }
        if (a->type == V_DBL && a->d == floor(a->d) && fabs(a->d) < 9223372036854775808.0) {
            *out = (int64_t)a->d;
            return 1;
        }
    }
    return 0;
}

static inline int is_null(const Attr *a) { return a == NULL || a->type == V_NULL; }

/* _operation: an index into g_ops, -1 for none, or FALLBACK through *fb; *oi when it came from
 * openinference.span.kind. */
static int operation(const Attrs *as, Text *own, int *fb, int *oi) {
    *fb = 0;
    *oi = 0;
    own->set = 0;
    Text t = text_of(get(as, K_OPERATION));
    if (t.set) {
        for (int i = 0; i < N_OPS; i++)
            if (str_eq(t.s, t.n, &g_ops[i])) return i;
        *own = t; /* an operation name we have no object for: returned as its own text */
        return -2;
    }
    const Attr *a = get(as, K_TL_KIND);
    if (a && a->type == V_STR) {
        if (str_eq(a->s, a->slen, &g_kinds[TLK_WORKFLOW])) return OP_WORKFLOW;
        if (str_eq(a->s, a->slen, &g_kinds[TLK_AGENT])) return OP_AGENT;
        if (str_eq(a->s, a->slen, &g_kinds[TLK_TOOL])) return OP_TOOL;
    }
    a = get(as, K_TL_REQUEST_TYPE);
    if (a && a->type == V_STR) {
        if (str_eq(a->s, a->slen, &g_kinds[TLR_CHAT])) return OP_CHAT;
        if (str_eq(a->s, a->slen, &g_kinds[TLR_COMPLETION])) return OP_TEXT_COMPLETION;
        if (str_eq(a->s, a->slen, &g_kinds[TLR_EMBEDDING])) return OP_EMBEDDINGS;
    }
    a = get(as, K_OI_KIND);
    if (a && a->type == V_STR) {
        char up[16];
        if (a->slen < sizeof up) {
            for (uint32_t i = 0; i < a->slen; i++) {
                uint8_t c = a->s[i];
                if (c >= 0x80) { /* str.upper() of non-ASCII text: the reference decides */
                    *fb = 1;
                    return -1;
                }
                up[i] = (char)(c >= 'a' && c <= 'z' ? c - 32 : c);
            }
            const uint8_t *u = (const uint8_t *)up;
            *oi = 1;
            if (str_eq(u, a->slen, &g_kinds[OIK_LLM])) return OP_CHAT;
            if (str_eq(u, a->slen, &g_kinds[OIK_AGENT])) return OP_AGENT;
            if (str_eq(u, a->slen, &g_kinds[OIK_TOOL])) return OP_TOOL;
            if (str_eq(u, a->slen, &g_kinds[OIK_EMBEDDING])) return OP_EMBEDDINGS;
            *oi = 0;
        } else {
            for (uint32_t i = 0; i < a->slen; i++)
                if (a->s[i] >= 0x80) {
                    *fb = 1;
                    return -1;
                }
        }
    }
    if (!is_null(get(as, K_HANDOFF_TO)) || !is_null(get(as, K_HANDOFF_FROM)) ||
        !is_null(get(as, K_REACH_HANDOFF_TARGET)))
        return OP_HANDOFF;
    if (!is_null(get(as, K_SYSTEM)) || !is_null(get(as, K_PROVIDER_NAME))) return OP_CHAT;
    return -1;
}

static const int KS_AGENT_SELF[] = {K_AGENT_NAME, K_OI_AGENT_NAME};
static const int KS_AGENT_HANDOFF[] = {K_REACH_HANDOFF_SOURCE, K_AGENT_NAME, K_HANDOFF_FROM};
static const int KS_AGENT_ENCLOSING[] = {K_REACH_AGENT_NAME, K_AGENT_NAME, K_OI_AGENT_NAME};
static const int KS_TARGET[] = {K_REACH_HANDOFF_TARGET, K_TRANSFER_TARGET, K_HANDOFF_TO};
static const int KS_MODE[] = {K_REACH_HANDOFF_MODE, K_TRANSFER_MODE};
static const int KS_TOOL[] = {K_TOOL_NAME, K_OI_TOOL_NAME};
static const int KS_MODEL[] = {K_REQUEST_MODEL, K_RESPONSE_MODEL, K_OI_MODEL};
static const int KS_PROVIDER[] = {K_PROVIDER_NAME, K_SYSTEM, K_OI_PROVIDER, K_OI_SYSTEM};
static const int KS_INPUT[] = {K_INPUT, K_PROMPT, K_OI_PROMPT};
static const int KS_OUTPUT[] = {K_OUTPUT, K_COMPLETION, K_OI_COMPLETION};
static const int KS_CONVERSATION[] = {K_CONVERSATION, K_OI_SESSION};
static const int KS_ENTITY[] = {K_TL_ENTITY};
static const int KS_HANDOFF_STATUS[] = {K_HANDOFF_STATUS};
static const int KS_ERROR_TYPE[] = {K_ERROR_TYPE};
static const int KS_HOP[] = {K_HOP};
#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int put_text(Col *c, Text t) { return t.set ? col_str(c, t.s, t.n) : col_null(c, A_STR); }

/* ---------------------------------------------------------------- llm.invocation_parameters
 *
 * normalize.invocation_model: json.loads of the text, then the first non-empty string among the
 * object's "model" and "model_name" (the last of duplicate keys). Read here only as far as the
 * answer is sure: text not starting with '{' is not an object either way (None); an object is read
 * by JSON's grammar as Python's json module reads it (NaN and Infinity included, control
 * characters in strings refused) and anything it does not read — an escaped key at the top, an
 * escaped model name, a number over MAX_JSON_NUMBER characters (Python's int digit limit), nesting
 * past MAX_JSON_DEPTH, any syntax error — leaves the request to the reference (FALLBACK). */

#define MAX_JSON_DEPTH 32
#define MAX_JSON_NUMBER 100

typedef struct {
    const uint8_t *p, *end;
    Text last[2]; /* the last value of "model" / "model_name" at the top: set when a non-empty string */
} Json;

static inline void j_ws(Json *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static inline int j_hex(uint8_t c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }

/* A string at the opening quote: *raw its bytes between the quotes, *plain when it has no escape. */
static int j_string(Json *j, Text *raw, int *plain) {
    const uint8_t *start = ++j->p;
    *plain = 1;
    while (j->p < j->end) {
        uint8_t c = *j->p;
        if (c == '"') {
            *raw = (Text){start, (size_t)(j->p - start), 1};
            j->p++;
            return OK;
        }
        if (c < 0x20) return FALLBACK;
        if (c != '\\') {
            j->p++;
            continue;
        }
        *plain = 0;
        if (j->end - j->p < 2) return FALLBACK;
        uint8_t e = j->p[1];
        if (e == 'u') {
            if (j->end - j->p < 6) return FALLBACK;
            for (int i = 2; i < 6; i++)
                if (!j_hex(j->p[i])) return FALLBACK;
            j->p += 6;
        } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
            j->p += 2;
        } else {
            return FALLBACK;
        }
    }
    return FALLBACK; /* unterminated */
}

static inline int j_digits(Json *j) {
    const uint8_t *s = j->p;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    return j->p > s;
}

static int j_number(Json *j) {
    const uint8_t *s = j->p;
    if (*j->p == '-') j->p++;
    if (j->p < j->end && *j->p == '0')
        j->p++;
    else if (j->p >= j->end || *j->p < '1' || *j->p > '9' || !j_digits(j))
        return FALLBACK;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (!j_digits(j)) return FALLBACK;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
        if (!j_digits(j)) return FALLBACK;
    }
    return j->p - s > MAX_JSON_NUMBER ? FALLBACK : OK;
}

static int j_literal(Json *j, const char *lit) {
    size_t n = strlen(lit);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0) return FALLBACK;
    j->p += n;
    return OK;
}

static int j_object(Json *j, int depth, int top);
static int j_array(Json *j, int depth);

/* One value; *str set to the string's bytes (and *plain) when it is a string. */
static int j_value(Json *j, int depth, Text *str, int *plain) {
    str->set = 0;
    if (j->p >= j->end) return FALLBACK;
    switch (*j->p) {
        case '"': return j_string(j, str, plain);
        case '{': return j_object(j, depth + 1, 0);
        case '[': return j_array(j, depth + 1);
        case 't': return j_literal(j, "true");
        case 'f': return j_literal(j, "false");
        case 'n': return j_literal(j, "null");
        case 'N': return j_literal(j, "NaN");
        case 'I': return j_literal(j, "Infinity");
        case '-':
            if (j_literal(j, "-Infinity") == OK) return OK;
            return j_number(j);
        default: return *j->p >= '0' && *j->p <= '9' ? j_number(j) : FALLBACK;
    }
}

/* After a member or element: ',' (then more) or the closing bracket. 1: more, 0: closed. */
static int j_next(Json *j, uint8_t close, int *more) {
    j_ws(j);
    if (j->p >= j->end) return FALLBACK;
    if (*j->p == ',') {
        j->p++;
        j_ws(j);
        *more = 1;
        return OK;
    }
    if (*j->p != close) return FALLBACK;
    j->p++;
    *more = 0;
    return OK;
}

static int j_object(Json *j, int depth, int top) {
    if (depth > MAX_JSON_DEPTH) return FALLBACK;
    j->p++;
    j_ws(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
        return OK;
    }
    for (int more = 1; more;) {
        if (j->p >= j->end || *j->p != '"') return FALLBACK;
        Text key, value;
        int plain;
        TRY(j_string(j, &key, &plain));
        int which = -1;
        if (top) {
            if (!plain) return FALLBACK; /* an escaped key may read as a model key: Python's to say */
            if (str_eq(key.s, key.n, &g_texts[T_MODEL_KEY])) which = 0;
            if (str_eq(key.s, key.n, &g_texts[T_MODEL_NAME_KEY])) which = 1;
        }
        j_ws(j);
        if (j->p >= j->end || *j->p != ':') return FALLBACK;
        j->p++;
        j_ws(j);
        TRY(j_value(j, depth, &value, &plain));
        if (which >= 0) {
            if (value.set && !plain) return FALLBACK; /* an escaped model name */
            j->last[which] = value.set && value.n ? value : (Text){NULL, 0, 0};
        }
        TRY(j_next(j, '}', &more));
    }
    return OK;
}

static int j_array(Json *j, int depth) {
    if (depth > MAX_JSON_DEPTH) return FALLBACK;
    j->p++;
    j_ws(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        return OK;
    }
    for (int more = 1; more;) {
        Text value;
        int plain;
        TRY(j_value(j, depth, &value, &plain));
        TRY(j_next(j, ']', &more));
    }
    return OK;
}

/* The model in llm.invocation_parameters (*model unset when none), or FALLBACK when unsure. */
static int invocation_model(const Attr *a, Text *model) {
    *model = (Text){NULL, 0, 0};
    if (!a || a->type != V_STR) return OK;
    Json j = {a->s, a->s + a->slen, {{NULL, 0, 0}, {NULL, 0, 0}}};
    j_ws(&j);
    if (j.p >= j.end || *j.p != '{') return OK; /* not JSON, or not an object: None either way */
    TRY(j_object(&j, 1, 1));
    j_ws(&j);
    if (j.p != j.end) return OK; /* extra data after the object: json.loads raises, so None */
    *model = j.last[0].set ? j.last[0] : j.last[1];
    return OK;
}

/* _named: an agent name OpenInference recorded as a value, unless masked. */
static Text named(const Attr *a) {
    Text t = text_of(a);
    if (t.set && str_eq(t.s, t.n, &g_texts[T_REDACTED])) t.set = 0;
    return t;
}

static int is_handoff_name(Text name) {
    const Str *to = &g_texts[T_HANDOFF_TO];
    return str_eq(name.s, name.n, &g_texts[T_HANDOFF_SPAN]) ||
           (name.n >= to->n && memcmp(name.s, to->s, to->n) == 0);
}

/* _handoff_target: the agent after "handoff to " (unset for a bare "handoff" or an empty one). */
static Text handoff_target(Text name) {
    const Str *to = &g_texts[T_HANDOFF_TO];
    if (name.n > to->n && memcmp(name.s, to->s, to->n) == 0) return (Text){name.s + to->n, name.n - to->n, 1};
    return (Text){NULL, 0, 0};
}

/* op in sc.LLM_OPERATIONS, by its text. */
static int is_llm(int op, Text op_text) {
    if (op < 0 && !(op == -2 && op_text.set)) return 0;
    const uint8_t *s = op >= 0 ? (const uint8_t *)g_ops[op].s : op_text.s;
    size_t n = op >= 0 ? g_ops[op].n : op_text.n;
    for (int i = 0; i < g_nllm; i++)
        if (str_eq(s, n, &g_llm[i])) return 1;
    return 0;
}

/* Writes the promoted columns; error_text is the exception type of an error span (or unset). */
static int promote(Table *t, const Attrs *as, int any_known, int loop_event, Text error_text, Text name) {
    Col *c = t->col;
    Text op_text;
    if (!(loop_event || (error_text.set && error_text.n)) && !any_known) {
        for (int i = C_OPERATION; i <= C_CONVERSATION; i++) TRY(col_null(&c[i], COL_TYPE[i]));
        return OK;
    }
    int fb, oi;
    int op = operation(as, &op_text, &fb, &oi);
    if (fb) return FALLBACK;
    Text agent, target = {NULL, 0, 0};
    Text tool = first_str(as, KS_TOOL, N(KS_TOOL));
    int handoff;
    if (oi && op == OP_TOOL && !tool.set && is_handoff_name(name)) {
        /* The Agents SDK's handoff, which OpenInference records as a TOOL span with no tool name. */
        op = OP_HANDOFF;
        handoff = 1;
        agent = named(get(as, K_OI_INPUT));
        target = handoff_target(name);
        if (!target.set) target = named(get(as, K_OI_OUTPUT));
    } else {
        handoff = op == OP_HANDOFF;
        if (op == OP_AGENT) {
            agent = first_str(as, KS_AGENT_SELF, N(KS_AGENT_SELF));
            if (!agent.set) agent = first_str(as, KS_ENTITY, 1);
            if (!agent.set && oi && name.n) agent = (Text){name.s, name.n, 1};
        } else if (handoff) {
            agent = first_str(as, KS_AGENT_HANDOFF, N(KS_AGENT_HANDOFF));
            target = first_str(as, KS_TARGET, N(KS_TARGET));
        } else if (op == OP_WORKFLOW) {
            agent = (Text){NULL, 0, 0}; /* a workflow is no agent, whatever name it carries */
        } else {
            agent = first_str(as, KS_AGENT_ENCLOSING, N(KS_AGENT_ENCLOSING));
        }
        if (!tool.set && op == OP_TOOL) tool = first_str(as, KS_ENTITY, 1);
    }
    Text model = first_str(as, KS_MODEL, N(KS_MODEL));
    if (!model.set && is_llm(op, op_text)) TRY(invocation_model(get(as, K_OI_INVOCATION), &model));

    if (op >= 0)
        TRY(col_str(&c[C_OPERATION], g_ops[op].s, g_ops[op].n));
    else
        TRY(put_text(&c[C_OPERATION], op == -2 ? op_text : (Text){NULL, 0, 0}));
    TRY(put_text(&c[C_AGENT], agent));
    TRY(put_text(&c[C_TOOL], tool));
    TRY(put_text(&c[C_MODEL], model));
    TRY(put_text(&c[C_PROVIDER], first_str(as, KS_PROVIDER, N(KS_PROVIDER))));
    int64_t v;
    if (first_int(as, KS_INPUT, N(KS_INPUT), &v))
        TRY(col_fixed(&c[C_INPUT], &v, A_I64));
    else
        TRY(col_null(&c[C_INPUT], A_I64));
    if (first_int(as, KS_OUTPUT, N(KS_OUTPUT), &v))
        TRY(col_fixed(&c[C_OUTPUT], &v, A_I64));
    else
        TRY(col_null(&c[C_OUTPUT], A_I64));
    Text none = {NULL, 0, 0};
    TRY(put_text(&c[C_HANDOFF_SOURCE], handoff ? agent : none));
    TRY(put_text(&c[C_HANDOFF_TARGET], target));
    TRY(put_text(&c[C_HANDOFF_STATUS], handoff ? first_str(as, KS_HANDOFF_STATUS, 1) : none));
    TRY(put_text(&c[C_HANDOFF_MODE], handoff ? first_str(as, KS_MODE, N(KS_MODE)) : none));
    if (first_int(as, KS_HOP, N(KS_HOP), &v) && v >= INT32_MIN && v <= INT32_MAX) {
        int32_t h = (int32_t)v;
        TRY(col_fixed(&c[C_HOP], &h, A_I32));
    } else {
        TRY(col_null(&c[C_HOP], A_I32));
    }
    const Attr *loop = get(as, K_LOOP);
    if (loop_event) {
        uint8_t one = 1;
        TRY(col_fixed(&c[C_LOOP], &one, A_BOOL));
    } else if (loop && loop->type == V_BOOL) {
        uint8_t b = (uint8_t)loop->i;
        TRY(col_fixed(&c[C_LOOP], &b, A_BOOL));
    } else {
        TRY(col_null(&c[C_LOOP], A_BOOL));
    }
    Text et = first_str(as, KS_ERROR_TYPE, 1);
    TRY(put_text(&c[C_ERROR_TYPE], et.set ? et : error_text));
    TRY(put_text(&c[C_CONVERSATION], first_str(as, KS_CONVERSATION, N(KS_CONVERSATION))));
    return OK;
}

/* ---------------------------------------------------------------- folds (summary.fold, BatchStats.add)
 *
 * Rows are grouped by the bytes of their key cells; a group keeps one representative row, from
 * which its Python key is built at the end, and its sums. Only groups become Python objects. */

#define MAX_BUCKETS 64
static double g_buckets[MAX_BUCKETS];
static int g_nbuckets = 0;

typedef struct {
    uint32_t hash, koff, klen;
    int64_t row;
    int64_t n[5];
    double sum;
} Group;

typedef struct {
    Group *g;
    size_t n, cap;
    int32_t *index;
    size_t slots;
    Buf keys;
} Groups;

static void groups_free(Groups *gs) {
    free(gs->g);
    free(gs->index);
    free(gs->keys.p);
}

static int groups_rehash(Groups *gs) {
    size_t slots = gs->slots ? gs->slots * 2 : 64;
    int32_t *index = malloc(slots * sizeof(int32_t));
    if (!index) return NOMEM;
    memset(index, 0xff, slots * sizeof(int32_t));
    for (size_t i = 0; i < gs->n; i++) {
        size_t h = gs->g[i].hash & (slots - 1);
        while (index[h] >= 0) h = (h + 1) & (slots - 1);
        index[h] = (int32_t)i;
    }
    free(gs->index);
    gs->index = index;
    gs->slots = slots;
    return OK;
}

/* The group of key bytes ``key``; a new one (row ``row``, zero sums) when there is none. */
static int groups_get(Groups *gs, const Buf *key, int64_t row, Group **out) {
    if ((gs->n + 1) * 2 > gs->slots) TRY(groups_rehash(gs));
    uint32_t hash = fnv((const uint8_t *)key->p, key->len);
    size_t h = hash & (gs->slots - 1);
    for (;;) {
        int32_t i = gs->index[h];
        if (i < 0) break;
        Group *g = &gs->g[i];
        if (g->hash == hash && g->klen == key->len && memcmp(gs->keys.p + g->koff, key->p, key->len) == 0) {
            *out = g;
            return OK;
        }
        h = (h + 1) & (gs->slots - 1);
    }
    if (gs->n == gs->cap) {
        size_t cap = gs->cap ? gs->cap * 2 : 32;
        Group *g = realloc(gs->g, cap * sizeof(Group));
        if (!g) return NOMEM;
        gs->g = g;
        gs->cap = cap;
    }
    Group *g = &gs->g[gs->n];
    memset(g, 0, sizeof *g);
    g->hash = hash;
    g->koff = (uint32_t)gs->keys.len;
    g->klen = (uint32_t)key->len;
    g->row = row;
    MEM(buf_put(&gs->keys, key->p, key->len));
    gs->index[h] = (int32_t)gs->n++;
    *out = g;
    return OK;
}

static inline int valid_at(const Col *c, int64_t row) { return c->valid.p[row] != 0; }

/* A string cell (the values of a column of nulls and empty strings may have no storage). */
static inline const char *str_at(const Col *c, int64_t row, int32_t *len) {
    const int32_t *off = (const int32_t *)c->offsets.p;
    *len = off[row + 1] - off[row];
    return c->values.p ? c->values.p + off[row] : "";
}

static inline int str_is(const Col *c, int64_t row, const Str *t) {
    if (!valid_at(c, row)) return 0;
    int32_t n;
    const char *s = str_at(c, row, &n);
    return (size_t)n == t->n && memcmp(s, t->s, (size_t)n) == 0;
}

/* Appends a cell's key bytes: validity, then the length and bytes of a string or the value. */
static int key_cell(Buf *k, const Col *c, int type, int64_t row) {
    char v = (char)valid_at(c, row);
    MEM(buf_ch(k, v));
    if (!v) return OK;
    if (type == A_STR) {
        int32_t n;
        const char *s = str_at(c, row, &n);
        MEM(buf_put(k, &n, 4));
        MEM(buf_put(k, s, (size_t)n));
    } else {
        MEM(buf_put(k, c->values.p + row * WIDTH[type], (size_t)WIDTH[type]));
    }
    return OK;
}

typedef struct {
    Groups calls, tokens, handoffs, traces, parts, members;
    Buf key;
    Buf beats; /* int64 rows of heartbeat spans */
    Buf slots; /* g_nsum int64 per part: a count, or the row a min/max chose (-1: none yet) */
    int no_parts; /* the store computes the summary itself: parts are not folded */
} Folds;

static void folds_free(Folds *f) {
    groups_free(&f->calls);
    groups_free(&f->tokens);
    groups_free(&f->handoffs);
    groups_free(&f->traces);
    groups_free(&f->parts);
    groups_free(&f->members);
    free(f->key.p);
    free(f->beats.p);
    free(f->slots.p);
}

/* The value at ``row`` of summary column ``slot`` (a set) joins the set of trace part ``part``: a
 * member group (n[0] the part, n[1] the slot) keyed by all three. */
static int add_member(Folds *f, const Table *t, int64_t part, int64_t slot, int64_t row) {
    Buf *k = &f->key;
    Group *m;
    int col = g_sum[slot].value;
    k->len = 0;
    MEM(buf_put(k, &part, 8));
    MEM(buf_put(k, &slot, 8));
    TRY(key_cell(k, &t->col[col], COL_TYPE[col], row));
    TRY(groups_get(&f->members, k, row, &m));
    m->n[0] = part, m->n[1] = slot;
    return OK;
}

/* An integer cell (configure allows min, max and equality tests on integer columns only). */
static inline int64_t int_at(const Col *c, int type, int64_t row) {
    switch (type) {
        case A_U8:
        case A_BOOL: return ((const uint8_t *)c->values.p)[row];
        case A_I32: return ((const int32_t *)c->values.p)[row];
        case A_U32: return ((const uint32_t *)c->values.p)[row];
        default: return ((const int64_t *)c->values.p)[row];
    }
}

/* Whether span ``row`` counts for summary column ``s``: every test holds (a NULL cell fails all
 * but ST_NULL, as NULL is false in SQL). */
static int sum_holds(const SumCol *s, const Table *t, int64_t row) {
    for (int i = 0; i < s->ntests; i++) {
        const SumTest *x = &s->tests[i];
        const Col *c = &t->col[x->col];
        int valid = valid_at(c, row);
        if (x->op == ST_NULL) {
            if (valid) return 0;
        } else if (!valid) {
            return 0;
        } else if (x->op == ST_NON_EMPTY) {
            int32_t n;
            str_at(c, row, &n);
            if (n == 0) return 0;
        } else if (x->op == ST_EQ) {
            if (COL_TYPE[x->col] == A_STR ? !str_is(c, row, &x->text) : int_at(c, COL_TYPE[x->col], row) != x->num)
                return 0;
        }
    }
    return 1;
}

/* Fold span ``row`` into its trace's part, column by column of the summary. */
static int fold_part(Folds *f, const Table *t, int64_t row) {
    Buf *k = &f->key;
    k->len = 0;
    TRY(key_cell(k, &t->col[C_TRACE_ID], A_STR, row));
    Group *p;
    size_t before = f->parts.n;
    TRY(groups_get(&f->parts, k, row, &p));
    int64_t part = p - f->parts.g;
    if (f->parts.n > before) {
        for (int s = 0; s < g_nsum; s++) {
            int64_t none = g_sum[s].kind == SK_COUNT ? 0 : -1;
            MEM(buf_put(&f->slots, &none, 8));
        }
    }
    for (int s = 0; s < g_nsum; s++) {
        const SumCol *sc = &g_sum[s];
        if (!sum_holds(sc, t, row)) continue;
        int64_t *v = (int64_t *)f->slots.p + part * g_nsum + s;
        if (sc->kind == SK_COUNT) {
            (*v)++;
        } else if (sc->kind == SK_SET) {
            if (valid_at(&t->col[sc->value], row)) TRY(add_member(f, t, part, s, row));
        } else if (sc->kind == SK_MIN || sc->kind == SK_MAX) {
            const Col *c = &t->col[sc->value];
            if (!valid_at(c, row)) continue;
            if (*v < 0) {
                *v = row;
                continue;
            }
            int type = COL_TYPE[sc->value];
            int64_t a = int_at(c, type, row), b = int_at(c, type, *v);
            if (sc->kind == SK_MIN ? a < b : a > b) *v = row; /* ties: the first row folded */
        }
    }
    return OK;
}

static int fold(Folds *f, const Table *t, int64_t row, int heartbeat) {
    const Col *c = t->col;
    Buf *k = &f->key;
    const Col *op = &c[C_OPERATION];
    int has_op = valid_at(op, row);
    int handoff = has_op && str_is(op, row, &g_ops[OP_HANDOFF]);
    int agent_span = has_op && str_is(op, row, &g_ops[OP_AGENT]);
    int root = !valid_at(&c[C_PARENT], row);
    Group *g;
    if (handoff) {
        k->len = 0;
        TRY(key_cell(k, &c[C_HANDOFF_SOURCE], A_STR, row));
        TRY(key_cell(k, &c[C_HANDOFF_TARGET], A_STR, row));
        TRY(key_cell(k, &c[C_HANDOFF_STATUS], A_STR, row));
        TRY(key_cell(k, &c[C_HANDOFF_MODE], A_STR, row));
        TRY(key_cell(k, &c[C_LOOP], A_BOOL, row));
        TRY(groups_get(&f->handoffs, k, row, &g));
        g->n[0]++;
    } else if (has_op) {
        double seconds = ((const double *)c[C_DURATION].values.p)[row] / 1000.0;
        int64_t bucket = 0;
        while (bucket < g_nbuckets && g_buckets[bucket] < seconds) bucket++; /* bisect_left */
        int64_t error = ((const uint8_t *)c[C_STATUS].values.p)[row] == 2;
        k->len = 0;
        TRY(key_cell(k, &c[C_AGENT], A_STR, row));
        TRY(key_cell(k, op, A_STR, row));
        MEM(buf_put(k, &error, 8));
        MEM(buf_put(k, &bucket, 8));
        TRY(groups_get(&f->calls, k, row, &g));
        g->n[0]++;
        g->n[1] = bucket;
        g->sum += seconds;
        int llm = 0;
        for (int i = 0; i < g_nllm && !llm; i++) llm = str_is(op, row, &g_llm[i]);
        if (llm) {
            k->len = 0;
            TRY(key_cell(k, &c[C_AGENT], A_STR, row));
            TRY(key_cell(k, &c[C_MODEL], A_STR, row));
            TRY(groups_get(&f->tokens, k, row, &g));
            if (valid_at(&c[C_INPUT], row)) g->n[0] = add_sat(g->n[0], ((const int64_t *)c[C_INPUT].values.p)[row]);
            if (valid_at(&c[C_OUTPUT], row)) g->n[1] = add_sat(g->n[1], ((const int64_t *)c[C_OUTPUT].values.p)[row]);
        }
    }
    if (handoff || agent_span || root) {
        k->len = 0;
        TRY(key_cell(k, &c[C_TRACE_ID], A_STR, row));
        TRY(groups_get(&f->traces, k, row, &g));
        if (handoff) g->n[0]++;
        else if (agent_span) g->n[1]++;
        if (root) g->n[2] = 1;
    }
    if (heartbeat) MEM(buf_put(&f->beats, &row, 8));
    return f->no_parts ? OK : fold_part(f, t, row);
}

/* The value of row ``row`` of a column as a Python object (None when null). */
static PyObject *cell(const Col *c, int type, int64_t row) {
    if (!valid_at(c, row)) Py_RETURN_NONE;
    switch (type) {
        case A_STR: {
            int32_t n;
            const char *s = str_at(c, row, &n);
            return PyUnicode_DecodeUTF8(s, n, NULL);
        }
        case A_U8: return PyLong_FromLong(((const uint8_t *)c->values.p)[row]);
        case A_I64: return PyLong_FromLongLong(((const int64_t *)c->values.p)[row]);
        case A_F64: return PyFloat_FromDouble(((const double *)c->values.p)[row]);
        case A_I32: return PyLong_FromLong(((const int32_t *)c->values.p)[row]);
        case A_BOOL: return PyBool_FromLong(((const uint8_t *)c->values.p)[row]);
        default: return PyLong_FromUnsignedLong(((const uint32_t *)c->values.p)[row]);
    }
}

#define CELL(which, row) cell(&t->col[which], COL_TYPE[which], (row))

/* dict[key] = value, consuming both references; -1 with an exception set on failure. */
static int set_item(PyObject *dict, PyObject *key, PyObject *value) {
    int rc = (key && value) ? PyDict_SetItem(dict, key, value) : -1;
    Py_XDECREF(key);
    Py_XDECREF(value);
    return rc;
}

/* (calls, tokens, handoffs, traces, beats, parts) as BatchStats' fields and rows' parts dict. */
static PyObject *folds_to_python(const Folds *f, const Table *t) {
    PyObject *calls = PyDict_New(), *tokens = PyDict_New(), *handoffs = PyDict_New();
    PyObject *traces = PyDict_New(), *beats = PyList_New(0), *parts = PyDict_New();
    PyObject *out = NULL, *lists = NULL;
    if (!calls || !tokens || !handoffs || !traces || !beats || !parts) goto done;
    for (size_t i = 0; i < f->calls.n; i++) {
        const Group *g = &f->calls.g[i];
        PyObject *key = Py_BuildValue("(NNNL)", CELL(C_AGENT, g->row), CELL(C_OPERATION, g->row),
                                      PyBool_FromLong(((const uint8_t *)t->col[C_STATUS].values.p)[g->row] == 2),
                                      (long long)g->n[1]);
        if (set_item(calls, key, Py_BuildValue("[Ld]", (long long)g->n[0], g->sum))) goto done;
    }
    for (size_t i = 0; i < f->tokens.n; i++) {
        const Group *g = &f->tokens.g[i];
        PyObject *key = Py_BuildValue("(NN)", CELL(C_AGENT, g->row), CELL(C_MODEL, g->row));
        if (set_item(tokens, key, Py_BuildValue("[LL]", (long long)g->n[0], (long long)g->n[1]))) goto done;
    }
    for (size_t i = 0; i < f->handoffs.n; i++) {
        const Group *g = &f->handoffs.g[i];
        PyObject *key = Py_BuildValue("(NNNNN)", CELL(C_HANDOFF_SOURCE, g->row), CELL(C_HANDOFF_TARGET, g->row),
                                      CELL(C_HANDOFF_STATUS, g->row), CELL(C_HANDOFF_MODE, g->row),
                                      CELL(C_LOOP, g->row));
        if (set_item(handoffs, key, PyLong_FromLongLong(g->n[0]))) goto done;
    }
    for (size_t i = 0; i < f->traces.n; i++) {
        const Group *g = &f->traces.g[i];
        PyObject *value = Py_BuildValue("[LLL]", (long long)g->n[0], (long long)g->n[1], (long long)g->n[2]);
        if (set_item(traces, CELL(C_TRACE_ID, g->row), value)) goto done;
    }
    for (size_t i = 0; i < f->beats.len / 8; i++) {
        int64_t row = ((const int64_t *)f->beats.p)[i];
        PyObject *beat = Py_BuildValue("(NN)", CELL(C_ATTRIBUTES, row), CELL(C_END, row));
        if (!beat || PyList_Append(beats, beat)) {
            Py_XDECREF(beat);
            goto done;
        }
        Py_DECREF(beat);
    }
    /* Parts: trace id -> [the summary's values in its order], as summary.fold builds them (sets
     * as lists). */
    lists = PyList_New((Py_ssize_t)f->parts.n);
    if (!lists) goto done;
    for (size_t i = 0; i < f->parts.n; i++) {
        const int64_t *v = (const int64_t *)f->slots.p + i * (size_t)g_nsum;
        PyObject *part = PyList_New(g_nsum);
        if (!part) goto done;
        PyList_SET_ITEM(lists, (Py_ssize_t)i, part);
        for (int s = 0; s < g_nsum; s++) {
            const SumCol *sc = &g_sum[s];
            int64_t at = sc->kind == SK_ARG_MIN ? v[sc->by] : v[s];
            PyObject *value;
            if (sc->kind == SK_COUNT) value = PyLong_FromLongLong(v[s]);
            else if (sc->kind == SK_SET) value = PyList_New(0);
            else if (at < 0) value = (Py_INCREF(Py_None), Py_None);
            else value = CELL(sc->value, at);
            if (!value) goto done;
            PyList_SET_ITEM(part, s, value);
        }
        Py_INCREF(part);
        if (set_item(parts, CELL(C_TRACE_ID, f->parts.g[i].row), part)) goto done;
    }
    for (size_t i = 0; i < f->members.n; i++) {
        const Group *m = &f->members.g[i];
        PyObject *part = PyList_GET_ITEM(lists, (Py_ssize_t)m->n[0]);
        PyObject *value = CELL(g_sum[m->n[1]].value, m->row);
        int rc = value ? PyList_Append(PyList_GET_ITEM(part, m->n[1]), value) : -1;
        Py_XDECREF(value);
        if (rc) goto done;
    }
    out = Py_BuildValue("(OOOOOO)", calls, tokens, handoffs, traces, beats, parts);
done:
    Py_XDECREF(calls);
    Py_XDECREF(tokens);
    Py_XDECREF(handoffs);
    Py_XDECREF(traces);
    Py_XDECREF(beats);
    Py_XDECREF(parts);
    Py_XDECREF(lists);
    return out;
}

/* ---------------------------------------------------------------- spans */

typedef struct {
    Table t;
    Attrs attrs, scratch;
    Buf events, links;  /* the events / links JSON of the current span */
    Folds folds;        /* the lookup parts and exposition stats, folded as rows are written */
    int64_t rejected;
    int reasons[8];     /* problem codes seen, in order */
    int nreasons;
    const uint8_t *resource_json;
    size_t resource_len;
    Text service;
    Buf resource_buf, scope_buf;
    int scope_set;
} Ctx;

static const uint64_t MAX_NS = 0x7fffffffffffffffull;

static int problem(const Rd *tid, const Rd *sid, const Rd *pid, uint64_t start, uint64_t end) {
    static const uint8_t zeros[16] = {0};
    size_t tl = (size_t)(tid->end - tid->p), sl = (size_t)(sid->end - sid->p), pl = (size_t)(pid->end - pid->p);
    if (tl != 16 || memcmp(tid->p, zeros, 16) == 0) return 1;
    if (sl != 8 || memcmp(sid->p, zeros, 8) == 0) return 2;
    if (pl && pl != 8) return 3;
    if (start > MAX_NS || end > MAX_NS) return 4;
    if (end < start) return 5;
    return 0;
}

static int hex_col(Col *c, const uint8_t *s, size_t n) {
    if (!col_room(c, 2 * n)) return FALLBACK;
    MEM(buf_reserve(&c->values, 2 * n));
    char *o = c->values.p + c->values.len;
    for (size_t i = 0; i < n; i++) o[2 * i] = HEX[s[i] >> 4], o[2 * i + 1] = HEX[s[i] & 15];
    c->values.len += 2 * n;
    return col_end_string(c);
}

/* Event attributes go through ctx->scratch; returns the exception type seen (for the reference's
 * first-exception-event rule) via *etype. */
static int event_json(Ctx *x, Rd *ev, int first, Text *name_out, Text *etype, int *etype_done) {
    uint64_t time = 0;
    Text name = {(const uint8_t *)"", 0, 1};
    attrs_reset(&x->scratch);
    while (ev->p < ev->end) {
        uint32_t field;
        int wire;
        TRY(rd_tag(ev, &field, &wire));
        Rd sub;
        if (field == 1) {
            EXPECT(ev, field, wire, 1);
            TRY(rd_fixed64(ev, &time));
        } else if (field == 2) {
            EXPECT(ev, field, wire, 2);
            TRY(rd_string(ev, &sub));
            name.s = sub.p, name.n = (size_t)(sub.end - sub.p);
        } else if (field == 3) {
            EXPECT(ev, field, wire, 2);
            TRY(rd_len(ev, &sub));
            TRY(attrs_add(&x->scratch, &sub));
        } else {
            TRY(rd_skip(ev, field, wire));
        }
    }
    if (!*etype_done && str_eq(name.s, name.n, &g_texts[T_EXCEPTION_EVENT])) {
        const Attr *a = get(&x->scratch, K_EXCEPTION_TYPE);
        if (a && a->type == V_STR) {
            etype->s = a->s, etype->n = a->slen, etype->set = 1;
            *etype_done = 1;
        }
    }
    *name_out = name;
    Buf *b = &x->events;
    MEM(buf_ch(b, first ? '[' : ','));
    MEM(PUTS(b, "{\"name\":"));
    TRY(json_str(b, name.s, name.n));
    MEM(PUTS(b, ",\"time_unix_nano\":"));
    TRY(json_u64(b, time, 0));
    MEM(PUTS(b, ",\"attributes\":"));
    TRY(json_attrs(b, &x->scratch));
    MEM(buf_ch(b, '}'));
    return OK;
}

static int link_json(Ctx *x, Rd *ln, int first) {
    Rd tid = {EMPTY, EMPTY}, sid = {EMPTY, EMPTY}, state = {EMPTY, EMPTY};
    attrs_reset(&x->scratch);
    while (ln->p < ln->end) {
        uint32_t field;
        int wire;
        TRY(rd_tag(ln, &field, &wire));
        Rd sub;
        if (field == 1 || field == 2) {
            EXPECT(ln, field, wire, 2);
            TRY(rd_len(ln, &sub));
            *(field == 1 ? &tid : &sid) = sub;
        } else if (field == 3) {
            EXPECT(ln, field, wire, 2);
            TRY(rd_string(ln, &state));
        } else if (field == 4) {
            EXPECT(ln, field, wire, 2);
            TRY(rd_len(ln, &sub));
            TRY(attrs_add(&x->scratch, &sub));
        } else {
            TRY(rd_skip(ln, field, wire));
        }
    }
    Buf *b = &x->links;
    MEM(buf_ch(b, first ? '[' : ','));
    MEM(PUTS(b, "{\"trace_id\":"));
    TRY(json_hex(b, tid.p, (size_t)(tid.end - tid.p)));
    MEM(PUTS(b, ",\"span_id\":"));
    TRY(json_hex(b, sid.p, (size_t)(sid.end - sid.p)));
    MEM(PUTS(b, ",\"trace_state\":"));
    TRY(json_str(b, state.p, (size_t)(state.end - state.p)));
    MEM(PUTS(b, ",\"attributes\":"));
    TRY(json_attrs(b, &x->scratch));
    MEM(buf_ch(b, '}'));
    return OK;
}

static int span(Ctx *x, Rd *r) {
    Rd tid = {EMPTY, EMPTY}, sid = {EMPTY, EMPTY}, pid = {EMPTY, EMPTY}, state = {EMPTY, EMPTY};
    Text name = {(const uint8_t *)"", 0, 1}, message = {(const uint8_t *)"", 0, 1};
    uint64_t start = 0, end = 0, kind = 0, code = 0;
    uint32_t flags = 0;
    int status_seen = 0, any_known = 0, loop_event = 0, etype_done = 0, nevents = 0, nlinks = 0;
    Text etype = {NULL, 0, 0};
    Table *t = &x->t;
    Col *c = t->col;
    attrs_reset(&x->attrs);
    x->events.len = x->links.len = 0;
    while (r->p < r->end) {
        uint32_t field;
        int wire;
        TRY(rd_tag(r, &field, &wire));
        Rd sub;
        switch (field) {
            case 1: case 2: case 4:
                EXPECT(r, field, wire, 2);
                TRY(rd_len(r, &sub));
                *(field == 1 ? &tid : field == 2 ? &sid : &pid) = sub;
                break;
            case 3:
                EXPECT(r, field, wire, 2);
                TRY(rd_string(r, &state));
                break;
            case 5:
                EXPECT(r, field, wire, 2);
                TRY(rd_string(r, &sub));
                name.s = sub.p, name.n = (size_t)(sub.end - sub.p);
                break;
            case 6:
                EXPECT(r, field, wire, 0);
                TRY(rd_varint(r, &kind));
                break;
            case 7: case 8:
                EXPECT(r, field, wire, 1);
                TRY(rd_fixed64(r, field == 7 ? &start : &end));
                break;
            case 9:
                EXPECT(r, field, wire, 2);
                TRY(rd_len(r, &sub));
                TRY(attrs_add(&x->attrs, &sub));
                break;
            case 11: {
                EXPECT(r, field, wire, 2);
                TRY(rd_len(r, &sub));
                Text evname;
                TRY(event_json(x, &sub, nevents++ == 0, &evname, &etype, &etype_done));
                if (str_eq(evname.s, evname.n, &g_texts[T_LOOP_EVENT])) loop_event = 1;
                break;
            }
            case 13:
                EXPECT(r, field, wire, 2);
                TRY(rd_len(r, &sub));
                TRY(link_json(x, &sub, nlinks++ == 0));
                break;
            case 15: {
                EXPECT(r, field, wire, 2);
                if (status_seen++) return FALLBACK; /* statuses merge: the reference's */
                TRY(rd_len(r, &sub));
                while (sub.p < sub.end) {
                    uint32_t f2;
                    int w2;
                    TRY(rd_tag(&sub, &f2, &w2));
                    Rd s2;
                    if (f2 == 2) {
                        EXPECT(&sub, f2, w2, 2);
                        TRY(rd_string(&sub, &s2));
                        message.s = s2.p, message.n = (size_t)(s2.end - s2.p);
                    } else if (f2 == 3) {
                        EXPECT(&sub, f2, w2, 0);
                        TRY(rd_varint(&sub, &code));
                    } else {
                        TRY(rd_skip(&sub, f2, w2));
                    }
                }
                break;
            }
            case 16:
                EXPECT(r, field, wire, 5);
                TRY(rd_fixed32(r, &flags));
                break;
            case 10: case 12: case 14:
                EXPECT(r, field, wire, 0);
                TRY(rd_skip(r, field, wire));
                break;
            default:
                TRY(rd_skip(r, field, wire));
        }
    }
    if (nevents) MEM(buf_ch(&x->events, ']'));
    if (nlinks) MEM(buf_ch(&x->links, ']'));

    /* Checked after every field is read: a rejected span's events and links are validated too. */
    int why = problem(&tid, &sid, &pid, start, end);
    if (why) {
        x->rejected++;
        int seen = 0;
        for (int i = 0; i < x->nreasons; i++) seen |= x->reasons[i] == why;
        if (!seen && x->nreasons < 5) x->reasons[x->nreasons++] = why;
        return OK;
    }
    int64_t status_code = (int32_t)code;
    if (status_code < 0 || status_code > 2) status_code = 0;
    int64_t k = (int32_t)kind;
    if (k < 0 || k > 5) k = 0;
    for (int i = 0; i < N_KEYS; i++)
        if (x->attrs.slot[i] >= 0 && i != K_SERVICE_NAME && i != K_EXCEPTION_TYPE) {
            any_known = 1;
            break;
        }
    Text error_text = {NULL, 0, 0};
    if (status_code == 2 && etype.set) error_text = etype;
    /* error_from_event is exception.type when it is a string; "" counts as falsy, as in Python */

    size_t tl = (size_t)(tid.end - tid.p);
    TRY(hex_col(&c[C_TRACE_ID], tid.p, tl));
    TRY(hex_col(&c[C_SPAN_ID], sid.p, (size_t)(sid.end - sid.p)));
    if (pid.end != pid.p)
        TRY(hex_col(&c[C_PARENT], pid.p, (size_t)(pid.end - pid.p)));
    else
        TRY(col_null(&c[C_PARENT], A_STR));
    TRY(col_str(&c[C_NAME], name.s, name.n));
    uint8_t k8 = (uint8_t)k, s8 = (uint8_t)status_code;
    TRY(col_fixed(&c[C_KIND], &k8, A_U8));
    int64_t s64 = (int64_t)start, e64 = (int64_t)end;
    TRY(col_fixed(&c[C_START], &s64, A_I64));
    TRY(col_fixed(&c[C_END], &e64, A_I64));
    double duration = (double)(e64 - s64) / 1e6;
    TRY(col_fixed(&c[C_DURATION], &duration, A_F64));
    TRY(col_fixed(&c[C_STATUS], &s8, A_U8));
    TRY(col_str(&c[C_STATUS_MESSAGE], message.s, message.n));
    TRY(put_text(&c[C_SERVICE], x->service));
    TRY(promote(t, &x->attrs, any_known, loop_event, error_text, name));
    if (state.end != state.p)
        TRY(col_str(&c[C_TRACE_STATE], state.p, (size_t)(state.end - state.p)));
    else
        TRY(col_null(&c[C_TRACE_STATE], A_STR));
    TRY(col_fixed(&c[C_FLAGS], &flags, A_U32));
    TRY(json_attrs(&c[C_ATTRIBUTES].values, &x->attrs));
    TRY(col_end_string(&c[C_ATTRIBUTES]));
    if (nevents)
        TRY(col_str(&c[C_EVENTS], x->events.p, x->events.len));
    else
        TRY(col_null(&c[C_EVENTS], A_STR));
    if (nlinks)
        TRY(col_str(&c[C_LINKS], x->links.p, x->links.len));
    else
        TRY(col_null(&c[C_LINKS], A_STR));
    TRY(col_str(&c[C_RESOURCE], x->resource_buf.p, x->resource_buf.len));
    if (x->scope_set)
        TRY(col_str(&c[C_SCOPE], x->scope_buf.p, x->scope_buf.len));
    else
        TRY(col_null(&c[C_SCOPE], A_STR));
    TRY(fold(&x->folds, t, t->rows, str_eq(name.s, name.n, &g_texts[T_HEARTBEAT])));
    t->rows++;
    return OK;
}

/* InstrumentationScope.attributes: the rows do not keep them, but protobuf checks them — each
 * KeyValue, its AnyValue, and the arrays and kvlists inside — so this does too (past
 * MAX_CHECK_DEPTH it is not sure, and leaves the body to the reference). */
enum { M_KEY_VALUE, M_ANY_VALUE, M_ARRAY, M_KVLIST };
#define MAX_CHECK_DEPTH 64

static int valid_message(Rd r, int type, int depth) {
    if (depth > MAX_CHECK_DEPTH) return 0;
    while (r.p < r.end) {
        uint32_t field;
        int wire;
        if (rd_tag(&r, &field, &wire)) return 0;
        int text = 0, sub_type = -1;
        switch (type) {
            case M_KEY_VALUE: /* 1 key, 2 value */
                text = field == 1;
                sub_type = field == 2 ? M_ANY_VALUE : -1;
                break;
            case M_ANY_VALUE: /* 1 string, 5 array, 6 kvlist; the rest are numbers or bytes */
                text = field == 1;
                sub_type = field == 5 ? M_ARRAY : field == 6 ? M_KVLIST : -1;
                break;
            case M_ARRAY: sub_type = field == 1 ? M_ANY_VALUE : -1; break;
            default: sub_type = field == 1 ? M_KEY_VALUE : -1;
        }
        Rd sub;
        if (wire != 2 || (!text && sub_type < 0)) {
            if (rd_skip(&r, field, wire)) return 0;
        } else if (text) {
            if (rd_string(&r, &sub)) return 0;
        } else if (rd_len(&r, &sub) || !valid_message(sub, sub_type, depth + 1)) {
            return 0;
        }
    }
    return 1;
}

static int scope(Ctx *x, Rd *r) {
    Text name = {(const uint8_t *)"", 0, 1}, version = {(const uint8_t *)"", 0, 1};
    while (r->p < r->end) {
        uint32_t field;
        int wire;
        TRY(rd_tag(r, &field, &wire));
        Rd sub;
        if (field == 1 || field == 2) {
            EXPECT(r, field, wire, 2);
            TRY(rd_string(r, &sub));
            Text *t = field == 1 ? &name : &version;
            t->s = sub.p, t->n = (size_t)(sub.end - sub.p);
        } else if (field == 3) {
            EXPECT(r, field, wire, 2);
            TRY(rd_len(r, &sub));
            if (!valid_message(sub, M_KEY_VALUE, 0)) return FALLBACK;
        } else {
            TRY(rd_skip(r, field, wire));
        }
    }
    x->scope_buf.len = 0;
    x->scope_set = name.n || version.n;
    if (x->scope_set) {
        MEM(PUTS(&x->scope_buf, "{\"name\":"));
        TRY(json_str(&x->scope_buf, name.s, name.n));
        MEM(PUTS(&x->scope_buf, ",\"version\":"));
        TRY(json_str(&x->scope_buf, version.s, version.n));
        MEM(buf_ch(&x->scope_buf, '}'));
    }
    return OK;
}

typedef int (*Child)(Ctx *, Rd *);

/* Each ``field`` record of message ``r`` (a message itself), in wire order, to ``fn``. */
static int children(Ctx *x, Rd r, uint32_t want, Child fn) {
    while (r.p < r.end) {
        uint32_t field;
        int wire;
        TRY(rd_tag(&r, &field, &wire));
        if (field != want) {
            TRY(rd_skip(&r, field, wire));
            continue;
        }
        Rd sub;
        EXPECT(&r, field, wire, 2);
        TRY(rd_len(&r, &sub));
        TRY(fn(x, &sub));
    }
    return OK;
}

/* ResourceSpans and ScopeSpans share their shape: 1 the resource or scope (read here with
 * ``first``, before the children, since it may follow them on the wire), 2 the children,
 * 3 schema_url (validated, not kept). */
static int header(Ctx *x, Rd r, Child first) {
    int seen = 0;
    while (r.p < r.end) {
        uint32_t field;
        int wire;
        TRY(rd_tag(&r, &field, &wire));
        Rd sub;
        if (field == 1) {
            EXPECT(&r, field, wire, 2);
            if (seen++) return FALLBACK; /* resources (scopes) merge: the reference's */
            TRY(rd_len(&r, &sub));
            TRY(first(x, &sub));
        } else if (field == 3) {
            EXPECT(&r, field, wire, 2);
            TRY(rd_string(&r, &sub));
        } else {
            TRY(rd_skip(&r, field, wire));
        }
    }
    return OK;
}

static int scope_spans(Ctx *x, Rd *r) {
    x->scope_set = 0;
    x->scope_buf.len = 0;
    TRY(header(x, *r, scope));
    return children(x, *r, 2, span);
}

static int resource(Ctx *x, Rd *r) {
    attrs_reset(&x->scratch);
    while (r->p < r->end) {
        uint32_t field;
        int wire;
        TRY(rd_tag(r, &field, &wire));
        Rd sub;
        if (field == 1) {
            EXPECT(r, field, wire, 2);
            TRY(rd_len(r, &sub));
            TRY(attrs_add(&x->scratch, &sub));
        } else if (field == 3) {
            /* An entity ref: not stored, but the reference parses it, so it must be valid. */
            EXPECT(r, field, wire, 2);
            TRY(rd_len(r, &sub));
            while (sub.p < sub.end) {
                uint32_t f2;
                int w2;
                TRY(rd_tag(&sub, &f2, &w2));
                Rd text;
                if (f2 >= 1 && f2 <= 4) { /* schema_url, type, id_keys, description_keys */
                    EXPECT(&sub, f2, w2, 2);
                    TRY(rd_string(&sub, &text));
                } else {
                    TRY(rd_skip(&sub, f2, w2));
                }
            }
        } else {
            TRY(rd_skip(r, field, wire));
        }
    }
    x->resource_buf.len = 0;
    TRY(json_attrs(&x->resource_buf, &x->scratch));
    const Attr *svc = get(&x->scratch, K_SERVICE_NAME);
    x->service.set = 0;
    if (svc && svc->type == V_STR) x->service = (Text){svc->s, svc->slen, 1};
    return OK;
}

static int resource_spans(Ctx *x, Rd *r) {
    attrs_reset(&x->scratch);
    x->resource_buf.len = 0;
    MEM(PUTS(&x->resource_buf, "{}"));
    x->service.set = 0;
    /* The service text points into the body; the resource attributes are no longer needed. */
    TRY(header(x, *r, resource));
    return children(x, *r, 2, scope_spans);
}

static int request(Ctx *x, Rd *r) { return children(x, *r, 1, resource_spans); }

/* ---------------------------------------------------------------- the pre-pass: cost and bounds */

static inline uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static inline uint64_t sat_mul(uint64_t a, uint64_t b) { return a && b > UINT64_MAX / a ? UINT64_MAX : a * b; }

typedef struct {
    uint64_t cost;   /* cost(): the body's length, plus per span its resource's and scope's lengths */
    uint64_t shared; /* what the rows copy per span from its resource and scope: their JSON, the service */
} Tally;

/* One walk of a request's ResourceSpans and ScopeSpans records: span bodies are skipped, only
 * counted. Without a context it reads tags and lengths alone (cost()). With one it also decodes
 * each resource and scope as the rows will, for ``shared`` (a repeated one is the reference's). */
static int tally(Ctx *x, Rd body, Tally *out) {
    uint64_t cost = (uint64_t)(body.end - body.p), shared = 0;
    while (body.p < body.end) {
        uint32_t field;
        int wire;
        TRY(rd_tag(&body, &field, &wire));
        Rd rs;
        if (field != 1 || wire != 2) {
            TRY(rd_skip(&body, field, wire));
            continue;
        }
        TRY(rd_len(&body, &rs));
        uint64_t resource_len = 0, spans = 0, by_scope = 0, resource_json = 2, service = 0; /* "{}" */
        int resources = 0;
        while (rs.p < rs.end) {
            TRY(rd_tag(&rs, &field, &wire));
            Rd sub;
            if ((field != 1 && field != 2) || wire != 2) {
                TRY(rd_skip(&rs, field, wire));
                continue;
            }
            TRY(rd_len(&rs, &sub));
            if (field == 1) {
                resource_len += (uint64_t)(sub.end - sub.p);
                if (x) {
                    TRY(resources++ ? FALLBACK : resource(x, &sub));
                    resource_json = x->resource_buf.len;
                    service = x->service.set ? x->service.n : 0;
                }
                continue;
            }
            uint64_t scope_len = 0, n = 0, scope_json = 0;
            int scopes = 0;
            while (sub.p < sub.end) {
                TRY(rd_tag(&sub, &field, &wire));
                Rd rec;
                if ((field != 1 && field != 2) || wire != 2) {
                    TRY(rd_skip(&sub, field, wire));
                    continue;
                }
                TRY(rd_len(&sub, &rec));
                if (field == 2) {
                    n++;
                    continue;
                }
                scope_len += (uint64_t)(rec.end - rec.p);
                if (x) {
                    TRY(scopes++ ? FALLBACK : scope(x, &rec));
                    scope_json = x->scope_set ? x->scope_buf.len : 0;
                }
            }
            spans = sat_add(spans, n);
            by_scope = sat_add(by_scope, sat_mul(n, scope_len));
            shared = sat_add(shared, sat_mul(n, scope_json));
        }
        cost = sat_add(cost, sat_add(sat_mul(spans, resource_len), by_scope));
        shared = sat_add(shared, sat_mul(spans, resource_json + service));
    }
    out->cost = cost;
    out->shared = shared;
    return OK;
}

/* ---------------------------------------------------------------- Python glue */

static PyObject *bytes_of(Buf *b) { return PyBytes_FromStringAndSize(b->p ? b->p : "", (Py_ssize_t)b->len); }

/* Bit-pack a one-byte-per-row array (Arrow validity bitmaps and boolean values). */
static PyObject *packed(const Buf *b, int64_t rows) {
    Py_ssize_t n = (Py_ssize_t)((rows + 7) / 8);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n);
    if (!out) return NULL;
    uint8_t *o = (uint8_t *)PyBytes_AS_STRING(out);
    memset(o, 0, (size_t)n);
    for (int64_t i = 0; i < rows; i++)
        if (b->p[i]) o[i >> 3] |= (uint8_t)(1u << (i & 7));
    return out;
}

/* [(validity bytes or None, offsets bytes or None, values bytes), ...] in column order. */
static PyObject *columns(Table *t) {
    PyObject *out = PyList_New(N_COLS);
    if (!out) return NULL;
    for (int i = 0; i < N_COLS; i++) {
        Col *c = &t->col[i];
        PyObject *valid = c->nulls ? packed(&c->valid, t->rows) : (Py_INCREF(Py_None), Py_None);
        PyObject *offsets = COL_TYPE[i] == A_STR ? bytes_of(&c->offsets) : (Py_INCREF(Py_None), Py_None);
        PyObject *values = COL_TYPE[i] == A_BOOL ? packed(&c->values, t->rows) : bytes_of(&c->values);
        PyObject *tup = (valid && offsets && values) ? PyTuple_Pack(3, valid, offsets, values) : NULL;
        Py_XDECREF(valid);
        Py_XDECREF(offsets);
        Py_XDECREF(values);
        if (!tup) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, tup);
    }
    return out;
}

static Rd body_of(const Py_buffer *view) {
    const uint8_t *p = view->buf ? (const uint8_t *)view->buf : EMPTY;
    return (Rd){p, p + view->len};
}

/* Bodies from this size on are walked without the GIL (a smaller walk is quicker than handing
 * the GIL over). */
#define COST_NOGIL_BYTES (256 << 10)

static PyObject *fast_cost(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE)) return NULL;
    Rd r = body_of(&view);
    Tally tl;
    int rc;
    if (view.len >= COST_NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        rc = tally(NULL, r, &tl);
        Py_END_ALLOW_THREADS
    } else {
        rc = tally(NULL, r, &tl);
    }
    PyBuffer_Release(&view);
    if (rc != OK) Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong((unsigned long long)tl.cost);
}

static PyObject *fast_flatten(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *names[] = {"body", "parts", NULL};
    PyObject *arg;
    int parts = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p", names, &arg, &parts)) return NULL;
    if (!g_configured || (parts && !g_sum_configured)) {
        PyErr_SetString(PyExc_RuntimeError, "configure() first, with the summary to fold parts");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE)) return NULL;
    Ctx x;
    memset(&x, 0, sizeof x);
    x.folds.no_parts = !parts;
    PyObject *result = NULL;
    PyObject *folds = NULL;
    int rc = table_init(&x.t);
    if (rc == OK) {
        /* The walk touches no Python object: other threads run meanwhile. */
        Rd r = body_of(&view);
        Py_BEGIN_ALLOW_THREADS
        /* First the pre-pass: it refuses at once a request whose rows would copy more than 2 GiB
         * from resources and scopes (many spans under one huge resource), before anything is
         * allocated for them. */
        Tally tl;
        rc = tally(&x, r, &tl);
        if (rc == OK && tl.shared > COL_MAX) rc = FALLBACK;
        if (rc == OK) rc = request(&x, &r);
        Py_END_ALLOW_THREADS
    }
    if (rc == OK) folds = folds_to_python(&x.folds, &x.t);
    if (rc == OK && folds) {
        PyObject *cols = columns(&x.t);
        PyObject *reasons = PyTuple_New(x.nreasons);
        if (cols && reasons) {
            for (int i = 0; i < x.nreasons; i++) PyTuple_SET_ITEM(reasons, i, PyLong_FromLong(x.reasons[i]));
            result = Py_BuildValue("(LOOLO)", (long long)x.t.rows, cols, folds, (long long)x.rejected, reasons);
        }
        Py_XDECREF(cols);
        Py_XDECREF(reasons);
    } else if (rc == FALLBACK) {
        if (!PyErr_Occurred()) {
            result = Py_None;
            Py_INCREF(result);
        }
    } else if (!PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    Py_XDECREF(folds);
    folds_free(&x.folds);
    table_free(&x.t);
    free(x.attrs.a);
    free(x.scratch.a);
    free(x.events.p);
    free(x.links.p);
    free(x.resource_buf.p);
    free(x.scope_buf.p);
    PyBuffer_Release(&view);
    return result;
}

/* ---------------------------------------------------------------- configure, once
 *
 * Decodes read the configuration without the GIL, so it is set once and never changed: a later
 * call with the same values is a no-op, one with other values raises. Everything is read and
 * checked first (that may run Python code) and committed only then, in one step under the GIL. */

typedef struct {
    Str keys[N_KEYS], ops[N_OPS], kinds[N_KINDS], texts[N_TEXTS], llm[MAX_LLM_OPS];
    int nllm, nbuckets, nsum;
    double buckets[MAX_BUCKETS];
    SumCol sum[MAX_SUMMARY];
} Config;

static void strs_free(Str *s, int n) {
    for (int i = 0; i < n; i++) free(s[i].s);
}

static void config_free(Config *c) {
    strs_free(c->keys, N_KEYS);
    strs_free(c->ops, N_OPS);
    strs_free(c->kinds, N_KINDS);
    strs_free(c->texts, N_TEXTS);
    strs_free(c->llm, MAX_LLM_OPS);
    for (int i = 0; i < MAX_SUMMARY; i++)
        for (int j = 0; j < MAX_TESTS; j++) free(c->sum[i].tests[j].text.s);
}

/* Copies of a tuple's strings; ``n`` < 0: any length up to -n, the count in *count. */
static int read_strings(PyObject *seq, Str *out, int n, int *count, const char *what) {
    int max = n < 0 ? -n : n;
    if (!PyTuple_Check(seq) || (n >= 0 ? PyTuple_GET_SIZE(seq) != n : PyTuple_GET_SIZE(seq) > max)) {
        PyErr_Format(PyExc_ValueError, "%s: need a tuple of %s%d strings", what, n < 0 ? "at most " : "", max);
        return -1;
    }
    int len_seq = (int)PyTuple_GET_SIZE(seq);
    for (int i = 0; i < len_seq; i++) {
        Py_ssize_t len;
        const char *s = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(seq, i), &len);
        if (!s) return -1;
        out[i].s = malloc((size_t)len + 1);
        if (!out[i].s) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(out[i].s, s, (size_t)len + 1);
        out[i].n = (size_t)len;
    }
    if (count) *count = len_seq;
    return 0;
}

static int strs_eq(const Str *a, const Str *b, int n) {
    for (int i = 0; i < n; i++)
        if (a[i].n != b[i].n || memcmp(a[i].s, b[i].s, a[i].n) != 0) return 0;
    return 1;
}

static int sum_eq(const SumCol *a, const SumCol *b) {
    if (a->kind != b->kind || a->value != b->value || a->by != b->by || a->ntests != b->ntests) return 0;
    for (int i = 0; i < a->ntests; i++) {
        const SumTest *x = &a->tests[i], *y = &b->tests[i];
        if (x->col != y->col || x->op != y->op || x->num != y->num) return 0;
        if ((x->text.s == NULL) != (y->text.s == NULL) || (x->text.s && !strs_eq(&x->text, &y->text, 1))) return 0;
    }
    return 1;
}

static int is_int_type(int type) { return type != A_STR && type != A_F64; }

/* The summary's columns: a tuple of (kind, value column or -1, by column or -1, ((column, test,
 * literal or None), ...)), checked so that folds never read past a column or compare a string
 * as a number. */
static int read_summary(PyObject *seq, Config *c) {
    if (!PyTuple_Check(seq) || PyTuple_GET_SIZE(seq) > MAX_SUMMARY) {
        PyErr_Format(PyExc_ValueError, "summary: need a tuple of at most %d columns", MAX_SUMMARY);
        return -1;
    }
    c->nsum = (int)PyTuple_GET_SIZE(seq);
    for (int i = 0; i < c->nsum; i++) {
        SumCol *sc = &c->sum[i];
        PyObject *tests;
        PyObject *spec = PyTuple_GET_ITEM(seq, i);
        if (!PyArg_ParseTuple(spec, "iiiO!", &sc->kind, &sc->value, &sc->by, &PyTuple_Type, &tests)) return -1;
        int counted = sc->kind == SK_COUNT;
        int bad = sc->kind < 0 || sc->kind >= N_SUM_KINDS || PyTuple_GET_SIZE(tests) > MAX_TESTS ||
                  (counted ? sc->value != -1 : sc->value < 0 || sc->value >= N_COLS);
        if (!bad && (sc->kind == SK_MIN || sc->kind == SK_MAX)) bad = !is_int_type(COL_TYPE[sc->value]);
        if (!bad) bad = sc->kind == SK_ARG_MIN ? sc->by < 0 || sc->by >= c->nsum : sc->by != -1;
        if (bad) {
            PyErr_Format(PyExc_ValueError, "summary column %d: not a fold this decoder has", i);
            return -1;
        }
        sc->ntests = (int)PyTuple_GET_SIZE(tests);
        for (int j = 0; j < sc->ntests; j++) {
            SumTest *x = &sc->tests[j];
            PyObject *literal;
            if (!PyArg_ParseTuple(PyTuple_GET_ITEM(tests, j), "iiO", &x->col, &x->op, &literal)) return -1;
            if (x->col < 0 || x->col >= N_COLS || x->op < 0 || x->op >= N_SUM_TESTS ||
                (x->op == ST_NON_EMPTY && COL_TYPE[x->col] != A_STR)) {
                PyErr_Format(PyExc_ValueError, "summary column %d: test %d is not one this decoder has", i, j);
                return -1;
            }
            if (x->op != ST_EQ) continue;
            if (COL_TYPE[x->col] == A_STR) {
                PyObject *one = PyTuple_Pack(1, literal);
                int rc = one ? read_strings(one, &x->text, 1, NULL, "summary literal") : -1;
                Py_XDECREF(one);
                if (rc) return -1;
            } else if (is_int_type(COL_TYPE[x->col])) {
                x->num = PyLong_AsLongLong(literal);
                if (PyErr_Occurred()) return -1;
            } else {
                PyErr_Format(PyExc_ValueError, "summary column %d: no equality test on a float", i);
                return -1;
            }
        }
    }
    for (int i = 0; i < c->nsum; i++) {
        const SumCol *sc = &c->sum[i];
        if (sc->kind == SK_ARG_MIN && c->sum[sc->by].kind != SK_MIN) {
            PyErr_Format(PyExc_ValueError, "summary column %d: ordered by a column that is not a min", i);
            return -1;
        }
    }
    return 0;
}

static int summary_is_current(const Config *c) {
    if (c->nsum != g_nsum) return 0;
    for (int i = 0; i < c->nsum; i++)
        if (!sum_eq(&c->sum[i], &g_sum[i])) return 0;
    return 1;
}

static int config_is_current(const Config *c) {
    if (c->nllm != g_nllm || c->nbuckets != g_nbuckets) return 0;
    for (int i = 0; i < c->nbuckets; i++)
        if (memcmp(&c->buckets[i], &g_buckets[i], sizeof(double)) != 0) return 0;
    return strs_eq(c->keys, g_keys, N_KEYS) && strs_eq(c->ops, g_ops, N_OPS) &&
           strs_eq(c->kinds, g_kinds, N_KINDS) && strs_eq(c->texts, g_texts, N_TEXTS) &&
           strs_eq(c->llm, g_llm, c->nllm);
}

static PyObject *fast_configure(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *keys, *ops, *kinds, *texts, *llm, *buckets, *summary = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOO|O", &keys, &ops, &kinds, &texts, &llm, &buckets, &summary)) return NULL;
    Config c;
    memset(&c, 0, sizeof c);
    PyObject *result = NULL;
    if (read_strings(keys, c.keys, N_KEYS, NULL, "keys") || read_strings(ops, c.ops, N_OPS, NULL, "ops") ||
        read_strings(kinds, c.kinds, N_KINDS, NULL, "kinds") ||
        read_strings(texts, c.texts, N_TEXTS, NULL, "texts") ||
        read_strings(llm, c.llm, -MAX_LLM_OPS, &c.nllm, "llm_ops"))
        goto done;
    if (!PyTuple_Check(buckets) || PyTuple_GET_SIZE(buckets) > MAX_BUCKETS) {
        PyErr_Format(PyExc_ValueError, "buckets: need a tuple of at most %d numbers", MAX_BUCKETS);
        goto done;
    }
    c.nbuckets = (int)PyTuple_GET_SIZE(buckets);
    for (int i = 0; i < c.nbuckets; i++) {
        c.buckets[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(buckets, i));
        if (PyErr_Occurred()) goto done;
    }
    if (summary && read_summary(summary, &c)) goto done;
    /* From here on no Python code runs: this is atomic for every other thread. The summary, once
     * given, is fixed as the rest is; a call without it leaves it as it is. */
    if ((g_configured && !config_is_current(&c)) || (summary && g_sum_configured && !summary_is_current(&c))) {
        PyErr_SetString(PyExc_RuntimeError, "_fastflat is already configured with other values");
        goto done;
    }
    if (!g_configured) {
        memcpy(g_keys, c.keys, sizeof g_keys);
        memcpy(g_ops, c.ops, sizeof g_ops);
        memcpy(g_kinds, c.kinds, sizeof g_kinds);
        memcpy(g_texts, c.texts, sizeof g_texts);
        memcpy(g_llm, c.llm, sizeof g_llm);
        memcpy(g_buckets, c.buckets, sizeof g_buckets);
        g_nllm = c.nllm;
        g_nbuckets = c.nbuckets;
        /* the strings are the module's now */
        memset(c.keys, 0, sizeof c.keys);
        memset(c.ops, 0, sizeof c.ops);
        memset(c.kinds, 0, sizeof c.kinds);
        memset(c.texts, 0, sizeof c.texts);
        memset(c.llm, 0, sizeof c.llm);
        memset(g_hash, 0, sizeof g_hash);
        for (int k = 0; k < N_KEYS; k++) {
            uint32_t h = fnv((const uint8_t *)g_keys[k].s, g_keys[k].n) & (HASH_SLOTS - 1);
            while (g_hash[h]) h = (h + 1) & (HASH_SLOTS - 1);
            g_hash[h] = k + 1;
        }
        g_configured = 1;
    }
    if (summary && !g_sum_configured) {
        memcpy(g_sum, c.sum, sizeof g_sum);
        g_nsum = c.nsum;
        memset(c.sum, 0, sizeof c.sum);
        g_sum_configured = 1;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    config_free(&c);
    return result;
}

static PyMethodDef METHODS[] = {
    {"configure", fast_configure, METH_VARARGS,
     "Set the keys, operations, kinds and names matched, the buckets and the trace summary, once "
     "(again with the same values: a no-op)."},
    {"flatten", (PyCFunction)(void (*)(void))fast_flatten, METH_VARARGS | METH_KEYWORDS,
     "OTLP protobuf request bytes -> columns and folds, or None; parts=False folds no trace parts."},
    {"cost", fast_cost, METH_O, "OTLP protobuf request bytes -> its cost (see fast.request_cost), or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_fastflat", NULL, -1, METHODS};

PyMODINIT_FUNC PyInit__fastflat(void) { return PyModule_Create(&MODULE); }
