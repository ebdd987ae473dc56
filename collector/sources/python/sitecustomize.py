# htamerge's Python bootstrap. `htamerge` puts this folder first on the
# PYTHONPATH of a program it runs under Python (collector/python_hooks.c), so
# Python's `site` imports this file at start-up. It:
#   1. runs the sitecustomize this one hides (the next one on sys.path), so
#      the program's environment is as it would be without htamerge;
#   2. takes this folder back off sys.path (the environment keeps it, for
#      child Python processes);
#   3. arms the hooks (_htamerge_hooks.py), which do nothing until the
#      program imports torch, and nothing at all outside htamerge (no
#      HTAMERGE_RING) or with HTAMERGE_PYTHON_HOOKS=0.
# Nothing here may change the program's results or exit status: a failure
# prints one line "htamerge: python hooks disabled: REASON" and the program
# runs on.


def _htamerge_boot():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))

    def same(p):
        try:
            return os.path.abspath(p or os.curdir) == here
        except Exception:
            return False

    # 1. The hidden sitecustomize: the first one on sys.path after ours.
    try:
        import importlib.machinery
        import importlib.util

        after = False
        for p in list(sys.path):
            if same(p):
                after = True
                continue
            if not after or not isinstance(p, str):
                continue
            spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [p])
            if spec is None or spec.loader is None:
                continue
            mod = importlib.util.module_from_spec(spec)
            sys.modules["sitecustomize"] = mod
            try:
                spec.loader.exec_module(mod)
            except Exception as e:  # as site.py reports a failing sitecustomize
                print("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s"
                      % (type(e).__name__, e), file=sys.stderr)
            break
    except Exception:
        pass

    # 2, 3.
    hooks = None
    try:
        if os.environ.get("HTAMERGE_RING") and os.environ.get("HTAMERGE_PYTHON_HOOKS", "1") != "0":
            import importlib.util

            spec = importlib.util.spec_from_file_location(
                "_htamerge_hooks", os.path.join(here, "_htamerge_hooks.py"))
            hooks = importlib.util.module_from_spec(spec)
            sys.modules["_htamerge_hooks"] = hooks
            spec.loader.exec_module(hooks)
    except Exception as e:
        try:
            sys.stderr.write("htamerge: python hooks disabled: %s: %s\n" % (type(e).__name__, e))
        except Exception:
            pass
        hooks = None
    sys.path[:] = [p for p in sys.path if not same(p)]
    if hooks is not None:
        hooks.install()


_htamerge_boot()
del _htamerge_boot
