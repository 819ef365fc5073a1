"""Which rank this process is and the default seed: explicit arguments, else
torch.distributed, else torchrun's environment."""

from __future__ import annotations

import os
from typing import Optional

from stoker._args import as_integral

try:  # torch is optional
    import torch
except ImportError:  # pragma: no cover - exercised only without torch
    torch = None

_INT_MAX = 2**31 - 1


def env_int(name: str) -> Optional[int]:
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} is not an integer") from None


def distributed_ranks(rank, world_size):
    """(rank, world_size, local_world_size): explicit values, else torch.distributed when
    it is initialised, else torchrun's environment (RANK, WORLD_SIZE, LOCAL_WORLD_SIZE),
    else 0, 1 and 1."""
    found_rank, found_world = None, None
    if torch is not None and (rank is None or world_size is None):
        try:
            import torch.distributed as dist
            if dist.is_available() and dist.is_initialized():
                found_rank, found_world = dist.get_rank(), dist.get_world_size()
        except (ImportError, RuntimeError):  # pragma: no cover - torch without distributed
            pass
    if found_rank is None:
        env_rank, env_world = env_int("RANK"), env_int("WORLD_SIZE")
        if env_rank is not None and env_world is not None:
            found_rank, found_world = env_rank, env_world
    rank = (found_rank or 0) if rank is None else rank
    world_size = (found_world or 1) if world_size is None else world_size
    checked = []
    for name, value in (("rank", rank), ("world_size", world_size)):
        i = as_integral(value)
        if i is None:
            raise TypeError(f"{name} must be an int or None, got {type(value).__name__} "
                            f"{value!r}")
        if abs(i) > _INT_MAX:
            raise ValueError(f"{name} must be in [0, {_INT_MAX}], got {i}")
        checked.append(i)
    rank, world_size = checked
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, world_size) and world_size >= 1, got rank "
                         f"{rank}, world_size {world_size}")
    local = env_int("LOCAL_WORLD_SIZE")
    if local is None or local < 1:
        local = 1
    return rank, world_size, local


def default_seed(world_size: int) -> int:
    """The seed when none is given: with ranks 0 (DistributedSampler's default, the same on
    every rank, so the ranks' shares stay disjoint), else torch.initial_seed() when torch is
    imported, so torch.manual_seed controls it as it controls DataLoader's; else 0."""
    if world_size > 1 or torch is None:
        return 0
    return int(torch.initial_seed()) % 2**64
