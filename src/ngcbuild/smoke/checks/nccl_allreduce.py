"""One rank of the NCCL all-reduce check, started by torchrun (or torch.distributed.launch) with one
process per visible GPU. Every rank contributes arange(n) + rank in float64: the sum is exact in
floating point, so any difference is a transport or reduction error, not rounding.

Exit status 0 and the line `allreduce ok world=W` on rank 0 when every rank saw the exact sum."""

import os
import sys

import torch
import torch.distributed as dist

N = 1 << 20


def local_rank() -> int:
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    for arg in sys.argv[1:]:  # torch.distributed.launch without --use_env passes --local_rank=N
        if arg.startswith(("--local_rank=", "--local-rank=")):
            return int(arg.split("=", 1)[1])
    raise SystemExit("neither LOCAL_RANK nor --local_rank given: start me with torchrun")


def main() -> int:
    device = local_rank()
    torch.cuda.set_device(device)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    tensor = torch.arange(N, dtype=torch.float64, device="cuda") + rank
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    expected = torch.arange(N, dtype=torch.float64, device="cuda") * world + world * (world - 1) // 2
    wrong = int((tensor != expected).sum())
    verdict = torch.tensor([wrong], dtype=torch.int64, device="cuda")
    dist.all_reduce(verdict, op=dist.ReduceOp.SUM)
    if rank == 0:
        outcome = "ok" if int(verdict) == 0 else "WRONG"
        print(f"allreduce {outcome} world={world} wrong_elements={int(verdict)}", flush=True)
    dist.destroy_process_group()
    return 0 if int(verdict) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
