/* Whole trace files through the Kineto reader (src_kineto_read_mem: the
 * same load, walk and record building as a file on disk; gzip input is
 * detected by its magic as for files). A trace the reader accepts must
 * give a batch that survives the wire format (fuzz_check_batch). */
#include <stddef.h>
#include <stdint.h>

#include "collector/sources/kineto_json/kineto_json.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct src_kineto_opts opts = {.keep_args = 1};
    struct hm_batch *b = NULL;
    struct hm_err err;
    int rc;

    hm_err_clear(&err);
    rc = src_kineto_read_mem(data, size, "fuzz/rank-3.json", &opts, &b, &err);
    FUZZ_ASSERT((rc == 0) == (b != NULL));
    if (rc != 0) {
        /* Errors name the file and point inside the input (or say -1). */
        FUZZ_ASSERT(err.code == rc && err.msg[0] != '\0');
        FUZZ_ASSERT(err.offset >= -1);
        return 0;
    }
    FUZZ_ASSERT(b->source_bytes > 0);
    fuzz_check_batch(b);
    hm_batch_free(b);
    return 0;
}
