/* Which files to read: expanding the paths a user gave into trace files,
 * and the rank a file's name announces. Does not open the files. */
#include "kineto_json.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/vec.h"

#define MAX_DEPTH 64

struct lst_ent {
    char *path;    /* owned until handed to the caller */
    dev_t dev;
    ino_t ino;
};

struct lst {
    HM_VEC(struct lst_ent) v;
    struct { dev_t dev; ino_t ino; } up[MAX_DEPTH];   /* directories being walked */
    int depth;
    struct hm_err *err;
};

int src_kineto_rank_from_name(const char *path)
{
    const char *base = strrchr(path, '/'), *p, *q;
    long v;

    base = base ? base + 1 : path;
    for (p = base; *p; p++) {
        if (strncasecmp(p, "rank", 4) != 0)
            continue;
        q = p + 4;
        if (*q == '-' || *q == '_')
            q++;
        for (v = 0; *q >= '0' && *q <= '9' && v <= INT32_MAX; q++)
            v = v * 10 + (*q - '0');
        if (q > p + 4 && q[-1] >= '0' && q[-1] <= '9' && v <= INT32_MAX)
            return (int)v;
    }
    return -1;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int add(struct lst *l, const char *path, const struct stat *st)
{
    struct lst_ent *e;
    char *copy = strdup(path);

    if (!copy || !(e = HM_VEC_PUSH(l->v))) {
        free(copy);
        return hm_err_set(l->err, HM_ENOMEM, path, -1, "out of memory listing files");
    }
    e->path = copy;
    e->dev = st->st_dev;
    e->ino = st->st_ino;
    return 0;
}

static int walk_dir(struct lst *l, const char *dir, const struct stat *dst);

/* One directory entry: recurse into directories (hidden ones skipped, and
 * none already being walked), keep regular files named *.json[.gz]. */
static int walk_entry(struct lst *l, const char *dir, const char *name)
{
    size_t dl = strlen(dir);
    char *path = malloc(dl + strlen(name) + 2);
    struct stat st;
    int rc = 0;

    if (!path)
        return hm_err_set(l->err, HM_ENOMEM, dir, -1, "out of memory listing files");
    snprintf(path, dl + strlen(name) + 2, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", name);
    if (stat(path, &st) != 0)
        goto done;   /* a dangling link or a file that just went away */
    if (S_ISDIR(st.st_mode))
        rc = walk_dir(l, path, &st);
    else if (S_ISREG(st.st_mode) && (ends_with(name, ".json") || ends_with(name, ".json.gz")))
        rc = add(l, path, &st);
done:
    free(path);
    return rc;
}

static int walk_dir(struct lst *l, const char *dir, const struct stat *dst)
{
    struct dirent *de;
    DIR *d;
    int rc = 0;

    for (int i = 0; i < l->depth; i++)
        if (l->up[i].dev == dst->st_dev && l->up[i].ino == dst->st_ino)
            return 0;   /* a link back up the tree */
    if (l->depth == MAX_DEPTH)
        return 0;
    d = opendir(dir);
    if (!d)
        return hm_err_set(l->err, HM_EIO, dir, -1, "cannot open directory: %s", strerror(errno));
    l->up[l->depth].dev = dst->st_dev;
    l->up[l->depth].ino = dst->st_ino;
    l->depth++;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        if (de->d_name[0] != '.')
            rc = walk_entry(l, dir, de->d_name);
    }
    l->depth--;
    closedir(d);
    return rc;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const struct lst_ent *)a)->path, ((const struct lst_ent *)b)->path);
}

static int by_file(const void *a, const void *b)
{
    const struct lst_ent *x = *(const struct lst_ent *const *)a, *y = *(const struct lst_ent *const *)b;

    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return x < y ? -1 : x > y;   /* earlier in path order first */
}

/* Sorts by path and drops later entries naming a file already listed. */
static int sort_dedup(struct lst *l)
{
    struct lst_ent **idx;
    size_t i, n = 0;

    if (l->v.n == 0)
        return 0;
    qsort(l->v.v, l->v.n, sizeof *l->v.v, by_path);
    idx = malloc(l->v.n * sizeof *idx);
    if (!idx)
        return hm_err_set(l->err, HM_ENOMEM, NULL, -1, "out of memory listing files");
    for (i = 0; i < l->v.n; i++)
        idx[i] = &l->v.v[i];
    qsort(idx, l->v.n, sizeof *idx, by_file);
    for (i = 1; i < l->v.n; i++) {
        if (idx[i]->dev == idx[i - 1]->dev && idx[i]->ino == idx[i - 1]->ino) {
            free(idx[i]->path);
            idx[i]->path = NULL;
        }
    }
    free(idx);
    for (i = 0; i < l->v.n; i++)
        if (l->v.v[i].path)
            l->v.v[n++] = l->v.v[i];
    l->v.n = n;
    return 0;
}

static int list_path(struct lst *l, const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0)
        return hm_err_set(l->err, HM_EIO, path, -1, "cannot access: %s", strerror(errno));
    if (S_ISDIR(st.st_mode))
        return walk_dir(l, path, &st);
    return add(l, path, &st);   /* named directly: taken whatever its name */
}

int src_kineto_list(const char *const *paths, int npaths, char ***files, size_t *nfiles,
                    struct hm_err *err)
{
    struct lst l;
    char **outv = NULL;
    int rc = 0;

    memset(&l, 0, sizeof l);
    l.err = err;
    *files = NULL;
    *nfiles = 0;
    for (int i = 0; i < npaths && rc == 0; i++)
        rc = list_path(&l, paths[i]);
    if (rc == 0)
        rc = sort_dedup(&l);
    if (rc == 0 && l.v.n == 0)
        rc = hm_err_set(err, HM_EEMPTY, npaths > 0 ? paths[0] : NULL, -1,
                        "no .json or .json.gz trace files found%s",
                        npaths > 1 ? " in any of the paths given" : "");
    if (rc == 0 && !(outv = malloc(l.v.n * sizeof *outv)))
        rc = hm_err_set(err, HM_ENOMEM, NULL, -1, "out of memory listing files");
    for (size_t i = 0; i < l.v.n; i++) {
        if (rc == 0)
            outv[i] = l.v.v[i].path;
        else
            free(l.v.v[i].path);
    }
    if (rc == 0) {
        *files = outv;
        *nfiles = l.v.n;
    }
    HM_VEC_FREE(l.v);
    return rc;
}

void src_kineto_list_free(char **files, size_t n)
{
    if (!files)
        return;
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
}
