# Ranks that share no collective and so drift apart: every rank trains its
# own small model (no process group), and rank 0 starts its loop only once
# rank 1 finished 150 steps (it leaves a file, argv[1] + ".ahead"), so the
# other ranks run far ahead of it in steps. Each step
# sleeps 10 ms, as if waiting for data. The loop ends when the file named
# by argv[1] appears, or after argv[2] steps. Plain PyTorch: nothing here
# knows about htamerge.
import os
import sys
import time

import torch


def main():
    stop = sys.argv[1]
    most = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    torch.manual_seed(rank)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ahead = stop + ".ahead"
    if rank == 0:
        t0 = time.time()
        while not os.path.exists(ahead) and time.time() - t0 < 120:
            time.sleep(0.01)
    step = 0
    for step in range(most):
        x, y = torch.randn(16, 32), torch.randn(16, 1)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        time.sleep(0.01)
        if rank == 1 and step == 150:
            open(ahead, "w").close()
        if os.path.exists(stop):
            break
    print("rank %d stopped after step %d" % (rank, step))


if __name__ == "__main__":
    main()
