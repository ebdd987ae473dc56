/* Communication by process group (issue 18):
 *   process_groups  one row per group the matched collectives name: its
 *                   description, ranks, size, and parallelism dimension
 *                   (xr_pg_dimension);
 *   comm_exposed    per rank and step (step NULL: a rank without steps,
 *                   its whole run), per group: the time its collectives
 *                   ran (union) and the part of it when no computation
 *                   kernel ran on the rank (exposed). Time when several
 *                   groups' collectives run exposed together is split
 *                   evenly between them, so a step's exposed times add up
 *                   to its exposed communication. A rank without any GPU
 *                   kernel has no computation to hide behind: all of its
 *                   communication is exposed. */
#ifndef HM_ANALYSIS_CROSS_RANK_COMM_GROUPS_H
#define HM_ANALYSIS_CROSS_RANK_COMM_GROUPS_H

#include <stddef.h>

#include "cross_rank_int.h"

/* The dimension a group's name and description point to, token by token
 * (split at '_', '-', ':', ' ', '/'; DeviceMesh names its groups
 * "mesh_<dim>"): fsdp, dp, tp, pp, ep, cp, world (the default group);
 * NULL when none does. */
const char *xr_pg_dimension(const char *name, const char *desc);

/* Fills process_groups and comm_exposed from x's matched collectives. */
int xr_comm_groups(struct xr_ctx *x, struct hm_err *err);

#endif
