/* Launcher identity from environment variables, and the torchrun-style
 * environment of the child. Pure functions of an environment array: no
 * MPI, no process state, so the rules are testable with literal arrays. */
#include "launcher_env.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

const char *col_env_get(char *const *envp, const char *name)
{
    size_t n = strlen(name);

    for (; envp && *envp; envp++)
        if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
            return *envp + n + 1;
    return NULL;
}

/* ---- launcher identity ------------------------------------------------- */

/* Reads variable name as an int >= 0 into *v. Returns 1 if present, 0 if
 * absent (v untouched), HM_EFORMAT if present but not such a number. */
static int env_int(char *const *envp, const char *name, int *v, struct hm_err *err)
{
    const char *s = col_env_get(envp, name);
    char *end;
    long x;

    if (!s)
        return 0;
    errno = 0;
    x = strtol(s, &end, 10);
    if (!*s || *end || errno || x < 0 || x > 0x7fffffff)
        return hm_err_set(err, HM_EFORMAT, NULL, -1, "%s='%s' is not a rank or count", name, s);
    *v = (int)x;
    return 1;
}

/* Reads the first of two variables that is present. */
static int env_int2(char *const *envp, const char *a, const char *b, int *v, struct hm_err *err)
{
    int rc = env_int(envp, a, v, err);
    return rc ? rc : env_int(envp, b, v, err);
}

/* Tasks on node `node` from a Slurm list like "4(x2),3". Returns the count,
 * -1 if the list is shorter, HM_EFORMAT (< -1) if malformed. */
static int slurm_tasks_on(const char *list, int node)
{
    const char *p = list;

    while (*p) {
        char *end;
        long count = strtol(p, &end, 10), reps = 1;
        if (end == p || count < 0)
            return HM_EFORMAT;
        p = end;
        if (!strncmp(p, "(x", 2)) {
            reps = strtol(p + 2, &end, 10);
            if (end == p + 2 || *end != ')' || reps < 1)
                return HM_EFORMAT;
            p = end + 1;
        }
        if (node < reps)
            return (int)count;
        node -= (int)reps;
        if (*p == ',')
            p++;
        else if (*p)
            return HM_EFORMAT;
    }
    return -1;
}

static void launcher_unknown(struct col_launcher *l, const char *kind)
{
    l->kind = kind;
    l->rank = l->size = l->local_rank = l->local_size = -1;
}

/* Each reader fills l and returns 1 if its launcher names a rank, 0 if
 * not, or a negative HM_E* code. */
static int read_ompi(char *const *envp, struct col_launcher *l, struct hm_err *err)
{
    int rc = env_int(envp, "OMPI_COMM_WORLD_RANK", &l->rank, err);
    if (rc <= 0)
        return rc;
    if (env_int(envp, "OMPI_COMM_WORLD_SIZE", &l->size, err) < 0 ||
        env_int(envp, "OMPI_COMM_WORLD_LOCAL_RANK", &l->local_rank, err) < 0 ||
        env_int(envp, "OMPI_COMM_WORLD_LOCAL_SIZE", &l->local_size, err) < 0)
        return HM_EFORMAT;
    return 1;
}

static int read_pmi(char *const *envp, struct col_launcher *l, struct hm_err *err)
{
    int rc = env_int2(envp, "PMI_RANK", "PMIX_RANK", &l->rank, err);
    if (rc <= 0)
        return rc;
    if (env_int(envp, "PMI_SIZE", &l->size, err) < 0 ||
        env_int2(envp, "MPI_LOCALRANKID", "PMI_LOCAL_RANK", &l->local_rank, err) < 0 ||
        env_int2(envp, "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE", &l->local_size, err) < 0)
        return HM_EFORMAT;
    return 1;
}

static int read_slurm_local_size(char *const *envp, struct col_launcher *l, struct hm_err *err)
{
    const char *name = "SLURM_STEP_TASKS_PER_NODE";
    const char *list = col_env_get(envp, name);
    int node = 0, n;

    if (!list)
        list = col_env_get(envp, name = "SLURM_TASKS_PER_NODE");
    if (!list)
        return env_int(envp, "SLURM_NTASKS_PER_NODE", &l->local_size, err) < 0 ? HM_EFORMAT : 0;
    if (env_int(envp, "SLURM_NODEID", &node, err) < 0)
        return HM_EFORMAT;
    n = slurm_tasks_on(list, node);
    if (n < -1)
        return hm_err_set(err, HM_EFORMAT, NULL, -1, "%s='%s' is not a Slurm task list", name, list);
    l->local_size = n;
    return 0;
}

static int read_slurm(char *const *envp, struct col_launcher *l, struct hm_err *err)
{
    int rc;

    if (!col_env_get(envp, "SLURM_STEP_ID") && !col_env_get(envp, "SLURM_STEPID"))
        return 0;
    rc = env_int(envp, "SLURM_PROCID", &l->rank, err);
    if (rc <= 0)
        return rc;
    if (env_int2(envp, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", &l->size, err) < 0 ||
        env_int(envp, "SLURM_LOCALID", &l->local_rank, err) < 0 ||
        read_slurm_local_size(envp, l, err) < 0)
        return HM_EFORMAT;
    return 1;
}

/* Fills unknown fields of l from m when m names the same rank. */
static void launcher_fill(struct col_launcher *l, const struct col_launcher *m)
{
    if (m->rank != l->rank)
        return;
    if (l->size < 0)
        l->size = m->size;
    if (l->local_rank < 0)
        l->local_rank = m->local_rank;
    if (l->local_size < 0)
        l->local_size = m->local_size;
}

static int launcher_check(const struct col_launcher *l, struct hm_err *err)
{
    if (l->size == 0 || l->local_size == 0)
        return hm_err_set(err, HM_EFORMAT, NULL, -1, "%s launcher says 0 processes", l->kind);
    if (l->size > 0 && l->rank >= l->size)
        return hm_err_set(err, HM_EFORMAT, NULL, -1, "%s launcher: rank %d of %d processes",
                          l->kind, l->rank, l->size);
    if (l->local_size > 0 && l->local_rank >= l->local_size)
        return hm_err_set(err, HM_EFORMAT, NULL, -1, "%s launcher: local rank %d of %d",
                          l->kind, l->local_rank, l->local_size);
    return 0;
}

int col_env_launcher_from(char *const *envp, struct col_launcher *out, struct hm_err *err)
{
    static const char *const kinds[] = { "openmpi", "pmi", "slurm" };
    int (*const readers[])(char *const *, struct col_launcher *, struct hm_err *) = {
        read_ompi, read_pmi, read_slurm };
    struct col_launcher found[3];
    int first = -1;

    for (int i = 0; i < 3; i++) {
        int rc;
        launcher_unknown(&found[i], kinds[i]);
        rc = readers[i](envp, &found[i], err);
        if (rc < 0)
            return rc;
        if (rc == 0)
            found[i].rank = -1;
        else if (first < 0)
            first = i;
    }
    if (first < 0) {
        *out = (struct col_launcher){ .kind = "none", .rank = 0, .size = 1,
                                      .local_rank = 0, .local_size = 1 };
        return 0;
    }
    *out = found[first];
    for (int i = first + 1; i < 3; i++)
        if (found[i].rank >= 0)
            launcher_fill(out, &found[i]);
    return launcher_check(out, err);
}

int col_env_launcher(struct col_launcher *out, struct hm_err *err)
{
    return col_env_launcher_from(environ, out, err);
}

/* ---- child environment ------------------------------------------------- */

void col_env_in_init(struct col_env_in *in)
{
    memset(in, 0, sizeof *in);
    in->rank = in->local_rank = -1;
    in->world_size = in->local_world_size = -1;
    in->master_port = -1;
    in->run_start_ns = -1;
}

void col_env_free(char **envp)
{
    if (!envp)
        return;
    for (char **p = envp; *p; p++)
        free(*p);
    free(envp);
}

/* The growing output array. */
struct env_out {
    char **v;      /* owned, NULL-terminated once done */
    size_t n, cap;
};

/* True if a variable NAME (the part of entry before '=') is in o. */
static int env_has(const struct env_out *o, const char *entry)
{
    size_t len = strcspn(entry, "=");

    for (size_t i = 0; i < o->n; i++)
        if (!strncmp(o->v[i], entry, len) && o->v[i][len] == '=')
            return 1;
    return 0;
}

/* Appends a copy of entry, keeping the array NULL-terminated. */
static int env_push(struct env_out *o, const char *entry)
{
    if (o->n + 2 > o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 64;
        char **v = realloc(o->v, cap * sizeof *v);
        if (!v)
            return HM_ENOMEM;
        o->v = v;
        o->cap = cap;
    }
    if (!(o->v[o->n] = strdup(entry)))
        return HM_ENOMEM;
    o->v[++o->n] = NULL;
    return 0;
}

/* Appends a copy of entry unless its name is there already. */
static int env_add(struct env_out *o, const char *entry)
{
    return env_has(o, entry) ? 0 : env_push(o, entry);
}

static int env_addf(struct env_out *o, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int env_addf(struct env_out *o, const char *name, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    int n = snprintf(buf, sizeof buf, "%s=", name);

    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    return env_add(o, buf);
}

static int check_extra(char *const *extra, struct hm_err *err)
{
    for (; extra && *extra; extra++) {
        const char *eq = strchr(*extra, '=');
        if (!eq || eq == *extra)
            return hm_err_set(err, HM_EINVAL, NULL, -1,
                              "environment entry '%s' is not NAME=VALUE", *extra);
    }
    return 0;
}

/* Adds the computed variables; each is skipped when the caller left it unset. */
static int add_computed(struct env_out *o, const struct col_env_in *in)
{
    int rc = 0;

    if (in->rank >= 0)
        rc |= env_addf(o, "RANK", "%d", in->rank);
    if (in->local_rank >= 0)
        rc |= env_addf(o, "LOCAL_RANK", "%d", in->local_rank);
    if (in->world_size >= 1)
        rc |= env_addf(o, "WORLD_SIZE", "%d", in->world_size);
    if (in->local_world_size >= 1)
        rc |= env_addf(o, "LOCAL_WORLD_SIZE", "%d", in->local_world_size);
    if (in->master_addr)
        rc |= env_addf(o, "MASTER_ADDR", "%s", in->master_addr);
    if (in->master_port > 0)
        rc |= env_addf(o, "MASTER_PORT", "%d", in->master_port);
    if (in->trace_dir)
        rc |= env_addf(o, "HTAMERGE_TRACE_DIR", "%s", in->trace_dir);
    if (in->run_start_ns > 0)
        rc |= env_addf(o, "HTAMERGE_RUN_START_NS", "%" PRId64, in->run_start_ns);
    return rc ? HM_ENOMEM : 0;
}

/* PYTHONPATH=dir, or dir:USER'S when the user has one (an empty one is
 * not kept: it would put the working directory on the path). */
static int add_python_path(struct env_out *o, const char *dir)
{
    static const char name[] = "PYTHONPATH=";
    size_t n = sizeof name - 1;

    if (!dir)
        return 0;
    for (size_t i = 0; i < o->n; i++)
        if (!strncmp(o->v[i], name, n)) {
            const char *old = o->v[i] + n;
            size_t len = n + strlen(dir) + 1 + strlen(old) + 1;
            char *e = malloc(len);
            if (!e)
                return HM_ENOMEM;
            snprintf(e, len, "%s%s%s%s", name, dir, *old ? ":" : "", old);
            free(o->v[i]);
            o->v[i] = e;
            return 0;
        }
    return env_addf(o, "PYTHONPATH", "%s", dir);
}

int col_env_build(const struct col_env_in *in, char ***envp_out, struct hm_err *err)
{
    char *const *base = in->base ? in->base : environ;
    struct env_out o = { 0 };
    int rc;

    *envp_out = NULL;
    if ((rc = check_extra(in->extra, err)) != 0)
        return rc;
    /* Keep every base entry, duplicates included, exactly as it was. */
    for (char *const *p = base; p && *p; p++)
        if (env_push(&o, *p) != 0)
            goto nomem;
    for (char *const *p = in->extra; p && *p; p++)
        if (env_add(&o, *p) != 0)
            goto nomem;
    if (add_computed(&o, in) != 0 || add_python_path(&o, in->python_path) != 0)
        goto nomem;
    if (!o.v && !(o.v = calloc(1, sizeof *o.v)))   /* nothing at all: an empty array */
        goto nomem;
    *envp_out = o.v;
    return 0;

nomem:
    col_env_free(o.v);
    return hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory building the environment");
}
