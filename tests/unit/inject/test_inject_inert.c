/* Injection library without a ring (HTAMERGE_RING names none that exists):
 * every entry point returns success, captures nothing and never crashes, so
 * the training job runs as if the library were absent. NVTX is told to turn
 * itself into no-ops; NCCL gets an empty activation mask. */
#include <unistd.h>

#include "test.h"

#include "collector/sources/inject/cupti_none.c"
#include "collector/sources/inject/gpuclock.c"
#include "collector/sources/inject/inject.c"
#include "collector/sources/inject/nccl.c"
#include "collector/sources/inject/nvtx.c"
#include "collector/sources/inject/nvtx_stack.c"

static inj_nvtx_fn slot_fn[16];
static inj_nvtx_fn *slots[17];

static int fake_table(int module, inj_nvtx_fn ***out, unsigned int *size)
{
    (void)module;
    *out = slots;
    *size = 16;
    return 1;
}

static const struct inj_nvtx_etbl_callbacks fake_cb = {sizeof fake_cb, fake_table};

static const void *fake_export(unsigned int id)
{
    return id == INJ_NVTX_ETID_CALLBACKS ? &fake_cb : NULL;
}

int main(void)
{
    void *ctx = (void *)1, *h = (void *)1;
    int mask = -1;
    inj_nccl_descr_v5 d = {.type = INJ_NCCL_COLL};

    setenv("HTAMERGE_RING", "/hm-test-inject-no-such-ring", 1);
    for (int i = 1; i < 16; i++)
        slots[i] = &slot_fn[i];
    CHECK_EQ_INT(InitializeInjection(), 1);
    CHECK_EQ_INT(inj_get()->active, 0);
    CHECK_EQ_INT(InitializeInjectionNvtx2(fake_export), 0);
    for (int i = 1; i < 16; i++)
        CHECK(slot_fn[i] == NULL);
    CHECK_EQ_INT(ncclProfiler_v5.init(&ctx, 1, &mask, "c", 1, 2, 0, NULL), 0);
    CHECK(ctx == NULL);
    CHECK_EQ_INT(mask, 0);
    CHECK_EQ_INT(ncclProfiler_v5.startEvent(ctx, &h, &d), 0);
    CHECK(h == NULL);
    CHECK_EQ_INT(ncclProfiler_v5.stopEvent(NULL), 0);
    CHECK_EQ_INT(ncclProfiler_v5.finalize(NULL), 0);
    /* Direct calls of the callbacks (a client that initialised earlier) are harmless. */
    CHECK_EQ_INT(push_a("x"), 0);
    CHECK_EQ_INT(pop(), -1);
    mark_a("m");
    return hm_test_done();
}
