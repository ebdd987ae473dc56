/* The NVTX v3 tool-injection ABI, declared by htamerge from the published
 * nvToolsExt.h and nvtxDetail/nvtxTypes.h, so that the library and its unit
 * tests build without the CUDA toolkit. nvtx_abi_check.c compares every
 * layout and value below with the real header whenever the toolkit is
 * found. Only what nvtx.c implements is declared. */
#ifndef INJ_NVTX_ABI_H
#define INJ_NVTX_ABI_H

#include <stddef.h>
#include <stdint.h>

/* nvtxEventAttributes_v2 */
typedef struct inj_nvtx_attr {
    uint16_t version;
    uint16_t size;            /* sizeof the caller's struct */
    uint32_t category;
    int32_t color_type;       /* INJ_NVTX_COLOR_ARGB or 0 */
    uint32_t color;
    int32_t payload_type;
    int32_t reserved0;
    union { uint64_t u64; int64_t i64; double d; } payload;
    int32_t message_type;     /* INJ_NVTX_MSG_* */
    union {
        const char *ascii;
        const wchar_t *unicode;
        const void *registered;   /* nvtxStringHandle_t */
    } message;
} inj_nvtx_attr;

enum {
    INJ_NVTX_COLOR_ARGB = 1,
    INJ_NVTX_MSG_ASCII = 1,
    INJ_NVTX_MSG_UNICODE = 2,
    INJ_NVTX_MSG_REGISTERED = 3,
};

/* NvtxCallbackModule and the callback ids of the two modules we fill. */
enum { INJ_NVTX_MODULE_CORE = 1, INJ_NVTX_MODULE_CORE2 = 5 };
enum {
    INJ_NVTX_CORE_MarkEx = 1, INJ_NVTX_CORE_MarkA = 2, INJ_NVTX_CORE_MarkW = 3,
    INJ_NVTX_CORE_RangeStartEx = 4, INJ_NVTX_CORE_RangeStartA = 5, INJ_NVTX_CORE_RangeStartW = 6,
    INJ_NVTX_CORE_RangeEnd = 7, INJ_NVTX_CORE_RangePushEx = 8, INJ_NVTX_CORE_RangePushA = 9,
    INJ_NVTX_CORE_RangePushW = 10, INJ_NVTX_CORE_RangePop = 11,
};
enum {
    INJ_NVTX_CORE2_DomainMarkEx = 1, INJ_NVTX_CORE2_DomainRangeStartEx = 2,
    INJ_NVTX_CORE2_DomainRangeEnd = 3, INJ_NVTX_CORE2_DomainRangePushEx = 4,
    INJ_NVTX_CORE2_DomainRangePop = 5, INJ_NVTX_CORE2_DomainRegisterStringA = 10,
    INJ_NVTX_CORE2_DomainRegisterStringW = 11, INJ_NVTX_CORE2_DomainCreateA = 12,
    INJ_NVTX_CORE2_DomainCreateW = 13,
};

/* Export tables (NvtxExportTableID, NvtxExportTableCallbacks,
 * NvtxExportTableVersionInfo). A module's table is an array of pointers to
 * the client's function-pointer slots, indexed by callback id; out_size is
 * the number of ids (valid ids are 1 .. out_size - 1). */
enum { INJ_NVTX_ETID_CALLBACKS = 1, INJ_NVTX_ETID_VERSIONINFO = 3 };
typedef void (*inj_nvtx_fn)(void);
struct inj_nvtx_etbl_callbacks {
    size_t struct_size;
    int (*get_module_function_table)(int module, inj_nvtx_fn ***out_table, unsigned int *out_size);
};
struct inj_nvtx_etbl_version {
    size_t struct_size;
    uint32_t version;
    uint32_t reserved0;
    void (*set_injection_nvtx_version)(uint32_t version);
};

#endif
