/* Which communicator a collector's link to its merger uses (transport.c);
 * the merger is rank 0 of it. MPI_COMM_WORLD unless set: a sharded
 * ingest's readers talk to their host's writer (merger/ingest_shards.c). */
#ifndef HM_COLLECTOR_LINK_COMM_H
#define HM_COLLECTOR_LINK_COMM_H

#include <mpi.h>

/* Before the first link is made; MPI_COMM_NULL goes back to the world. */
void col_link_set_comm(MPI_Comm c);
MPI_Comm col_link_comm(void);

#endif
