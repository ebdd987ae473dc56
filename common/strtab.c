/* String interning with an open-addressing hash table over id slots.
 * Strings live in fixed-size chunks that are never reallocated, so the
 * pointers handed out by hm_strtab_get stay valid as the table grows. */
#include "strtab.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_MIN (64 * 1024)

struct chunk {
    struct chunk *next;
    size_t used, size;
    char data[];
};

struct entry {
    const char *s; /* borrowed from a chunk */
    uint32_t len;
    uint32_t hash;
};

struct hm_strtab {
    struct entry *ents; /* owned; indexed by id */
    uint32_t n, cap;
    uint32_t *slots;    /* owned; id+1, 0 = empty; only interned ids */
    uint32_t nslots;    /* power of two */
    uint32_t nhashed;   /* ids in slots (interned, not appended) */
    struct chunk *chunks; /* owned list, newest first */
    size_t bytes;
};

uint64_t hm_hash_bytes(const char *s, size_t len)
{
    /* Eight bytes per step: args texts are long and mostly unique, and a
     * byte-at-a-time hash was a sixth of parse time. */
    uint64_t h = len * 0x9E3779B97F4A7C15ull, w;
    size_t i = 0;

    for (; i + 8 <= len; i += 8) {
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, s + i, len - i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

/* Never 0, which marks an appended entry (hm_strtab_appended); the slot
 * index uses the low bits only. */
static uint32_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = hm_hash_bytes(s, len);
    return (uint32_t)(h ^ (h >> 32)) | 0x80000000u;
}

struct hm_strtab *hm_strtab_new(void)
{
    struct hm_strtab *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->cap = 64;
    t->nslots = 128;
    t->ents = calloc(t->cap, sizeof *t->ents);
    t->slots = calloc(t->nslots, sizeof *t->slots);
    if (!t->ents || !t->slots) {
        hm_strtab_free(t);
        return NULL;
    }
    t->ents[0].s = "";
    t->n = 1;
    return t;
}

void hm_strtab_free(struct hm_strtab *t)
{
    if (!t)
        return;
    for (struct chunk *c = t->chunks, *nx; c; c = nx) {
        nx = c->next;
        free(c);
    }
    free(t->ents);
    free(t->slots);
    free(t);
}

static const char *store(struct hm_strtab *t, const char *s, size_t len)
{
    struct chunk *c = t->chunks;
    char *p;

    if (!c || c->size - c->used < len + 1) {
        size_t sz = len + 1 > CHUNK_MIN ? len + 1 : CHUNK_MIN;
        c = malloc(sizeof *c + sz);
        if (!c)
            return NULL;
        c->size = sz;
        c->used = 0;
        if (sz > CHUNK_MIN && t->chunks) {
            /* A string of its own goes behind the current chunk, which keeps
             * taking small strings; putting it in front would abandon the
             * current chunk's free space at every large string. */
            c->next = t->chunks->next;
            t->chunks->next = c;
        } else {
            c->next = t->chunks;
            t->chunks = c;
        }
    }
    p = c->data + c->used;
    memcpy(p, s, len);
    p[len] = '\0';
    c->used += len + 1;
    t->bytes += len + 1;
    return p;
}

static int grow_slots(struct hm_strtab *t)
{
    uint32_t ns = t->nslots * 2;
    uint32_t *slots;

    if (t->nslots > UINT32_MAX / 2)
        return -1;
    slots = calloc(ns, sizeof *slots);
    if (!slots)
        return -1;
    /* From the old slots, not from the ids: appended ids are not hashed. */
    for (uint32_t k = 0; k < t->nslots; k++) {
        uint32_t id1 = t->slots[k];
        if (!id1)
            continue;
        uint32_t i = t->ents[id1 - 1].hash & (ns - 1);
        while (slots[i])
            i = (i + 1) & (ns - 1);
        slots[i] = id1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = ns;
    return 0;
}

/* Copies s in as the next id; UINT32_MAX when out of memory. */
static hm_strid add_entry(struct hm_strtab *t, const char *s, size_t len, uint32_t h)
{
    hm_strid id;

    if (t->n == t->cap) {
        struct entry *ne = realloc(t->ents, (size_t)t->cap * 2 * sizeof *ne);
        if (!ne)
            return UINT32_MAX;
        t->ents = ne;
        t->cap *= 2;
    }
    id = t->n;
    t->ents[id].s = store(t, s, len);
    if (!t->ents[id].s)
        return UINT32_MAX;
    t->ents[id].len = (uint32_t)len;
    t->ents[id].hash = h;
    t->n++;
    return id;
}

/* The slot of s[0..len) with hash h: its own, or the empty one where it
 * would go. */
static uint32_t probe(const struct hm_strtab *t, const char *s, size_t len, uint32_t h)
{
    uint32_t i;

    for (i = h & (t->nslots - 1); t->slots[i]; i = (i + 1) & (t->nslots - 1)) {
        const struct entry *e = &t->ents[t->slots[i] - 1];
        if (e->hash == h && e->len == len && memcmp(e->s, s, len) == 0)
            break;
    }
    return i;
}

hm_strid hm_strtab_intern(struct hm_strtab *t, const char *s, size_t len)
{
    uint32_t h, i, id;

    if (len == 0)
        return 0;
    if (len > UINT32_MAX - 1)
        return UINT32_MAX;
    h = hash_bytes(s, len);
    i = probe(t, s, len, h);
    if (t->slots[i])
        return t->slots[i] - 1;
    if (t->n == UINT32_MAX - 1)
        return UINT32_MAX;
    /* Grow before inserting, so that a failed growth fails this call
     * cleanly and the probe loops always find an empty slot. */
    if ((uint64_t)(t->nhashed + 1) * 2 > t->nslots) {
        if (grow_slots(t) != 0)
            return UINT32_MAX;
        i = probe(t, s, len, h);
    }
    id = add_entry(t, s, len, h);
    if (id == UINT32_MAX)
        return UINT32_MAX;
    t->slots[i] = id + 1;
    t->nhashed++;
    return id;
}

hm_strid hm_strtab_append(struct hm_strtab *t, const char *s, size_t len)
{
    if (len == 0)
        return 0;
    if (len > UINT32_MAX - 1 || t->n == UINT32_MAX - 1)
        return UINT32_MAX;
    return add_entry(t, s, len, 0);
}

int hm_strtab_appended(const struct hm_strtab *t, hm_strid id)
{
    return id > 0 && id < t->n && t->ents[id].hash == 0;
}

hm_strid hm_strtab_find(const struct hm_strtab *t, const char *s, size_t len)
{
    uint32_t i;

    if (len == 0 || len > UINT32_MAX - 1)
        return 0;
    i = probe(t, s, len, hash_bytes(s, len));
    return t->slots[i] ? t->slots[i] - 1 : 0;
}

hm_strid hm_strtab_intern_cstr(struct hm_strtab *t, const char *s)
{
    return hm_strtab_intern(t, s, s ? strlen(s) : 0);
}

const char *hm_strtab_get(const struct hm_strtab *t, hm_strid id, size_t *len)
{
    if (!t || id >= t->n) {
        if (len)
            *len = 0;
        return "";
    }
    if (len)
        *len = t->ents[id].len;
    return t->ents[id].s;
}

uint32_t hm_strtab_count(const struct hm_strtab *t)
{
    return t->n;
}

size_t hm_strtab_bytes(const struct hm_strtab *t)
{
    return t->bytes + (size_t)t->cap * sizeof *t->ents + (size_t)t->nslots * 4;
}
