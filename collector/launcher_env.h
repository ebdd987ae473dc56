/* The launcher's identity and the child's environment. col_env_launcher
 * reads which rank this process is from the variables an MPI launcher or
 * Slurm sets (no MPI calls); col_env_build gives the child the environment
 * torchrun would give it. It does not start the child (child.c) or talk
 * to the other ranks (the MPI layer picks MASTER_ADDR and the port). */
#ifndef COL_LAUNCHER_ENV_H
#define COL_LAUNCHER_ENV_H

#include <stdint.h>

#include "common/err.h"

/* What the launcher says about this process. */
struct col_launcher {
    const char *kind;   /* "openmpi", "pmi", "slurm" or "none"; a static string */
    int rank;           /* >= 0 */
    int size;           /* >= 1; -1 if the launcher does not say (PMIx alone) */
    int local_rank;     /* rank among the processes on this host; -1 if unknown */
    int local_size;     /* processes on this host; -1 if unknown */
};

/* Launcher identity.
 * Reads, first match wins:
 *   openmpi  OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
 *   pmi      PMI_RANK or PMIX_RANK; PMI_SIZE; MPI_LOCALRANKID / MPI_LOCALNRANKS
 *            (MPICH Hydra) or PMI_LOCAL_RANK / PMI_LOCAL_SIZE
 *   slurm    SLURM_PROCID inside a job step (SLURM_STEP_ID or SLURM_STEPID set:
 *            a batch script alone is one process, not rank 0 of SLURM_NTASKS);
 *            SLURM_STEP_NUM_TASKS or SLURM_NTASKS; SLURM_LOCALID; local size
 *            from SLURM_STEP_TASKS_PER_NODE or SLURM_TASKS_PER_NODE ("4(x2),3",
 *            indexed by SLURM_NODEID), else SLURM_NTASKS_PER_NODE
 *   none     rank 0 of 1, local 0 of 1
 * Fields the first launcher leaves unknown are taken from a later one only
 * if that one names the same rank (so Slurm variables inherited by an
 * mpirun inside an allocation are not mixed in). Returns 0, or HM_EFORMAT
 * when a variable is present but not a number, or the numbers contradict
 * (rank >= size); err names the variable. err may be NULL. */
int col_env_launcher(struct col_launcher *out, struct hm_err *err);

/* Same, reading envp (NULL-terminated NAME=VALUE) instead of environ. */
int col_env_launcher_from(char *const *envp, struct col_launcher *out, struct hm_err *err);

/* What htamerge adds to the child's environment. */
struct col_env_in {
    int rank;                /* RANK; < 0: leave unset */
    int local_rank;          /* LOCAL_RANK; < 0: leave unset */
    int world_size;          /* WORLD_SIZE; < 1: leave unset */
    int local_world_size;    /* LOCAL_WORLD_SIZE; < 1: leave unset */
    const char *master_addr; /* MASTER_ADDR; NULL: leave unset; borrowed */
    int master_port;         /* MASTER_PORT; <= 0: leave unset */
    const char *trace_dir;   /* HTAMERGE_TRACE_DIR; NULL: leave unset; borrowed */
    int64_t run_start_ns;    /* HTAMERGE_RUN_START_NS (Unix ns); <= 0: leave unset */
    const char *python_path; /* prepended to PYTHONPATH, the user's entries kept after it
                                (the Python hooks' bootstrap); NULL: leave it; borrowed */
    char *const *extra;      /* NULL-terminated NAME=VALUE list (CUDA_INJECTION64_PATH,
                                HTAMERGE_RING, ...), or NULL; borrowed */
    char *const *base;       /* environment to start from; NULL: environ; borrowed */
};

/* Sets every field of in to "leave unset" / NULL. */
void col_env_in_init(struct col_env_in *in);

/* Child environment.
 * Builds base plus htamerge's variables into a new NULL-terminated array
 * (*envp_out, owned by the caller: col_env_free). A variable already in
 * base is never changed: the user's value wins (except PYTHONPATH, which
 * python_path is put in front of). Among htamerge's own, an
 * entry of in->extra wins over the computed ones (and the first of two
 * extra entries wins). Base entries keep their order; added ones follow.
 * Returns 0, HM_EINVAL for an extra entry that is not NAME=VALUE (err
 * says which), or HM_ENOMEM; then *envp_out is NULL. */
int col_env_build(const struct col_env_in *in, char ***envp_out, struct hm_err *err);

/* Frees an array from col_env_build. NULL does nothing. */
void col_env_free(char **envp);

/* The value of name in envp (borrowed from envp), or NULL. */
const char *col_env_get(char *const *envp, const char *name);

#endif
