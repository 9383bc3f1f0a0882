"""Data-parallel training with PyTorch's own engine: ``torchrun`` + DistributedDataParallel.

Launched by ``torchrun --nproc_per_node N -m attnconv.train ...``, every process reads its rank from the
environment that torchrun sets (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``) and joins one process group: NCCL
between GPUs, gloo between CPU processes. Launched by plain ``python``, training runs in one process and
nothing here does any communication.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from .._checks import available_device
from .runs import check_device

__all__ = ["DistInfo", "all_reduce_sum", "barrier", "init_distributed", "shutdown_distributed"]


@dataclass(frozen=True)
class DistInfo:
    """Where this process sits: ``rank`` of ``world_size``, and the device it trains on."""

    rank: int
    world_size: int
    local_rank: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        """Rank 0 logs, writes results and checkpoints."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def _pick_device(device: str, local_rank: int, world: int) -> torch.device:
    """``"auto"``, ``"cpu"``, ``"cuda"`` (GPU ``LOCAL_RANK``) or ``"cuda:N"`` (GPU N, one process only), checked
    against this machine's GPUs."""
    if check_device(device) == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return torch.device("cpu")
    target = available_device("device", device)  # CUDA present, and GPU N for "cuda:N"
    if target.index is None:
        return torch.device("cuda", local_rank)
    if world > 1:
        raise ValueError(f"device={device!r} names one GPU, but {world} processes were launched: use device='cuda' "
                         "(each process takes GPU LOCAL_RANK)")
    return target


def init_distributed(device: str = "auto") -> DistInfo:
    """Join the process group torchrun set up (if any) and choose this process's device.

    With ``WORLD_SIZE`` > 1 in the environment, initialises ``torch.distributed`` with NCCL on CUDA or gloo on
    the CPU; each GPU process uses ``cuda:LOCAL_RANK``. In one process, ``device="cuda:N"`` picks GPU N.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    target = _pick_device(device, local_rank, world)
    if world > 1 and not dist.is_initialized():
        if target.type == "cuda":
            torch.cuda.set_device(target)
        dist.init_process_group("nccl" if target.type == "cuda" else "gloo")
    return DistInfo(rank, world, local_rank, target)


def all_reduce_sum(values: torch.Tensor, info: DistInfo) -> torch.Tensor:
    """The element-wise sum of ``values`` over all ranks (``values`` itself in one process)."""
    if info.distributed:
        values = values.clone()
        dist.all_reduce(values, op=dist.ReduceOp.SUM)
    return values


def barrier(info: DistInfo) -> None:
    if info.distributed:
        dist.barrier()


def shutdown_distributed(info: DistInfo) -> None:
    if info.distributed and dist.is_initialized():
        dist.destroy_process_group()
