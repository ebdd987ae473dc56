# The plain DDP script (ddp_plain.py) where rank 2 sleeps 20 ms before
# each step's forward. Plain PyTorch: nothing here knows about htamerge.
import os
import runpy
import sys

sys.argv = [sys.argv[0], sys.argv[1] if len(sys.argv) > 1 else "30", "2"]
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "ddp_plain.py"), run_name="__main__")
