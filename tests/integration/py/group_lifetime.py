# A DDP loop over gloo whose process group must end with its owners: after
# destroy_process_group and the model's end, no reference to the group is
# left (a group kept alive into the interpreter's shutdown can abort the
# process there, when a gloo worker frees a finished call's tensor). Plain
# PyTorch: nothing here knows about htamerge. Prints "group freed" or
# exits 3.
import gc
import sys
import weakref

import torch
import torch.distributed as dist

import tiny_ddp


def main():
    rank, ddp, opt, gen = tiny_ddp.setup()
    group = weakref.ref(dist.distributed_c10d._get_default_group())
    for _ in range(int(sys.argv[1])):
        x, y = tiny_ddp.batch(gen)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
        dist.all_reduce(torch.ones(1))
    dist.destroy_process_group()
    del ddp, opt
    gc.collect()
    if group() is not None:
        print("rank %d: the process group outlived its owners" % rank)
        sys.exit(3)
    print("rank %d: group freed" % rank)


if __name__ == "__main__":
    main()
