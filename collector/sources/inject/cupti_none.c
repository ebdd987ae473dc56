/* The CUPTI functions of a build without CUPTI headers (and of the unit
 * tests): no GPU activity capture; NVTX and NCCL capture are unaffected. */
#include "inject_int.h"

int inj_cupti_start(struct inj *g)
{
    inj_say_once(g, INJ_SAY_CUPTI, "htamerge/cupti unavailable",
                 "CUPTI capture off (built without CUPTI); NVTX and NCCL capture go on");
    return -1;
}

void inj_cupti_stop(struct inj *g)
{
    (void)g;
}

int64_t inj_cupti_stream_id(struct inj *g, void *stream)
{
    (void)g, (void)stream;
    return HM_NONE;
}

int inj_cupti_hand_over(struct inj *g)
{
    (void)g;
    return 1;
}

int inj_cupti_take_back(struct inj *g)
{
    (void)g;
    return 1;
}

int inj_cupti_record(struct inj *g, int on)
{
    (void)g, (void)on;
    return 1;
}
