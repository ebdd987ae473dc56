"""A one-rank NCCL all_reduce loop (tests/gpu/run_device.sh): NCCL's
profiler plugin sees a communicator of one rank; prints the expected count."""
import os

import torch
import torch.distributed as dist

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
os.environ.setdefault("RANK", "0")
os.environ.setdefault("WORLD_SIZE", "1")
N = 50
torch.cuda.set_device(0)
dist.init_process_group("nccl", device_id=torch.device("cuda:0"))
x = torch.ones(1 << 20, device="cuda")
for i in range(N):
    torch.cuda.nvtx.range_push("allreduce")
    dist.all_reduce(x)
    torch.cuda.nvtx.range_pop()
b = torch.ones(1 << 10, device="cuda")
for i in range(5):
    dist.broadcast(b, 0)
torch.cuda.synchronize()
print("EXPECT allreduce=%d broadcast=5 nranks=1 value=%.0f" % (N, x[0].item()), flush=True)
dist.destroy_process_group()
