"""Ranks under real torchrun (gloo, loopback): disjoint data, equal batch counts,
kill-and-resume at another world size, and a tiny DDP run that must not hang.

The launcher comes from conftest.torchrun_command (torch 1.x needs two more flags there).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import numpy as np
import pytest

from conftest import torchrun_command

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed.run")

WORKER = os.path.join(os.path.dirname(__file__), "torchrun_worker.py")
N = 1001  # odd on purpose: 4 ranks need 3 padded samples


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("torchrun")
    rng = np.random.default_rng(0)
    np.save(d / "x.npy", rng.integers(0, 256, (N, 8, 8, 3), dtype=np.uint8))
    np.save(d / "y.npy", np.arange(N, dtype=np.int64) % 7)
    return d


def torchrun(nproc, mode, data, tmp_path, **env):
    out = tmp_path / f"{mode}-{nproc}.json"
    cmd = [*torchrun_command(), "--nproc_per_node", str(nproc), "--master_addr", "127.0.0.1",
           "--master_port", str(free_port()), WORKER, mode, str(data), str(out)]
    full_env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1",
                    **{k: str(v) for k, v in env.items()})
    # Its own session, so that a hang kills the workers too (not only the launcher).
    proc = subprocess.Popen(cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"torchrun {mode} at {nproc} ranks hung: " + stdout[-2000:] + stderr[-2000:])
    assert proc.returncode == 0, stdout[-3000:] + stderr[-3000:]
    with open(out) as f:
        return json.load(f)


@pytest.mark.parametrize("nproc", [2, 3, 4])
def test_ranks_see_disjoint_data_with_equal_batch_counts(data, tmp_path, nproc):
    r = torchrun(nproc, "epochs", data, tmp_path)
    world = r["world"]
    assert [w[0] for w in world] == list(range(nproc))
    assert all(w[1] == nproc and w[2] == nproc for w in world)
    cores = len(os.sched_getaffinity(0))
    assert all(w[4] == max(1, cores // nproc) and w[3] == w[4] for w in world), world
    orders = []
    for epoch in ("epoch0", "epoch1"):
        per = r[epoch]
        assert len({p["batches"] for p in per}) == 1, "ranks disagree on the batch count"
        assert all(p["batches"] == p["len"] for p in per)
        every = [i for p in per for i in p["ids"]]
        padded = -(-N // nproc) * nproc - N
        assert sorted(set(every)) == list(range(N)), "the union is the epoch"
        assert len(every) == N + padded, "disjoint apart from the padding"
        assert sum(p["padded"] for p in per) == padded, "each rank counts its own repeats"
        assert sorted(p["padded"] for p in per) == [0] * (nproc - padded) + [1] * padded
        orders.append([p["ids"] for p in per])
    assert orders[0] != orders[1], "each epoch has its own order"


@pytest.mark.parametrize("before,after", [(2, 3), (4, 1)])
def test_kill_and_resume_at_another_world_size(data, tmp_path, before, after):
    saved = torchrun(before, "save", data, tmp_path, BATCHES=10)
    assert all(s == saved["states"][0] for s in saved["states"])
    assert saved["states"][0]["consumed"] == 10 * 8 * before
    resumed = torchrun(after, "resume", data, tmp_path)
    assert len(set(resumed["batches"])) == 1
    first = [i for ids in saved["ids"] for i in ids]
    second = [i for ids in resumed["ids"] for i in ids]
    left = N - len(first)
    padding = -(-left // after) * after - left
    # Only the padding (the epoch's first samples, as DistributedSampler pads) repeats a
    # sample of the first segment.
    assert len(set(first) & set(second)) <= padding, "a sample delivered in both segments"
    assert sorted(set(first) | set(second)) == list(range(N))
    assert len(second) == left + padding  # exactly once, apart from the padding
    assert len(set(second)) >= left


def test_tiny_ddp_training_completes(data, tmp_path):
    r = torchrun(3, "train", data, tmp_path)
    steps = r["steps"]
    assert len(set(steps)) == 1 and steps[0] == 2 * -(-(-(-N // 3)) // 16)
