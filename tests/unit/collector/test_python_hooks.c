/* Which programs run under Python (collector/python_hooks.h): .py names,
 * interpreters named python*, and files whose #! line names python, found
 * as execvp finds them; nothing else. */
#include <sys/stat.h>
#include <unistd.h>

#include "collector/python_hooks.h"
#include "test.h"

static void write_exec(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    chmod(path, 0755);
}

int main(void)
{
    char dir[256], path_var[300], a[300], b[300], c[300];
    const char *tmp = getenv("HM_TMPDIR");

    snprintf(dir, sizeof dir, "%s/pyhooks-%d", tmp ? tmp : "/tmp", (int)getpid());
    CHECK_EQ_INT(mkdir(dir, 0700), 0);
    snprintf(a, sizeof a, "%s/train", dir);
    snprintf(b, sizeof b, "%s/tool", dir);
    snprintf(c, sizeof c, "%s/run.sh", dir);
    write_exec(a, "#!/usr/bin/env python3\nprint(1)\n");
    write_exec(b, "#!/usr/bin/python3.11 -u\n");
    write_exec(c, "#!/bin/sh\npython3 x.py\n");
    snprintf(path_var, sizeof path_var, "PATH=/nonexistent:%s", dir);
    char *envp[] = {path_var, NULL};

    CHECK_EQ_INT(col_py_is_python((char *[]){"train.py", "--epochs", "1", NULL}, envp), 1);
    CHECK_EQ_INT(col_py_is_python((char *[]){"python3", "-m", "mod", NULL}, envp), 1);
    CHECK_EQ_INT(col_py_is_python((char *[]){"/usr/bin/python3.11", "x.py", NULL}, envp), 1);
    CHECK_EQ_INT(col_py_is_python((char *[]){"train", NULL}, envp), 1);   /* found in PATH */
    CHECK_EQ_INT(col_py_is_python((char *[]){b, NULL}, envp), 1);
    CHECK_EQ_INT(col_py_is_python((char *[]){"run.sh", NULL}, envp), 0);  /* a shell script */
    CHECK_EQ_INT(col_py_is_python((char *[]){"htamerge-synth", NULL}, envp), 0);
    CHECK_EQ_INT(col_py_is_python((char *[]){"no-such-program", NULL}, envp), 0);
    CHECK_EQ_INT(col_py_is_python((char *[]){NULL}, envp), 0);
    unlink(a);
    unlink(b);
    unlink(c);
    rmdir(dir);
    return hm_test_done();
}
