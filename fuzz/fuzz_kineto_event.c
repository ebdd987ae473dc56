/* Single trace events: the input is the text of one (or a few, comma
 * separated) traceEvents elements, wrapped into a minimal trace so that
 * every mutation lands in the event walk and kineto_event.c rather than in
 * the top-level structure. Invariants as for whole files. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/sources/kineto_json/kineto_json.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char head[] = "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": 1, \"world_size\": 2},"
                           " \"baseTimeNanoseconds\": 1700000000000000000, \"traceEvents\": [";
static const char tail[] = "]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t hn = sizeof head - 1, tn = sizeof tail - 1;
    struct src_kineto_opts opts = {.keep_args = (size & 1) == 0};
    struct hm_batch *b = NULL;
    struct hm_err err;
    char *doc;
    int rc;

    if (size > (1u << 20))
        return 0;
    doc = malloc(hn + size + tn);
    if (!doc)
        return 0;
    memcpy(doc, head, hn);
    memcpy(doc + hn, data, size);
    memcpy(doc + hn + size, tail, tn);
    hm_err_clear(&err);
    rc = src_kineto_read_mem(doc, hn + size + tn, "fuzz/event.json", &opts, &b, &err);
    FUZZ_ASSERT((rc == 0) == (b != NULL));
    if (rc == 0) {
        /* rank 1 from the wrapper, unless the input closed the array and
         * added a distributedInfo of its own: a rank it read is never negative. */
        FUZZ_ASSERT(b->info.rank >= 0);
        fuzz_check_batch(b);
    } else {
        FUZZ_ASSERT(err.code == rc && err.msg[0] != '\0');
        /* The wrapper is valid JSON around the input: a reported offset
         * lies within the document or says unknown. */
        FUZZ_ASSERT(err.offset >= -1 && err.offset <= (int64_t)(hn + size + tn));
    }
    hm_batch_free(b);
    free(doc);
    return 0;
}
