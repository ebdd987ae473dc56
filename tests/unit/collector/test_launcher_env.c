/* Tests for collector/launcher_env: which launcher names the rank, Slurm
 * task lists, and that the child's environment keeps the user's values. */
#include "test.h"

#include "collector/launcher_env.h"

static int count(char **envp, const char *name)
{
    size_t n = strlen(name);
    int c = 0;
    for (; envp && *envp; envp++)
        c += !strncmp(*envp, name, n) && (*envp)[n] == '=';
    return c;
}

static void test_none(void)
{
    char *env[] = { "HOME=/root", "PATH=/bin", NULL };
    struct col_launcher l;

    CHECK_EQ_INT(col_env_launcher_from(env, &l, NULL), 0);
    CHECK_STR(l.kind, "none");
    CHECK_EQ_INT(l.rank, 0);
    CHECK_EQ_INT(l.size, 1);
    CHECK_EQ_INT(l.local_rank, 0);
    CHECK_EQ_INT(l.local_size, 1);
}

static void test_openmpi(void)
{
    /* mpirun inside a Slurm allocation: the batch step's SLURM_PROCID=0 is
     * inherited by every rank and must not count */
    char *env[] = { "SLURM_PROCID=0", "SLURM_NTASKS=16", "SLURM_STEP_ID=0",
                    "OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8",
                    "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=4",
                    "PMIX_RANK=5", NULL };
    struct col_launcher l;

    CHECK_EQ_INT(col_env_launcher_from(env, &l, NULL), 0);
    CHECK_STR(l.kind, "openmpi");
    CHECK_EQ_INT(l.rank, 5);
    CHECK_EQ_INT(l.size, 8);
    CHECK_EQ_INT(l.local_rank, 1);
    CHECK_EQ_INT(l.local_size, 4);
}

static void test_pmi(void)
{
    char *hydra[] = { "PMI_RANK=3", "PMI_SIZE=4", "MPI_LOCALRANKID=1", "MPI_LOCALNRANKS=2", NULL };
    /* srun --mpi=pmix: size and locals come from Slurm, which agrees on the rank */
    char *pmix[] = { "PMIX_RANK=6", "SLURM_STEP_ID=2", "SLURM_PROCID=6", "SLURM_NTASKS=8",
                     "SLURM_LOCALID=2", "SLURM_NODEID=1", "SLURM_TASKS_PER_NODE=4(x2)", NULL };
    /* PMIx alone does not say the size */
    char *alone[] = { "PMIX_RANK=2", NULL };
    struct col_launcher l;

    CHECK_EQ_INT(col_env_launcher_from(hydra, &l, NULL), 0);
    CHECK_STR(l.kind, "pmi");
    CHECK_EQ_INT(l.rank, 3);
    CHECK_EQ_INT(l.size, 4);
    CHECK_EQ_INT(l.local_rank, 1);
    CHECK_EQ_INT(l.local_size, 2);

    CHECK_EQ_INT(col_env_launcher_from(pmix, &l, NULL), 0);
    CHECK_STR(l.kind, "pmi");
    CHECK_EQ_INT(l.rank, 6);
    CHECK_EQ_INT(l.size, 8);
    CHECK_EQ_INT(l.local_rank, 2);
    CHECK_EQ_INT(l.local_size, 4);

    CHECK_EQ_INT(col_env_launcher_from(alone, &l, NULL), 0);
    CHECK_EQ_INT(l.rank, 2);
    CHECK_EQ_INT(l.size, -1);
    CHECK_EQ_INT(l.local_rank, -1);
}

static void test_slurm(void)
{
    char *step[] = { "SLURM_STEP_ID=0", "SLURM_PROCID=9", "SLURM_NTASKS=11",
                     "SLURM_STEP_NUM_TASKS=10", "SLURM_LOCALID=1", "SLURM_NODEID=2",
                     "SLURM_STEP_TASKS_PER_NODE=4(x2),2", "SLURM_TASKS_PER_NODE=1(x3)", NULL };
    char *per_node[] = { "SLURM_STEPID=0", "SLURM_PROCID=1", "SLURM_NTASKS=4",
                         "SLURM_LOCALID=1", "SLURM_NTASKS_PER_NODE=2", NULL };
    /* a batch script, no srun: one process */
    char *batch[] = { "SLURM_PROCID=0", "SLURM_NTASKS=8", "SLURM_TASKS_PER_NODE=4(x2)", NULL };
    struct col_launcher l;

    CHECK_EQ_INT(col_env_launcher_from(step, &l, NULL), 0);
    CHECK_STR(l.kind, "slurm");
    CHECK_EQ_INT(l.rank, 9);
    CHECK_EQ_INT(l.size, 10);
    CHECK_EQ_INT(l.local_rank, 1);
    CHECK_EQ_INT(l.local_size, 2);   /* node 2 is the third: "2" */

    CHECK_EQ_INT(col_env_launcher_from(per_node, &l, NULL), 0);
    CHECK_EQ_INT(l.rank, 1);
    CHECK_EQ_INT(l.size, 4);
    CHECK_EQ_INT(l.local_size, 2);

    CHECK_EQ_INT(col_env_launcher_from(batch, &l, NULL), 0);
    CHECK_STR(l.kind, "none");
    CHECK_EQ_INT(l.size, 1);
}

static void test_bad_values(void)
{
    char *nan[] = { "OMPI_COMM_WORLD_RANK=two", NULL };
    char *range[] = { "OMPI_COMM_WORLD_RANK=4", "OMPI_COMM_WORLD_SIZE=4", NULL };
    char *list[] = { "SLURM_STEP_ID=0", "SLURM_PROCID=0", "SLURM_TASKS_PER_NODE=4(x", NULL };
    char *neg[] = { "PMI_RANK=-1", NULL };
    struct col_launcher l;
    struct hm_err err;

    hm_err_clear(&err);
    CHECK_EQ_INT(col_env_launcher_from(nan, &l, &err), HM_EFORMAT);
    CHECK_CONTAINS(err.msg, "OMPI_COMM_WORLD_RANK='two'");
    CHECK_EQ_INT(col_env_launcher_from(range, &l, &err), HM_EFORMAT);
    CHECK_CONTAINS(err.msg, "rank 4 of 4");
    CHECK_EQ_INT(col_env_launcher_from(list, &l, &err), HM_EFORMAT);
    CHECK_CONTAINS(err.msg, "SLURM_TASKS_PER_NODE");
    CHECK_EQ_INT(col_env_launcher_from(neg, &l, &err), HM_EFORMAT);
    CHECK_EQ_INT(col_env_launcher_from(nan, &l, NULL), HM_EFORMAT);   /* err may be NULL */
}

static void test_build_adds(void)
{
    char *base[] = { "PATH=/usr/bin", "HOME=/home/u", NULL };
    char *extra[] = { "CUDA_INJECTION64_PATH=/opt/inj.so", "HTAMERGE_RING=/htamerge-1-3", NULL };
    struct col_env_in in;
    struct hm_err err;
    char **env = NULL;

    col_env_in_init(&in);
    in.base = base;
    in.extra = extra;
    in.rank = 3;
    in.local_rank = 1;
    in.world_size = 4;
    in.local_world_size = 2;
    in.master_addr = "node7";
    in.master_port = 29512;
    in.trace_dir = "/tmp/run/rank-3";
    in.run_start_ns = 1700000000123456789ll;
    CHECK_EQ_INT(col_env_build(&in, &env, &err), 0);
    CHECK(env != NULL);
    CHECK_STR(env[0], "PATH=/usr/bin");   /* base first, in order */
    CHECK_STR(env[1], "HOME=/home/u");
    CHECK_STR(col_env_get(env, "RANK"), "3");
    CHECK_STR(col_env_get(env, "LOCAL_RANK"), "1");
    CHECK_STR(col_env_get(env, "WORLD_SIZE"), "4");
    CHECK_STR(col_env_get(env, "LOCAL_WORLD_SIZE"), "2");
    CHECK_STR(col_env_get(env, "MASTER_ADDR"), "node7");
    CHECK_STR(col_env_get(env, "MASTER_PORT"), "29512");
    CHECK_STR(col_env_get(env, "HTAMERGE_TRACE_DIR"), "/tmp/run/rank-3");
    CHECK_STR(col_env_get(env, "HTAMERGE_RUN_START_NS"), "1700000000123456789");
    CHECK_STR(col_env_get(env, "CUDA_INJECTION64_PATH"), "/opt/inj.so");
    CHECK_STR(col_env_get(env, "HTAMERGE_RING"), "/htamerge-1-3");
    CHECK(col_env_get(env, "GROUP_RANK") == NULL);
    CHECK(col_env_get(env, "RANKX") == NULL);
    col_env_free(env);
}

static void test_build_user_wins(void)
{
    /* the user set RANK, MASTER_PORT and the injection path already */
    char *base[] = { "RANK=0", "MASTER_PORT=1234", "CUDA_INJECTION64_PATH=/mine.so",
                     "MASTER_PORT=999", "X=1", NULL };
    char *extra[] = { "CUDA_INJECTION64_PATH=/ours.so", "MASTER_ADDR=from-extra",
                      "MASTER_ADDR=second", NULL };
    struct col_env_in in;
    struct hm_err err;
    char **env = NULL;

    col_env_in_init(&in);
    in.base = base;
    in.extra = extra;
    in.rank = 7;
    in.master_port = 29500;
    in.master_addr = "computed";
    in.world_size = 8;
    CHECK_EQ_INT(col_env_build(&in, &env, &err), 0);
    CHECK_STR(col_env_get(env, "RANK"), "0");
    CHECK_EQ_INT(count(env, "RANK"), 1);
    CHECK_STR(col_env_get(env, "MASTER_PORT"), "1234");
    CHECK_EQ_INT(count(env, "MASTER_PORT"), 2);    /* the user's duplicate is kept as is */
    CHECK_STR(col_env_get(env, "CUDA_INJECTION64_PATH"), "/mine.so");
    CHECK_EQ_INT(count(env, "CUDA_INJECTION64_PATH"), 1);
    CHECK_STR(col_env_get(env, "MASTER_ADDR"), "from-extra");   /* extra beats computed */
    CHECK_EQ_INT(count(env, "MASTER_ADDR"), 1);
    CHECK_STR(col_env_get(env, "WORLD_SIZE"), "8");
    CHECK(col_env_get(env, "LOCAL_RANK") == NULL);   /* left unset */
    CHECK(col_env_get(env, "HTAMERGE_TRACE_DIR") == NULL);
    col_env_free(env);
}

static void test_build_environ_and_errors(void)
{
    char *bad[] = { "NOEQUALS", NULL };
    char *empty_name[] = { "=x", NULL };
    char *nothing[] = { NULL };
    struct col_env_in in;
    struct hm_err err;
    char **env = (char **)1;

    /* environ is the default base */
    setenv("HM_TEST_USER_VAR", "kept", 1);
    setenv("LOCAL_RANK", "5", 1);
    col_env_in_init(&in);
    in.local_rank = 0;
    in.rank = 2;
    CHECK_EQ_INT(col_env_build(&in, &env, &err), 0);
    CHECK_STR(col_env_get(env, "HM_TEST_USER_VAR"), "kept");
    CHECK_STR(col_env_get(env, "LOCAL_RANK"), "5");
    CHECK_STR(col_env_get(env, "RANK"), "2");
    col_env_free(env);
    unsetenv("LOCAL_RANK");

    in.extra = bad;
    CHECK_EQ_INT(col_env_build(&in, &env, &err), HM_EINVAL);
    CHECK(env == NULL);
    CHECK_CONTAINS(err.msg, "NOEQUALS");
    in.extra = empty_name;
    CHECK_EQ_INT(col_env_build(&in, &env, &err), HM_EINVAL);

    /* empty base, nothing added: an empty array, not NULL */
    col_env_in_init(&in);
    in.base = nothing;
    CHECK_EQ_INT(col_env_build(&in, &env, &err), 0);
    CHECK(env != NULL && env[0] == NULL);
    col_env_free(env);
    col_env_free(NULL);
}

/* The Python hooks' bootstrap goes first on PYTHONPATH; the user's entries
 * stay after it; an empty PYTHONPATH is not kept (it would add the working
 * directory). */
static void test_build_python_path(void)
{
    char *with[] = { "PYTHONPATH=/u/a:/u/b", "X=1", NULL };
    char *empty[] = { "PYTHONPATH=", NULL };
    char *none[] = { "X=1", NULL };
    struct col_env_in in;
    struct hm_err err;
    char **env;

    col_env_in_init(&in);
    in.python_path = "/opt/hm/python";
    in.base = with;
    CHECK_EQ_INT(col_env_build(&in, &env, &err), 0);
    CHECK_STR(col_env_get(env, "PYTHONPATH"), "/opt/hm/python:/u/a:/u/b");
    CHECK_STR(env[0], "PYTHONPATH=/opt/hm/python:/u/a:/u/b");   /* in place, order kept */
    col_env_free(env);
    in.base = empty;
    CHECK_EQ_INT(col_env_build(&in, &env, &err), 0);
    CHECK_STR(col_env_get(env, "PYTHONPATH"), "/opt/hm/python");
    col_env_free(env);
    in.base = none;
    CHECK_EQ_INT(col_env_build(&in, &env, &err), 0);
    CHECK_STR(col_env_get(env, "PYTHONPATH"), "/opt/hm/python");
    col_env_free(env);
    in.python_path = NULL;   /* off: the user's value untouched */
    in.base = with;
    CHECK_EQ_INT(col_env_build(&in, &env, &err), 0);
    CHECK_STR(col_env_get(env, "PYTHONPATH"), "/u/a:/u/b");
    col_env_free(env);
}

int main(void)
{
    test_none();
    test_openmpi();
    test_pmi();
    test_slurm();
    test_bad_values();
    test_build_adds();
    test_build_user_wins();
    test_build_environ_and_errors();
    test_build_python_path();
    return hm_test_done();
}
