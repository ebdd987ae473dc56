/* Compile-time check that nvtx_abi.h matches the toolkit's NVTX header
 * (built only when the CUDA toolkit is found; never linked). */
#include <nvtx3/nvToolsExt.h>

#include "nvtx_abi.h"

#define SAME_FIELD(a, fa, b, fb) \
    _Static_assert(offsetof(a, fa) == offsetof(b, fb) && sizeof(((a *)0)->fa) == sizeof(((b *)0)->fb), #fa)

SAME_FIELD(inj_nvtx_attr, version, nvtxEventAttributes_t, version);
SAME_FIELD(inj_nvtx_attr, size, nvtxEventAttributes_t, size);
SAME_FIELD(inj_nvtx_attr, category, nvtxEventAttributes_t, category);
SAME_FIELD(inj_nvtx_attr, color_type, nvtxEventAttributes_t, colorType);
SAME_FIELD(inj_nvtx_attr, color, nvtxEventAttributes_t, color);
SAME_FIELD(inj_nvtx_attr, payload, nvtxEventAttributes_t, payload);
SAME_FIELD(inj_nvtx_attr, message_type, nvtxEventAttributes_t, messageType);
SAME_FIELD(inj_nvtx_attr, message, nvtxEventAttributes_t, message);
_Static_assert(sizeof(inj_nvtx_attr) == sizeof(nvtxEventAttributes_t), "attr size");
_Static_assert(INJ_NVTX_COLOR_ARGB == (int)NVTX_COLOR_ARGB, "argb");
_Static_assert(INJ_NVTX_MSG_ASCII == (int)NVTX_MESSAGE_TYPE_ASCII, "ascii");
_Static_assert(INJ_NVTX_MSG_UNICODE == (int)NVTX_MESSAGE_TYPE_UNICODE, "unicode");
_Static_assert(INJ_NVTX_MSG_REGISTERED == (int)NVTX_MESSAGE_TYPE_REGISTERED, "registered");
_Static_assert(INJ_NVTX_MODULE_CORE == (int)NVTX_CB_MODULE_CORE, "core");
_Static_assert(INJ_NVTX_MODULE_CORE2 == (int)NVTX_CB_MODULE_CORE2, "core2");
_Static_assert(INJ_NVTX_CORE_MarkEx == (int)NVTX_CBID_CORE_MarkEx && INJ_NVTX_CORE_MarkA == (int)NVTX_CBID_CORE_MarkA &&
               INJ_NVTX_CORE_MarkW == (int)NVTX_CBID_CORE_MarkW &&
               INJ_NVTX_CORE_RangeStartEx == (int)NVTX_CBID_CORE_RangeStartEx &&
               INJ_NVTX_CORE_RangeStartA == (int)NVTX_CBID_CORE_RangeStartA &&
               INJ_NVTX_CORE_RangeStartW == (int)NVTX_CBID_CORE_RangeStartW &&
               INJ_NVTX_CORE_RangeEnd == (int)NVTX_CBID_CORE_RangeEnd &&
               INJ_NVTX_CORE_RangePushEx == (int)NVTX_CBID_CORE_RangePushEx &&
               INJ_NVTX_CORE_RangePushA == (int)NVTX_CBID_CORE_RangePushA &&
               INJ_NVTX_CORE_RangePushW == (int)NVTX_CBID_CORE_RangePushW &&
               INJ_NVTX_CORE_RangePop == (int)NVTX_CBID_CORE_RangePop, "core ids");
_Static_assert(INJ_NVTX_CORE2_DomainMarkEx == (int)NVTX_CBID_CORE2_DomainMarkEx &&
               INJ_NVTX_CORE2_DomainRangeStartEx == (int)NVTX_CBID_CORE2_DomainRangeStartEx &&
               INJ_NVTX_CORE2_DomainRangeEnd == (int)NVTX_CBID_CORE2_DomainRangeEnd &&
               INJ_NVTX_CORE2_DomainRangePushEx == (int)NVTX_CBID_CORE2_DomainRangePushEx &&
               INJ_NVTX_CORE2_DomainRangePop == (int)NVTX_CBID_CORE2_DomainRangePop &&
               INJ_NVTX_CORE2_DomainRegisterStringA == (int)NVTX_CBID_CORE2_DomainRegisterStringA &&
               INJ_NVTX_CORE2_DomainRegisterStringW == (int)NVTX_CBID_CORE2_DomainRegisterStringW &&
               INJ_NVTX_CORE2_DomainCreateA == (int)NVTX_CBID_CORE2_DomainCreateA &&
               INJ_NVTX_CORE2_DomainCreateW == (int)NVTX_CBID_CORE2_DomainCreateW, "core2 ids");
_Static_assert(INJ_NVTX_ETID_CALLBACKS == (int)NVTX_ETID_CALLBACKS && INJ_NVTX_ETID_VERSIONINFO == (int)NVTX_ETID_VERSIONINFO,
               "etids");
SAME_FIELD(struct inj_nvtx_etbl_callbacks, get_module_function_table, NvtxExportTableCallbacks,
           GetModuleFunctionTable);
SAME_FIELD(struct inj_nvtx_etbl_version, set_injection_nvtx_version, NvtxExportTableVersionInfo,
           SetInjectionNvtxVersion);

/* An object file must declare something. */
int inj_nvtx_abi_checked(void);
int inj_nvtx_abi_checked(void)
{
    return 1;
}
