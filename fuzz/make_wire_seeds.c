/* Writes wire-format seeds for fuzz_wire: each trace named on the command
 * line is read (src_kineto_read), encoded (hm_wire_encode) and written to
 * OUTDIR/<base name>.hmb. Traces the reader refuses are skipped. A helper
 * for fuzz/make_seeds.py, not a fuzz target.
 * usage: make_wire_seeds OUTDIR TRACE... */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/sources/kineto_json/kineto_json.h"
#include "common/wire.h"

static int write_seed(const char *dir, const char *trace, const uint8_t *m, size_t n)
{
    const char *base = strrchr(trace, '/') ? strrchr(trace, '/') + 1 : trace;
    char path[4096];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s.hmb", dir, base);
    if (!(f = fopen(path, "wb")) || fwrite(m, 1, n, f) != n) {
        perror(path);
        if (f)
            fclose(f);
        return -1;
    }
    return fclose(f);
}

int main(int argc, char **argv)
{
    int rc = 0;

    if (argc < 3) {
        fprintf(stderr, "usage: make_wire_seeds OUTDIR TRACE...\n");
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        struct hm_batch *b = NULL;
        struct hm_err err;
        uint8_t *m = NULL;
        size_t n = 0;

        hm_err_clear(&err);
        if (src_kineto_read(argv[i], NULL, &b, &err) != 0)
            continue;
        if (hm_wire_encode(b, &m, &n, &err) != 0 || write_seed(argv[1], argv[i], m, n) != 0)
            rc = 1;
        free(m);
        hm_batch_free(b);
    }
    return rc;
}
