/* The record model's small tables: category names and skip reasons. */
#include "record.h"

#include <string.h>

static const char *const cat_names[HM_CAT__COUNT] = {
    [HM_CAT_OTHER] = "other",
    [HM_CAT_CPU_OP] = "cpu_op",
    [HM_CAT_USER_ANNOTATION] = "user_annotation",
    [HM_CAT_GPU_USER_ANNOTATION] = "gpu_user_annotation",
    [HM_CAT_KERNEL] = "kernel",
    [HM_CAT_GPU_MEMCPY] = "gpu_memcpy",
    [HM_CAT_GPU_MEMSET] = "gpu_memset",
    [HM_CAT_CUDA_RUNTIME] = "cuda_runtime",
    [HM_CAT_CUDA_DRIVER] = "cuda_driver",
    [HM_CAT_CUDA_SYNC] = "cuda_sync",
    [HM_CAT_CUDA_EVENT] = "cuda_event",
    [HM_CAT_PYTHON_FUNCTION] = "python_function",
    [HM_CAT_COLLECTIVE_COMM] = "collective_comm",
    [HM_CAT_CPU_INSTANT_EVENT] = "cpu_instant_event",
    [HM_CAT_OVERHEAD] = "overhead",
    [HM_CAT_TRACE] = "Trace",
    [HM_CAT_NVTX] = "nvtx",
    [HM_CAT_CUDA_GRAPH] = "cuda_graph",
};

enum hm_cat hm_cat_parse(const char *s, unsigned len)
{
    for (int c = 1; c < HM_CAT__COUNT; c++) {
        if (strlen(cat_names[c]) == len && memcmp(cat_names[c], s, len) == 0)
            return (enum hm_cat)c;
    }
    /* Older PyTorch spelled some categories differently. */
    if (len == 6 && memcmp(s, "Kernel", 6) == 0)
        return HM_CAT_KERNEL;
    if (len == 6 && memcmp(s, "Memcpy", 6) == 0)
        return HM_CAT_GPU_MEMCPY;
    if (len == 6 && memcmp(s, "Memset", 6) == 0)
        return HM_CAT_GPU_MEMSET;
    if (len == 7 && memcmp(s, "Runtime", 7) == 0)
        return HM_CAT_CUDA_RUNTIME;
    if (len == 8 && memcmp(s, "Operator", 8) == 0)
        return HM_CAT_CPU_OP;
    return HM_CAT_OTHER;
}

const char *hm_cat_name(enum hm_cat cat)
{
    return (unsigned)cat < HM_CAT__COUNT ? cat_names[cat] : "other";
}

int hm_cat_is_gpu(enum hm_cat cat)
{
    return cat == HM_CAT_KERNEL || cat == HM_CAT_GPU_MEMCPY || cat == HM_CAT_GPU_MEMSET ||
           cat == HM_CAT_CUDA_SYNC || cat == HM_CAT_GPU_USER_ANNOTATION;
}

const char *hm_skip_name(enum hm_skip_reason r)
{
    switch (r) {
    case HM_SKIP_NO_DUR: return "no_dur";
    case HM_SKIP_BAD_VALUE: return "bad_value";
    case HM_SKIP_NO_CAT: return "no_cat";
    case HM_SKIP_UNSUPPORTED_PH: return "unsupported_ph";
    case HM_SKIP_NEGATIVE_DUR: return "negative_dur";
    case HM_SKIP_UNREADABLE_FILE: return "unreadable_file";
    default: return "unknown";
    }
}

const char *hm_step_source_name(enum hm_step_source s)
{
    switch (s) {
    case HM_STEP_PROFILER: return "profiler";
    case HM_STEP_HOOKS: return "hooks";
    case HM_STEP_NVTX: return "nvtx";
    case HM_STEP_INFERRED: return "inferred";
    default: return "unknown";
    }
}

enum hm_step_source hm_step_source_parse(const char *s)
{
    for (int i = 1; s && i < HM_STEP__COUNT; i++)
        if (!strcmp(s, hm_step_source_name((enum hm_step_source)i)))
            return (enum hm_step_source)i;
    return HM_STEP_PROFILER;
}
