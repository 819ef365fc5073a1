"""Loader.state_dict()'s dict and the engine's LoaderState (stoker/loader.h), each way.
The engine checks a state against its loader (Loader.resume); this module checks only
that a dict is one: every key present, each value of its type and range."""

from __future__ import annotations

import numpy as np

from stoker import _C
from stoker._args import INT64_MAX
from stoker._args import int_arg as _int_arg

_INT_MAX = 2**31 - 1

# The keys of Loader.state_dict() that load_state_dict requires ("batch_transform" is
# optional: only with a batch_transform that has a state).
STATE_KEYS = ("version", "epoch", "consumed", "world_size", "seed", "shuffle", "num_samples",
              "fingerprint")


def to_dict(state: "_C.LoaderState", batch_transform=None) -> dict:
    """The engine's LoaderState as a plain dict, with the batch transform's state if it
    has one."""
    out = {key: getattr(state, key) for key in STATE_KEYS}
    if hasattr(batch_transform, "state_dict"):
        out["batch_transform"] = batch_transform.state_dict()
    return out


def from_dict(state) -> "_C.LoaderState":
    """A state_dict() dict as the engine's LoaderState: TypeError or ValueError naming the
    key for a missing key or a value of the wrong type or range."""
    if not isinstance(state, dict):
        raise TypeError(f"load_state_dict expects a dict, got {type(state).__name__}")
    # Every key is required and checked: a partial or hand-edited dict must not skip the
    # dataset, seed and shuffle checks.
    missing = [k for k in STATE_KEYS if k not in state]
    if missing:
        raise ValueError(f"not a stoker Loader state: no {missing[0]!r} (a state_dict() "
                         f"has the keys {', '.join(STATE_KEYS)})")

    def field(key, lo, hi):
        try:
            return _int_arg(f"state[{key!r}]", state[key], lo, hi)
        except (TypeError, ValueError) as e:
            raise type(e)(f"not a valid stoker Loader state: {e}") from None

    st = _C.LoaderState()
    st.version = field("version", 1, INT64_MAX)
    st.epoch = field("epoch", 0, INT64_MAX)
    st.consumed = field("consumed", 0, INT64_MAX)
    st.world_size = field("world_size", 1, _INT_MAX)
    st.num_samples = field("num_samples", -1, INT64_MAX)
    st.fingerprint = field("fingerprint", 0, INT64_MAX)
    st.seed = field("seed", 0, 2**64 - 1)
    if not isinstance(state["shuffle"], (bool, np.bool_)):
        raise TypeError(f"not a valid stoker Loader state: state['shuffle'] must be True or "
                        f"False, got {type(state['shuffle']).__name__} {state['shuffle']!r}")
    st.shuffle = bool(state["shuffle"])
    return st


def resume(impl, state: "_C.LoaderState", seed_from_torch: bool) -> None:
    """``impl.resume(state)``: the engine checks the version, the dataset, the order and the
    position. A seed mismatch on a loader whose seed came from torch says how to fix it."""
    try:
        impl.resume(state)
    except ValueError as e:
        if "with seed=" in str(e) and seed_from_torch:
            raise ValueError(
                f"{e} (this loader's seed came from torch.initial_seed(): call "
                "torch.manual_seed() with the first run's seed before building the "
                "loader, or pass seed=)") from None
        raise


def start_batch_transform(batch_transform, epoch: int, pending) -> None:
    """At an epoch's start: the batch transform follows the epoch now running, continuing a
    resumed epoch's draws where the checkpoint (``pending``, its state_dict() part) left
    them."""
    if pending is not None and int(pending.get("epoch", -1)) == epoch:
        batch_transform.load_state_dict(pending)
    elif hasattr(batch_transform, "set_epoch"):
        batch_transform.set_epoch(epoch)
