"""Several processes through torch.distributed: DDP, launched by ``torchrun``.

``adl train --nproc N ...`` (or ``torchrun --nproc_per_node N --no-python adl train ...``)
starts N processes; each reads RANK / WORLD_SIZE / LOCAL_RANK from the environment, joins
the process group (NCCL on GPUs, gloo on CPU), takes every N-th batch, and DDP averages the
gradients so all ranks keep identical weights. Only rank 0 writes checkpoints and logs.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from adl.runtime.errors import UserError


@dataclass(frozen=True)
class Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world > 1


def pick_device(name: str, local_rank: int = 0) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise UserError(
                f"train.device={name} but this machine has no CUDA GPU (use train.device=cpu)"
            )
        return torch.device(name if ":" in name else f"cuda:{local_rank}")
    if name != "cpu":
        raise UserError(f"train.device must be auto, cpu, cuda or cuda:N, not {name!r}")
    return torch.device("cpu")


def setup(device_name: str) -> tuple[Dist, torch.device]:
    """Join the process group when launched by torchrun; the device of this process."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = pick_device(device_name, local)
    if world > 1 and not dist.is_initialized():
        # rank 0 validates (greedy decoding of the whole validation set) while the others
        # wait: allow that more than the default 10 minutes of NCCL
        timeout = datetime.timedelta(minutes=60)
        if device.type == "cuda":
            torch.cuda.set_device(device)
            dist.init_process_group("nccl", device_id=device, timeout=timeout)
        else:
            dist.init_process_group("gloo", timeout=timeout)
    return Dist(rank, world, local), device


def teardown() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def barrier(d: Dist) -> None:
    if d.enabled:
        dist.barrier()


def agree(d: Dist, ok: bool, stop: bool, device: torch.device) -> tuple[bool, bool]:
    """(every rank is ok, some rank asked to stop) — one small all-reduce."""
    if not d.enabled:
        return ok, stop
    flags = torch.tensor([0.0 if ok else 1.0, 1.0 if stop else 0.0], device=device)
    dist.all_reduce(flags, op=dist.ReduceOp.MAX)
    return flags[0].item() == 0.0, flags[1].item() > 0.0


def broadcast(d: Dist, obj: Any) -> Any:
    """Rank 0's ``obj`` on every rank."""
    if not d.enabled:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def gather(d: Dist, obj: Any) -> list[Any]:
    """Every rank's ``obj``, in rank order, on every rank."""
    if not d.enabled:
        return [obj]
    out: list[Any] = [None] * d.world
    dist.all_gather_object(out, obj)
    return out


def launch(
    nproc: int,
    config_file: str | os.PathLike[str],
    out: str | os.PathLike[str],
    resume: bool = False,
) -> int:
    """Train the configuration in ``config_file`` (YAML) into ``out`` in ``nproc`` processes
    through torchrun on this machine (each runs :mod:`adl.runtime.training.worker`)."""
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={nproc}",
        "-m",
        "adl.runtime.training.worker",
        str(config_file),
        str(out),
        *(["--resume"] if resume else []),
    ]
    try:
        return subprocess.run(command).returncode
    except KeyboardInterrupt:
        return 130
