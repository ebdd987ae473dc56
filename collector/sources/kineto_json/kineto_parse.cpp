/* The JSON walk over one Kineto trace, with simdjson On Demand: the top-level
 * object, each traceEvents element and the members of distributedInfo are
 * handed to a C sink as raw tokens (numbers as their text, strings
 * unescaped). It knows the key names it extracts but not what they mean:
 * kineto_event.c and kineto_json.c turn tokens into records. The only C++
 * in the tree: no exception leaves it (simdjson's error-code API, and a
 * catch-all around the walk). */
#include "kineto_json_int.h"

/* Error codes only: any simdjson call that could throw fails to compile. */
#define SIMDJSON_EXCEPTIONS 0
#include <simdjson.h>

#include <cstring>
#include <new>
#include <utility>

using namespace simdjson;

static_assert(KJ_PADDING >= SIMDJSON_PADDING, "loaded buffers must carry simdjson's padding");

namespace {

/* Key lookup. A table indexed by a key's first byte lists the (at most
 * four) known keys starting with it; a candidate matches when its bytes
 * and the closing quote after them equal the raw key text, compared eight
 * bytes at a time under a mask. Keys hold no escapes, so the raw key text
 * can be compared as is, and the buffer's padding makes reading up to 32
 * bytes from any key's start safe. */
struct key_entry {
    const char *s;
    uint8_t len;
    uint8_t field;
};

#define KJ_KEY(id, str) {str, sizeof(str) - 1, KJ_F_##id},
constexpr key_entry event_keys[] = {KJ_EVENT_KEYS(KJ_KEY) {"args", 4, KJ_F__COUNT}};
constexpr key_entry arg_keys[] = {KJ_ARG_KEYS(KJ_KEY)};
#undef KJ_KEY

const int ARGS_KEY = KJ_F__COUNT;   /* event_keys' pseudo field for "args" */

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "key_index compares keys as little-endian words"
#endif

inline uint64_t load8(const char *p)
{
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
}

/* A known key and its closing quote as up to four masked words. */
struct key_words {
    uint64_t w[4] = {0, 0, 0, 0};
    uint64_t m[4] = {0, 0, 0, 0};
    uint8_t nw = 0;
    int8_t field = -1;
};

struct key_index {
    static constexpr size_t MAXK = 32;
    key_words keys[MAXK];
    uint8_t cand[256][4];   /* index + 1 into keys; 0 = none */
    bool full = false;      /* more than four keys share a first byte, or too many */

    template <size_t N>
    constexpr explicit key_index(const key_entry (&tab)[N]) : keys{}, cand{}
    {
        if (N > MAXK) {
            full = true;
            return;
        }
        for (size_t i = 0; i < N; i++) {
            size_t n = size_t(tab[i].len) + 1;   /* with the closing quote */
            if (n > 32) {
                full = true;
                return;
            }
            for (size_t j = 0; j < n; j++) {
                uint64_t c = j < tab[i].len ? uint64_t(uint8_t(tab[i].s[j])) : uint64_t('"');
                keys[i].w[j / 8] |= c << (8 * (j % 8));
                keys[i].m[j / 8] |= uint64_t(0xff) << (8 * (j % 8));
            }
            keys[i].nw = uint8_t((n + 7) / 8);
            keys[i].field = int8_t(tab[i].field);
            auto &slot = cand[(unsigned char)tab[i].s[0]];
            size_t k = 0;
            while (k < 4 && slot[k])
                k++;
            if (k == 4)
                full = true;
            else
                slot[k] = uint8_t(i + 1);
        }
    }

    /* Field id of the raw key k (text after its opening quote), or -1. */
    int find(const char *k) const
    {
        const uint8_t *slot = cand[(unsigned char)k[0]];
        uint64_t w0 = load8(k);

        for (int j = 0; j < 4 && slot[j]; j++) {
            const key_words &c = keys[slot[j] - 1];
            if ((w0 & c.m[0]) != c.w[0])
                continue;
            bool ok = true;
            for (int i = 1; i < c.nw && ok; i++)
                ok = (load8(k + 8 * i) & c.m[i]) == c.w[i];
            if (ok)
                return c.field;
        }
        return -1;
    }
};

constexpr key_index event_index(event_keys);
constexpr key_index arg_index(arg_keys);
static_assert(!event_index.full && !arg_index.full, "key_index holds four keys per first byte, 32 keys of 31 bytes");

inline std::string_view trim(std::string_view s)
{
    while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

/* Length of a raw key up to its closing quote, escapes included. */
inline size_t raw_key_len(const char *k)
{
    size_t n = 0;
    while (k[n] != '"')
        n += k[n] == '\\' ? 2 : 1;
    return n;
}

inline void set_tok(kj_tok *t, std::string_view s, kj_type type)
{
    t->p = s.data();
    t->n = (uint32_t)s.size();
    t->type = type;
}

struct walker {
    ondemand::document doc;
    const char *buf;
    size_t len;
    const kj_sink *sink;
    kj_fail *fail;
    uint64_t nevents = 0;
    int sink_rc = 0;             /* a sink's nonzero return; stops the walk */
    bool seen_events = false;
    bool walking = false;        /* stage 1 succeeded; doc can be asked where it is */
    const char *why = nullptr;   /* the walk's own reason to fail, if any */
    int64_t why_at = -1;

    error_code token(ondemand::value &v, kj_tok *t, std::string_view *raw);
    error_code args(ondemand::value &v, kj_event *ev);
    error_code event(ondemand::value &v, kj_event *ev);
    error_code events(ondemand::value &v);
    error_code members(ondemand::value &v, kj_section sec);
    error_code top();
    error_code stop(ondemand::value &v, const char *msg);
    int failed(error_code e);
};

/* Classifies v by its first character and fills t; containers are consumed
 * and given as their raw text. *raw (may be NULL) gets the value's text. */
error_code walker::token(ondemand::value &v, kj_tok *t, std::string_view *raw)
{
    std::string_view tok = trim(v.raw_json_token()), s;
    error_code e;

    switch (tok.empty() ? 0 : tok[0]) {
    case '"':
        /* Most strings hold no escape: point into the document rather than
         * unescape a copy into the parser's string buffer. */
        if (tok.size() >= 2 && tok.back() == '"' &&
            !std::memchr(tok.data() + 1, '\\', tok.size() - 2)) {
            set_tok(t, tok.substr(1, tok.size() - 2), KJ_STR);
            break;
        }
        if ((e = v.get_string().get(s)))
            return e;
        set_tok(t, s, KJ_STR);
        break;
    case '{': {
        ondemand::object o;
        if ((e = v.get_object().get(o)) || (e = o.raw_json().get(tok)))
            return e;
        set_tok(t, tok = trim(tok), KJ_OBJ);
        break;
    }
    case '[': {
        ondemand::array a;
        if ((e = v.get_array().get(a)) || (e = a.raw_json().get(tok)))
            return e;
        set_tok(t, tok = trim(tok), KJ_ARR);
        break;
    }
    case '-': case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
        set_tok(t, tok, KJ_NUM);
        break;
    case 't': case 'f':
        set_tok(t, tok, KJ_BOOL);
        break;
    case 'n':
        set_tok(t, tok, KJ_NULL);
        break;
    default:
        set_tok(t, tok, KJ_BAD);   /* NaN, Infinity: not JSON, but seen in the wild */
        break;
    }
    if (raw)
        *raw = tok;
    return SUCCESS;
}

/* Extracts the known keys of an args object and records its raw span. */
error_code walker::args(ondemand::value &v, kj_event *ev)
{
    std::string_view tok = v.raw_json_token();
    ondemand::object o;
    const char *start, *end;
    error_code e;

    if (tok.empty() || tok[0] != '{')
        return SUCCESS;   /* args that are not an object are ignored */
    start = tok.data();
    if ((e = v.get_object().get(o)))
        return e;
    for (auto fr : o) {
        if ((e = fr.error()))
            return e;
        ondemand::field &f = fr.value_unsafe();
        int id = arg_index.find(f.key().raw());
        if (id < 0)
            continue;
        if ((e = token(f.value(), &ev->f[id], nullptr)))
            return e;
        ev->present |= 1ull << id;
    }
    /* The walk now stands on the token after the closing brace. */
    if ((e = doc.current_location().get(end)))
        return e;
    set_tok(&ev->args, trim(std::string_view(start, size_t(end - start))), KJ_OBJ);
    return SUCCESS;
}

error_code walker::event(ondemand::value &v, kj_event *ev)
{
    ondemand::object o;
    error_code e;

    ev->present = 0;
    ev->args.type = KJ_ABSENT;
    ev->not_object = 0;
    ev->skipped = 0;
    ondemand::json_type jt;
    if (v.type().get(jt) || jt != ondemand::json_type::object) {
        ev->not_object = 1;
        return SUCCESS;   /* the array walk skips the value */
    }
    if ((e = v.get_object().get(o)))
        return e;
    for (auto fr : o) {
        if ((e = fr.error()))
            return e;
        ondemand::field &f = fr.value_unsafe();
        int id = event_index.find(f.key().raw());
        if (id == ARGS_KEY) {
            if ((e = args(f.value(), ev)))
                return e;
            continue;
        }
        if (id < 0)
            continue;
        if ((e = token(f.value(), &ev->f[id], nullptr)))
            return e;
        ev->present |= 1ull << id;
        if (id == KJ_F_PH && sink->skip_ph && ev->f[id].type == KJ_STR && ev->f[id].n == 1 &&
            sink->skip_ph[(unsigned char)ev->f[id].p[0]]) {
            ev->skipped = 1;
            return SUCCESS;   /* the array walk skips the rest of the object */
        }
    }
    return SUCCESS;
}

error_code walker::events(ondemand::value &v)
{
    ondemand::array a;
    kj_event ev;
    error_code e = v.get_array().get(a);

    if (e == INCORRECT_TYPE)
        return stop(v, "traceEvents is not an array");
    if (e)
        return e;
    for (auto er : a) {
        if ((e = er.error()))
            return e;
        if ((e = event(er.value_unsafe(), &ev)))
            return e;
        if (!ev.skipped && (sink_rc = sink->event(sink->ctx, &ev)))
            return UNEXPECTED_ERROR;
        if ((++nevents & 4095) == 0 && sink->progress) {
            const char *loc;
            if (!doc.current_location().get(loc))
                sink->progress(sink->ctx, uint64_t(loc - buf));
        }
    }
    return SUCCESS;
}

/* Hands each member of an object (the top level's, or distributedInfo's)
 * to the sink; traceEvents and distributedInfo are walked instead. */
error_code walker::members(ondemand::value &v, kj_section sec)
{
    ondemand::object o;
    error_code e;

    if ((e = v.get_object().get(o)))
        return e;
    for (auto fr : o) {
        kj_tok t;
        std::string_view raw;
        if ((e = fr.error()))
            return e;
        ondemand::field &f = fr.value_unsafe();
        const char *k = f.key().raw();
        size_t n = raw_key_len(k);
        if (sec == KJ_SEC_TOP && n == 11 && std::memcmp(k, "traceEvents", 11) == 0) {
            seen_events = true;
            if ((e = events(f.value())))
                return e;
            continue;
        }
        if (sec == KJ_SEC_TOP && n == 15 && std::memcmp(k, "distributedInfo", 15) == 0) {
            ondemand::json_type jt;
            if (!f.value().type().get(jt) && jt == ondemand::json_type::object) {
                if ((e = members(f.value(), KJ_SEC_DIST)))
                    return e;
                continue;
            }
        }
        if ((e = token(f.value(), &t, &raw)))
            return e;
        if ((sink_rc = sink->member(sink->ctx, sec, k, n, &t, raw.data(), raw.size())))
            return UNEXPECTED_ERROR;
    }
    return SUCCESS;
}

/* Records a failure found by the walk itself (not by simdjson) at v. */
error_code walker::stop(ondemand::value &v, const char *msg)
{
    why = msg;
    why_at = int64_t(v.raw_json_token().data() - buf);
    return UNEXPECTED_ERROR;
}

error_code walker::top()
{
    ondemand::value root;
    ondemand::json_type jt;
    const char *loc;
    error_code e;

    e = doc.get_value().get(root);
    if (e == SCALAR_DOCUMENT_AS_VALUE || e == INCORRECT_TYPE) {
        size_t i = 0;
        while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t'))
            i++;
        why = i < len && buf[i] && std::strchr("\"-0123456789tfn", buf[i]) ? "top level is not a JSON object"
                                                               : "not JSON: no JSON value at the start";
        why_at = int64_t(i);
    }
    if (e)
        return e;
    if ((e = root.type().get(jt)))
        return e;
    if (jt != ondemand::json_type::object)
        return stop(root, "top level is not a JSON object");
    if ((e = members(root, KJ_SEC_TOP)))
        return e;
    if (!doc.current_location().get(loc)) {
        why = "invalid JSON: content after the top-level object";
        why_at = int64_t(loc - buf);
        return TRAILING_CONTENT;
    }
    if (!seen_events) {
        why = "no traceEvents array";
        return UNEXPECTED_ERROR;
    }
    return SUCCESS;
}

/* Turns a failed walk into an HM_E* code and *fail. */
int walker::failed(error_code e)
{
    const char *loc = nullptr;

    fail->detail = nullptr;
    fail->offset = int64_t(len);
    if (e == MEMALLOC) {
        fail->msg = "out of memory parsing JSON";
        fail->offset = -1;
        return HM_ENOMEM;
    }
    if (e == EMPTY) {
        fail->msg = "not JSON: no content";
        fail->offset = 0;
    } else if (e == UNCLOSED_STRING) {
        fail->msg = "truncated JSON: unexpected end of input inside a string";
    } else if (!walking) {   /* stage 1 found it but does not say where */
        fail->msg = "invalid JSON";
        fail->detail = error_message(e);
        fail->offset = e == UTF8_ERROR ? kj_diag_bad_utf8(buf, len)
                       : e == UNESCAPED_CHARS ? kj_diag_raw_control(buf, len) : -1;
    } else if (e == INCOMPLETE_ARRAY_OR_OBJECT || kj_diag_cut_short(buf, len)) {
        fail->msg = "truncated JSON: unexpected end of input";   /* whatever else went wrong */
    } else if (why) {
        fail->msg = why;
        fail->offset = why_at;
    } else if (doc.current_location().get(loc)) {
        fail->msg = "truncated JSON: unexpected end of input";
    } else {
        fail->msg = "invalid JSON";
        fail->detail = error_message(e);
        fail->offset = int64_t(loc - buf);
    }
    return HM_EFORMAT;
}

/* The thread's parser, kept from one document to the next: its index
 * would otherwise be mapped and faulted in afresh for every file. It
 * reserves about 5.7 bytes per byte of JSON (4 for structural indexes,
 * 5/3 for unescaped strings) and touches 4 per structural character, so
 * it is freed after a document above KJ_KEEP_MAX / 4, and otherwise at
 * thread exit or by kj_parse_release_thread. */
struct parser_cache {
    ondemand::parser *p = nullptr;
    bool busy = false;   /* in use by a kj_parse on this thread */
    ~parser_cache() { delete p; }
};

thread_local parser_cache tl_parser;

/* Takes the thread's parser for one walk (or a parser of its own when a
 * walk on this thread is already using it) and gives it back after. */
class parser_lease {
    parser_cache *pc = nullptr;
    ondemand::parser *own = nullptr;

public:
    ondemand::parser *p = nullptr;

    parser_lease()
    {
        parser_cache &c = tl_parser;
        if (!c.busy) {
            if (!c.p)
                c.p = new ondemand::parser();
            c.busy = true;
            pc = &c;
            p = c.p;
        } else {
            p = own = new ondemand::parser();
        }
    }
    ~parser_lease()
    {
        delete own;
        if (pc) {
            pc->busy = false;
            if (pc->p->capacity() > KJ_KEEP_MAX / 4) {
                delete pc->p;
                pc->p = nullptr;
            }
        }
    }
    parser_lease(const parser_lease &) = delete;
    parser_lease &operator=(const parser_lease &) = delete;
};

int walk_doc(ondemand::parser &parser, const char *buf, size_t len, const kj_sink *sink,
             kj_fail *fail)
{
    walker w;
    error_code e;

    w.buf = buf;
    w.len = len;
    w.sink = sink;
    w.fail = fail;
    e = parser.iterate(buf, len, len + KJ_PADDING).get(w.doc);
    if (!e) {
        w.walking = true;
        e = w.top();
    }
    if (w.sink_rc)
        return w.sink_rc;
    if (e)
        return w.failed(e);
    if (sink->progress)
        sink->progress(sink->ctx, len);
    return 0;
}

}  // namespace

extern "C" void kj_parse_release_thread(void)
{
    parser_cache &c = tl_parser;

    if (!c.busy) {
        delete c.p;
        c.p = nullptr;
    }
}

extern "C" int kj_parse(const char *buf, size_t len, const kj_sink *sink, kj_fail *fail)
{
    try {
        fail->offset = -1;
        fail->msg = nullptr;
        fail->detail = nullptr;
        if (len > KJ_MAX_JSON) {
            fail->msg = "JSON text larger than 4 GiB is not supported";
            return HM_EFORMAT;
        }
        parser_lease lease;
        return walk_doc(*lease.p, buf, len, sink, fail);
    } catch (const std::bad_alloc &) {
        fail->msg = "out of memory parsing JSON";
        return HM_ENOMEM;
    } catch (...) {
        fail->msg = "internal error in the JSON walk";
        return HM_EFORMAT;
    }
}

extern "C" size_t kj_minify(const char *src, size_t n, char *dst)
{
    size_t out = 0;

    if (minify(src, n, dst, out) != SUCCESS) {
        std::memcpy(dst, src, n);   /* not valid JSON: keep it as written */
        return n;
    }
    return out;
}
