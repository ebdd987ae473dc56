/* Who reads which trace file in a parallel ingest: the listing of the
 * paths given, shared folders (one listing, by rank 0) or node-local ones
 * (one listing per host, united at rank 0 under "host:path" names).
 * Neither reads the files (ingest_send.c) nor merges (merger/ingest_mpi.c).
 * Every collective here runs on every rank whatever failed before it, and
 * the verdict is rank 0's, broadcast: a failure never leaves a rank waiting. */
#include "ingest_list.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/sources/kineto_json/kineto_json.h"

enum { HOST_LEN = sizeof(((struct col_ingest_list *)0)->host) };

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) /* a collective half done cannot be unwound: end the job */
        MPI_Abort(MPI_COMM_WORLD, 1);
    return p;
}

/* Bytes of the names joined by NULs, each prefixed "prefix:" when prefix
 * is not empty; writes them to buf unless buf is NULL. */
static size_t join(char *const *files, size_t n, const char *prefix, char *buf)
{
    size_t at = 0, plen = strlen(prefix);

    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(files[i]) + 1;
        if (plen && buf) {
            memcpy(buf + at, prefix, plen);
            buf[at + plen] = ':';
        }
        at += plen ? plen + 1 : 0;
        if (buf)
            memcpy(buf + at, files[i], len);
        at += len;
    }
    return at;
}

/* n names joined by NULs -> an owned list, appended to *v at *nv. */
static void split(const char *buf, size_t n, char ***v, size_t *nv)
{
    char **nvv = realloc(*v, (*nv + n + 1) * sizeof **v);
    if (!nvv)
        MPI_Abort(MPI_COMM_WORLD, 1);
    *v = nvv;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(buf);
        (*v)[*nv] = xmalloc(len + 1);
        memcpy((*v)[(*nv)++], buf, len + 1);
        buf += len + 1;
    }
}

/* The root's list to every rank of c: its count (-1: the listing failed),
 * then the names joined by NULs. Returns the count. */
static long long bcast_list(MPI_Comm c, char ***files, size_t *nfiles, long long n)
{
    long long bytes = 0;
    char *buf;
    int me;

    MPI_Comm_rank(c, &me);
    MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, c);
    if (n < 0)
        return n;
    if (me == 0)
        bytes = (long long)join(*files, *nfiles, "", NULL);
    MPI_Bcast(&bytes, 1, MPI_LONG_LONG, 0, c);
    buf = xmalloc((size_t)bytes);
    if (me == 0)
        join(*files, *nfiles, "", buf);
    MPI_Bcast(buf, (int)bytes, MPI_CHAR, 0, c);
    if (me != 0)
        split(buf, (size_t)n, files, nfiles);
    free(buf);
    return n;
}

/* Lists the paths here: the count, 0 for none, -1 on failure. */
static long long list_here(const char *const *paths, int npaths, struct col_ingest_list *out, struct hm_err *err)
{
    int rc = src_kineto_list(paths, npaths, &out->files, &out->nfiles, err);

    if (rc == HM_EEMPTY && out->host[0]) { /* a host without traces: the others may have them */
        hm_err_clear(err);
        return 0;
    }
    return rc ? -1 : (long long)out->nfiles;
}

static void host_name(char *host)
{
    const char *env = getenv("HTAMERGE_HOSTNAME"); /* simulated hosts on one machine */

    memset(host, 0, HOST_LEN);
    if (env && env[0])
        snprintf(host, HOST_LEN, "%s", env);
    else if (gethostname(host, HOST_LEN - 1) != 0 || !host[0])
        snprintf(host, HOST_LEN, "localhost");
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What each rank tells rank 0 about its host: the host leader its count
 * (-1 failed), the bytes of its names and the host's readers; others zeros. */
struct host_note {
    long long n, bytes, readers;
};

/* Rank 0's checks of the hosts' notes; 0 or the failure, in err. */
static int judge(const struct host_note *notes, const char *names, int size, size_t total, struct hm_err *err)
{
    for (int j = 0; j < size; j++) {
        const char *h = names + (size_t)j * HOST_LEN;
        if (notes[j].n < 0)
            return hm_err_set(err, HM_EIO, NULL, -1, "listing the trace folders failed on host %s", h);
        if (notes[j].n > 0 && notes[j].readers == 0)
            return hm_err_set(err, HM_EINVAL, NULL, -1,
                              "host %s has %lld trace files but no rank to read them (rank 0 only "
                              "writes; with --shards, so does each host's first other rank): start "
                              "another rank there",
                              h, notes[j].n);
    }
    if (total == 0)
        return hm_err_set(err, HM_EEMPTY, NULL, -1, "no .json or .json.gz trace files found on any host");
    return 0;
}

/* Every host leader's names, prefixed with its host, united at rank 0
 * (which replaces its own host's list with the union). Returns the verdict. */
static int unite(struct col_ingest_list *out, struct host_note mine, const char *names, struct hm_err *err)
{
    struct host_note *notes = NULL;
    int rank, size, rc = 0, *counts = NULL, *displs = NULL;
    char *blob = NULL, *all = NULL;
    size_t total = 0;
    long long sum = 0;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        notes = xmalloc((size_t)size * sizeof *notes);
        counts = xmalloc((size_t)size * sizeof *counts);
        displs = xmalloc((size_t)size * sizeof *displs);
    }
    MPI_Gather(&mine, 3, MPI_LONG_LONG, notes, 3, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    blob = xmalloc((size_t)mine.bytes);
    if (mine.bytes)
        join(out->files, out->nfiles, out->host, blob);
    for (int j = 0; rank == 0 && j < size; j++) {
        counts[j] = (int)notes[j].bytes;
        displs[j] = (int)sum;
        sum += notes[j].bytes;
        total += notes[j].n > 0 ? (size_t)notes[j].n : 0;
    }
    if (rank == 0)
        all = xmalloc((size_t)sum);
    MPI_Gatherv(blob, (int)mine.bytes, MPI_CHAR, all, counts, displs, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        rc = judge(notes, names, size, total, err);
        src_kineto_list_free(out->files, out->nfiles);
        out->files = NULL;
        out->nfiles = 0;
        for (int j = 0; rc == 0 && j < size; j++)
            if (notes[j].n > 0)
                split(all + displs[j], (size_t)notes[j].n, &out->files, &out->nfiles);
        if (out->nfiles)
            qsort(out->files, out->nfiles, sizeof *out->files, cmp_str);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(notes);
    free(counts);
    free(displs);
    free(blob);
    free(all);
    return rc;
}

static int node_local(const char *const *paths, int npaths, int sharded, struct col_ingest_list *out,
                      struct hm_err *err)
{
    struct host_note mine = {0, 0, 0};
    int rank, size, hrank, hsize, color = 0, rc;
    long long n = 0;
    char *names;
    MPI_Comm host;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    host_name(out->host);
    names = xmalloc((size_t)size * HOST_LEN);
    MPI_Allgather(out->host, HOST_LEN, MPI_CHAR, names, HOST_LEN, MPI_CHAR, MPI_COMM_WORLD);
    while (strncmp(names + (size_t)color * HOST_LEN, out->host, HOST_LEN) != 0)
        color++; /* the host's first rank: rank 0's host is colour 0 */
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &host);
    MPI_Comm_rank(host, &hrank);
    MPI_Comm_size(host, &hsize);
    if (hrank == 0)
        n = list_here(paths, npaths, out, err);
    n = bcast_list(host, &out->files, &out->nfiles, n);
    /* Rank 0 only writes: on its host the other ranks read. Sharded, the
     * host's first other rank writes its shard and the rest read. */
    {
        int skip = (color == 0) + sharded;
        out->host_color = color;
        out->shard_writer = sharded && hrank == (color == 0);
        out->first = out->shard_writer || hrank < skip ? 0 : (size_t)(hrank - skip);
        out->step = out->shard_writer || hrank < skip || hsize <= skip ? 0 : (size_t)(hsize - skip);
        if (hrank == 0)
            mine = (struct host_note){n, n > 0 ? (long long)join(out->files, out->nfiles, out->host, NULL) : 0,
                                      hsize > skip ? hsize - skip : 0};
    }
    rc = unite(out, mine, names, err);
    MPI_Comm_free(&host);
    free(names);
    return rc;
}

static int shared(const char *const *paths, int npaths, struct col_ingest_list *out, struct hm_err *err)
{
    int rank, size;
    long long n = 0;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0)
        n = list_here(paths, npaths, out, err);
    if (bcast_list(MPI_COMM_WORLD, &out->files, &out->nfiles, n) < 0)
        return rank == 0 ? err->code : HM_EIO;
    out->first = (size_t)rank - 1;
    out->step = (size_t)size - 1;
    return 0;
}

int col_ingest_list_share(const char *const *paths, int npaths, int node_local_dirs, struct col_ingest_list *out,
                          struct hm_err *err)
{
    int rc;

    memset(out, 0, sizeof *out);
    hm_err_clear(err);
    rc = node_local_dirs ? node_local(paths, npaths, node_local_dirs > 1, out, err)
                         : shared(paths, npaths, out, err);
    if (rc) {
        col_ingest_list_free(out);
        memset(out, 0, sizeof *out);
        return rc < 0 ? rc : HM_EIO;
    }
    return 0;
}

int col_ingest_list_share_sharded(const char *const *paths, int npaths, struct col_ingest_list *out,
                                  struct hm_err *err)
{
    return col_ingest_list_share(paths, npaths, 2, out, err);
}

void col_ingest_list_free(struct col_ingest_list *l)
{
    if (l && l->files)
        src_kineto_list_free(l->files, l->nfiles);
}

static size_t strip(const char *p, size_t end, const char *suffix)
{
    size_t n = strlen(suffix);
    return end > n && memcmp(p + end - n, suffix, n) == 0 ? end - n : end;
}

/* The length of the path's group key: its folder and name without the
 * trace suffixes and a last all-digit part (ingest_list.h). */
static size_t key_len(const char *p)
{
    const char *slash = strrchr(p, '/'), *base = slash ? slash + 1 : p;
    size_t end = strip(p, strip(p, strlen(p), ".gz"), ".json"), dot;

    end = strip(p, end, ".pt.trace");
    for (dot = end; dot > (size_t)(base - p) && p[dot - 1] != '.'; dot--)
        ;
    if (dot > (size_t)(base - p) + 1 && dot < end && strspn(p + dot, "0123456789") == end - dot)
        end = dot - 1;
    return end;
}

static uint64_t file_bytes(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

size_t col_ingest_group_end(char *const *files, size_t nfiles, size_t i)
{
    size_t k = i < nfiles ? key_len(files[i]) : 0, j = i + 1;
    uint64_t bytes = i < nfiles ? file_bytes(files[i]) : 0;

    while (j < nfiles && j - i < COL_INGEST_GROUP_MAX && key_len(files[j]) == k &&
           memcmp(files[j], files[i], k) == 0 && (bytes += file_bytes(files[j])) <= COL_INGEST_GROUP_BYTES)
        j++;
    return j;
}
