/* The NCCL profiler-plugin ABI, versions 5 and 4, declared by htamerge from
 * the published layout (NCCL's src/include/plugin/profiler/profiler_v5.h and
 * profiler_v4.h, event bits and states from nccl_profiler.h): NCCL does not
 * install this header. Layouts must match NCCL's byte for byte; only
 * members that exist in NCCL's structs appear, in NCCL's order. */
#ifndef INJ_NCCL_ABI_H
#define INJ_NCCL_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int inj_nccl_result;   /* ncclResult_t; 0 = ncclSuccess */
typedef void (*inj_nccl_logger)(int level, unsigned long flags, const char *file, int line,
                                const char *fmt, ...);

/* Event type bits (eActivationMask and descr.type). */
enum {
    INJ_NCCL_GROUP = 1 << 0, INJ_NCCL_COLL = 1 << 1, INJ_NCCL_P2P = 1 << 2,
    INJ_NCCL_PROXY_OP = 1 << 3, INJ_NCCL_PROXY_STEP = 1 << 4, INJ_NCCL_PROXY_CTRL = 1 << 5,
    INJ_NCCL_KERNEL_CH = 1 << 6, INJ_NCCL_NET_PLUGIN = 1 << 7, INJ_NCCL_GROUP_API = 1 << 8,
    INJ_NCCL_COLL_API = 1 << 9, INJ_NCCL_P2P_API = 1 << 10, INJ_NCCL_KERNEL_LAUNCH = 1 << 11,
};

/* ncclProfilerEventState_t values we act on. */
enum { INJ_NCCL_STATE_KERNEL_CH_STOP = 22 };

typedef struct {
    uint64_t type;            /* one INJ_NCCL_* bit */
    void *parentObj;          /* our handle of the parent event, or NULL */
    int rank;
    union {
        struct { bool graphCaptured; int groupDepth; } groupApi;
        struct {
            const char *func; size_t count; const char *datatype; int root; void *stream;
            bool graphCaptured;
        } collApi;
        struct {
            const char *func; size_t count; const char *datatype; void *stream; bool graphCaptured;
        } p2pApi;
        struct { void *stream; } kernelLaunch;
        struct {
            uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff; size_t count;
            int root; const char *datatype; uint8_t nChannels; uint8_t nWarps; const char *algo;
            const char *proto; void *parentGroup;
        } coll;
        struct {
            const char *func; void *buff; const char *datatype; size_t count; int peer;
            uint8_t nChannels; void *parentGroup;
        } p2p;
        struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; } proxyOp;
        struct { int step; } proxyStep;
        struct { uint8_t channelId; uint64_t pTimer; } kernelCh;   /* pTimer: GPU globaltimer start */
        struct { int64_t id; void *data; } netPlugin;
    };
} inj_nccl_descr_v5;

/* v4: a one-byte type and no API events; the union members it has share
 * v5's layout up to v5's trailing parentGroup. */
typedef struct {
    uint8_t type;
    void *parentObj;
    int rank;
    union {
        struct {
            uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff; size_t count;
            int root; const char *datatype; uint8_t nChannels; uint8_t nWarps; const char *algo;
            const char *proto;
        } coll;
        struct { const char *func; void *buff; const char *datatype; size_t count; int peer; uint8_t nChannels; } p2p;
        struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; } proxyOp;
        struct { int step; } proxyStep;
        struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
        struct { int64_t id; void *data; } netPlugin;
    };
} inj_nccl_descr_v4;

typedef union {
    struct { size_t transSize; } proxyStep;
    struct { int appendedProxyOps; } proxyCtrl;
    struct { void *data; } netPlugin;
    struct { uint64_t pTimer; } kernelCh;   /* GPU globaltimer stop */
} inj_nccl_state_args;                     /* v4 and v5 alike */

typedef struct {
    const char *name;
    inj_nccl_result (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName,
                            int nNodes, int nranks, int rank, inj_nccl_logger logfn);
    inj_nccl_result (*startEvent)(void *context, void **eHandle, inj_nccl_descr_v5 *eDescr);
    inj_nccl_result (*stopEvent)(void *eHandle);
    inj_nccl_result (*recordEventState)(void *eHandle, int eState, inj_nccl_state_args *eStateArgs);
    inj_nccl_result (*finalize)(void *context);
} inj_nccl_profiler_v5;

typedef struct {
    const char *name;
    inj_nccl_result (*init)(void **context, int *eActivationMask, const char *commName, uint64_t commHash,
                            int nNodes, int nranks, int rank, inj_nccl_logger logfn);
    inj_nccl_result (*startEvent)(void *context, void **eHandle, inj_nccl_descr_v4 *eDescr);
    inj_nccl_result (*stopEvent)(void *eHandle);
    inj_nccl_result (*recordEventState)(void *eHandle, int eState, inj_nccl_state_args *eStateArgs);
    inj_nccl_result (*finalize)(void *context);
} inj_nccl_profiler_v4;

_Static_assert(offsetof(inj_nccl_descr_v5, coll) == 24 && offsetof(inj_nccl_descr_v4, coll) == 24,
               "descriptor union at byte 24");
_Static_assert(offsetof(inj_nccl_descr_v5, coll.nChannels) == 24 + 56, "coll.nChannels");
_Static_assert(offsetof(inj_nccl_descr_v5, kernelCh.pTimer) == 24 + 8, "kernelCh.pTimer");

/* The exported plugin structs (nccl.c). */
extern __attribute__((visibility("default"))) const inj_nccl_profiler_v5 ncclProfiler_v5;
extern __attribute__((visibility("default"))) const inj_nccl_profiler_v4 ncclProfiler_v4;

#endif
