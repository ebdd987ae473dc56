/* The Python hooks' side in the collector: whether PROGRAM runs under
 * Python, and where the bootstrap (a folder holding sitecustomize.py, put
 * first on the child's PYTHONPATH) and libhtamerge-py.so (the bootstrap's
 * way into the ring, HTAMERGE_PY_LIB) are. What the hooks mark is in
 * collector/sources/python/_htamerge_hooks.py and man/htamerge.1, PYTHON
 * HOOKS. */
#ifndef COL_PYTHON_HOOKS_H
#define COL_PYTHON_HOOKS_H

#include <stddef.h>

/* 1 when argv (PROGRAM ARGS...) runs under Python: a name ending in ".py"
 * (child.c runs it with $HTAMERGE_PYTHON or python3), an interpreter whose
 * name starts with "python" (python3 -m mod, /usr/bin/python3.11 x.py), or
 * a file found as execvp would find it (PATH from envp, NULL: environ)
 * whose #! line names python (#!/usr/bin/env python3). Else 0. */
int col_py_is_python(char *const argv[], char *const envp[]);

/* Finds the bootstrap folder and the library beside the running
 * executable (build tree: python/ and libhtamerge-py.so) or in
 * <exe dir>/../lib/htamerge (installed). Returns 0 with both paths, -1 when
 * either is missing. */
int col_py_locate(char *dir, size_t dir_len, char *lib, size_t lib_len);

#endif
