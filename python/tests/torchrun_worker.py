"""One rank of the torchrun tests (test_torchrun.py): run under
``torchrun --nproc_per_node K torchrun_worker.py MODE DATA OUT``. Ranks come from torch.distributed (gloo), as a user's job would have them.

Modes:
  epochs   two epochs; every rank all-gathers its sample ids and batch count; rank 0 writes
           them to OUT as JSON.
  save     the first BATCHES batches of epoch 1, then rank 0 saves state_dict() to OUT.
  resume   loads the state from DATA/state.pt and finishes epoch 1; rank 0 writes the ids.
  train    a few DDP steps of a small model on CPU, shuffled, uneven dataset size.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import torch
import torch.distributed as dist

import stoker


def gather(obj):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def loader(data):
    src = stoker.Npy(os.path.join(data, "x.npy"), os.path.join(data, "y.npy"))
    return stoker.Loader(src, batch_size=8, shuffle=True, seed=3, dtype="uint8",
                         transforms=[stoker.Resize((8, 8))], return_indices=True)


def main():
    mode, data, out = sys.argv[1], sys.argv[2], sys.argv[3]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    result = {}
    if mode == "epochs":
        ld = loader(data)
        stats = ld.stats()
        result["world"] = [stats["rank"], stats["world_size"], stats["local_world_size"],
                           stats["threads"], stats["cores"]]
        for epoch in range(2):
            ld.set_epoch(epoch)
            ids = [i for _, _, idx in ld for i in idx.tolist()]
            batches = -(-len(ids) // 8)
            result[f"epoch{epoch}"] = gather({"ids": ids, "batches": batches, "len": len(ld),
                                              "padded": ld.stats()["epoch"]["padded_samples"]})
        result["world"] = gather(result["world"])
    elif mode == "save":
        ld = loader(data)
        ld.set_epoch(1)
        ids = []
        for k, (_, _, idx) in enumerate(ld):
            ids += idx.tolist()
            if k + 1 == int(os.environ["BATCHES"]):
                break
        state = ld.state_dict()
        result["ids"] = gather(ids)
        result["states"] = gather(state)
        if rank == 0:
            torch.save(state, os.path.join(data, "state.pt"))
    elif mode == "resume":
        ld = loader(data)
        ld.load_state_dict(torch.load(os.path.join(data, "state.pt")))
        ld.set_epoch(1)
        ids = [i for _, _, idx in ld for i in idx.tolist()]
        result["ids"] = gather(ids)
        result["batches"] = gather(-(-len(ids) // 8))
    elif mode == "train":
        from torch.nn.parallel import DistributedDataParallel as DDP
        torch.manual_seed(0)
        model = DDP(torch.nn.Linear(8 * 8 * 3, 7))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        src = stoker.Npy(os.path.join(data, "x.npy"), os.path.join(data, "y.npy"))
        ld = stoker.Loader(src, batch_size=16, shuffle=True, seed=1, dtype="float32",
                           transforms=[stoker.Resize((8, 8))])
        steps = 0
        for epoch in range(2):
            ld.set_epoch(epoch)
            for x, y in ld:
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(x.flatten(1)), y)
                loss.backward()  # all-reduces: hangs if the ranks' batch counts differ
                opt.step()
                steps += 1
        result["steps"] = gather(steps)
    dist.barrier()
    if rank == 0:
        with open(out, "w") as f:
            json.dump(result, f)
    dist.barrier()
    # Not destroy_process_group() / a normal exit: torch 1.13 can deadlock at shutdown when the
    # DDP Reducer's destructor joins a gloo thread that waits for the GIL (seen under load,
    # ~ProcessGroupGloo -> thread join). Everything is written; leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
