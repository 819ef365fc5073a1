"""Loader.trace() and stoker.profiler: spans of every worker step and the consumer's waits
in Chrome trace JSON, and inside a real torch.profiler (CPU) trace on its clock.

Known answers: every delivered sample has a read, a decode and its transform spans with its
id, batch and epoch, on a worker thread; every batch has a hand-off on the consumer thread;
the ring keeps at most spans_per_thread spans per thread and counts the rest as dropped;
nothing is recorded while tracing is off; the batches are the same with tracing on. In the
torch.profiler trace each stoker hand-off lies inside the torch "stoker.next" range that
made it, and the workers' spans interleave with the training step's ops.
"""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

import stoker
from conftest import SMALL_CLASSES, collect

torch = pytest.importorskip("torch")

N = sum(SMALL_CLASSES.values())
TRANSFORMS = [stoker.RandomResizedCrop(32), stoker.RandomHorizontalFlip(),
              stoker.ColorJitter(brightness=0.4),
              stoker.Normalize(mean=[0.5] * 3, std=[0.25] * 3)]


def make(root, **kw):
    kw.setdefault("batch_size", 8)
    kw.setdefault("threads", 3)
    kw.setdefault("return_indices", True)
    return stoker.Loader(stoker.ImageFolder(root), shuffle=True, seed=7, transforms=TRANSFORMS,
                         dtype="float32", **kw)


def spans(events):
    return [e for e in events if e.get("ph") == "X"]


def test_trace_file_has_every_step_of_every_sample(small_root, tmp_path):
    loader = make(small_root)
    loader.set_epoch(2)
    path = tmp_path / "trace.json"
    with loader.trace(path):
        _, _, ids = collect(loader)
    trace = json.loads(path.read_text())
    assert trace["otherData"]["dropped_spans"] == 0
    events = trace["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M"}
    by_sample = defaultdict(list)
    for e in spans(events):
        assert e["cat"] == "stoker" and e["dur"] >= 0
        if "sample" in e["args"]:
            # Workers may start epoch 3 before the session stops (cross-epoch prefetch).
            assert e["args"]["epoch"] in (2, 3)
            assert threads[e["tid"]].startswith("stoker worker")
            if e["args"]["epoch"] == 2:
                by_sample[e["args"]["sample"]].append(e)
    assert sorted(by_sample) == sorted(ids.tolist())
    for sample, evs in by_sample.items():
        names = [e["name"] for e in evs]
        assert "read" in names and "decode" in names, names
        assert any("RandomResizedCrop+RandomHorizontalFlip" in n for n in names), names
        assert "ColorJitter" in names and any(n.startswith("write (Normalize") for n in names)
        decode = next(e for e in evs if e["name"] == "decode")
        assert decode["args"]["path"]
        assert len({e["args"]["batch"] for e in evs}) == 1
    # The consumer: one hand-off per batch (and the call that found the end), its waits.
    handoffs = [e for e in spans(events) if e["name"] == "stoker.hand-off"]
    assert sorted(e["args"]["batch"] for e in handoffs if "batch" in e["args"]) == \
        list(range(len(loader)))
    assert {threads[e["tid"]] for e in handoffs} == {"stoker consumer"}
    waits = [e for e in spans(events) if e["name"] == "stoker.wait"]
    assert waits and all(e["args"]["short_stage"] in ("none", "read", "decode", "augment")
                         for e in waits)


def test_off_by_default_records_nothing_and_output_is_unchanged(small_root):
    plain = make(small_root)
    images0, labels0, ids0 = collect(plain)
    assert json.loads(plain._impl.tracer.events_json()) == []
    traced = make(small_root)
    with traced.trace() as session:
        images1, labels1, ids1 = collect(traced)
    assert spans(session.events())
    np.testing.assert_array_equal(ids0.numpy(), ids1.numpy())
    np.testing.assert_array_equal(images0.numpy(), images1.numpy())
    # Stopped: a further epoch adds nothing.
    before = len(session.events())
    collect(traced)
    assert len(session.events()) == before


def test_ring_is_bounded_and_counts_dropped(small_root):
    loader = make(small_root, threads=1)
    with loader.trace(spans_per_thread=64) as session:
        collect(loader)
    per_thread = defaultdict(int)
    for e in spans(session.events()):
        per_thread[e["tid"]] += 1
    assert max(per_thread.values()) <= 64
    # 37 samples x (read, decode, 3 transform steps) on one worker cannot fit in 64.
    assert session.dropped() > 0


def test_bad_ring_size_is_refused(small_root):
    with pytest.raises(ValueError, match="spans_per_thread"):
        make(small_root).trace(spans_per_thread=0)


def _train_step(model, opt, images, labels):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(images.flatten(1)), labels)
    loss.backward()
    opt.step()


def test_torch_profiler_trace_holds_steps_and_worker_spans(small_root, tmp_path):
    from torch.profiler import ProfilerActivity, profile

    # One batch in flight: batch b + 1 is made while step b runs.
    loader = make(small_root, prefetch=1, threads=1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3 * 32 * 32, 2048), torch.nn.ReLU(),
                                torch.nn.Linear(2048, len(SMALL_CLASSES)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    path = tmp_path / "torch_trace.json"
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        stoker.profiler.attach(prof, loader)
        for images, labels, _ in loader:
            _train_step(model, opt, images, labels)
    prof.export_chrome_trace(str(path))
    raw = json.loads(path.read_text())
    events = raw if isinstance(raw, list) else raw["traceEvents"]
    torch_next = sorted((e for e in events if e.get("name") == "stoker.next"),
                        key=lambda e: e["ts"])
    ops = [e for e in events if str(e.get("name", "")).startswith("aten::")]
    mine = [e for e in spans(events) if e.get("cat") == "stoker"]
    assert ops and mine
    assert len(torch_next) == len(loader) + 1  # the last call finds the end
    # Same clock: every hand-off lies inside the torch range of the next() that made it.
    handoffs = sorted((e for e in mine if e["name"] == "stoker.hand-off"), key=lambda e: e["ts"])
    assert len(handoffs) == len(torch_next)
    slack_us = 50
    for h, t in zip(handoffs, torch_next):
        assert t["ts"] - slack_us <= h["ts"] and h["ts"] + h["dur"] <= t["ts"] + t["dur"] + \
            slack_us, (h, t)
    # Workers ran on their own threads beside the step: some worker span of a later batch
    # starts while an earlier batch's step ops run (prefetch), and batch b's samples are all
    # made before the next() that delivered b returned.
    workers = [e for e in mine if "sample" in e["args"]]
    assert {e["tid"] for e in workers}.isdisjoint({e["tid"] for e in ops})
    step_ends = {}
    for i, t in enumerate(torch_next[:-1]):
        step_ends[i] = t["ts"] + t["dur"]
    for e in workers:
        if e["args"]["epoch"] != 0:  # the next epoch, started early (cross-epoch prefetch)
            continue
        b = e["args"]["batch"]
        assert e["ts"] + e["dur"] <= step_ends[b] + slack_us, (e, b)
    op_spans = [(o["ts"], o["ts"] + o["dur"]) for o in ops]
    overlapping = [e for e in workers
                   if any(s < e["ts"] + e["dur"] and e["ts"] < t for s, t in op_spans)]
    assert overlapping, "no worker span overlaps the step's ops"


def test_merge_needs_attach(small_root, tmp_path):
    from torch.profiler import ProfilerActivity, profile

    loader = make(small_root)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        torch.ones(4).sum()
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    with pytest.raises(ValueError, match="attach"):
        stoker.profiler.merge(path, loader)


def test_stoker_next_range_only_while_profiling(small_root):
    from torch.profiler import ProfilerActivity, profile

    loader = make(small_root)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in loader:
            pass
    names = [e.name for e in prof.events()]
    assert names.count("stoker.next") == len(loader) + 1


def _stoker_cli():
    import os
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    for p in (os.environ.get("STOKER_CLI"), root / "build" / "stoker"):
        if p and os.access(p, os.X_OK):
            return str(p)
    pytest.skip("the stoker CLI is not built (set STOKER_CLI)")


@pytest.mark.parametrize("verb", ["bench", "diagnose"])
def test_cli_trace_flag(small_root, tmp_path, verb):
    import subprocess
    out = tmp_path / f"{verb}.json"
    args = ["--epochs", "1"] if verb == "bench" else ["--batches", "2", "--step-ms", "0"]
    r = subprocess.run([_stoker_cli(), verb, small_root, "--batch-size", "8", "--threads", "2",
                        "--trace", str(out), *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "trace written to" in r.stderr
    trace = json.loads(out.read_text())
    names = {e["name"] for e in spans(trace["traceEvents"])}
    assert {"read", "decode", "stoker.hand-off"} <= names, names
    bad = subprocess.run([_stoker_cli(), verb, small_root, "--trace",
                          str(tmp_path / "no" / "such" / "dir.json"), *args],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and "--trace" in bad.stderr


# ------------------------------------- the trace path: checked at entry, never followed ----

def test_an_unwritable_trace_path_is_refused_when_the_block_starts(small_root, tmp_path):
    loader = make(small_root)
    batches = []
    with pytest.raises(FileNotFoundError, match="does not exist"):
        with loader.trace(tmp_path / "missing" / "dir" / "t.json"):
            batches += list(loader)  # never run: refused at the block's entry
    assert batches == []
    with pytest.raises(IsADirectoryError):
        with loader.trace(tmp_path):
            pass
    assert not loader._live().tracer.on  # nothing was started


def test_the_trace_replaces_a_planted_symlink_not_its_target(small_root, tmp_path):
    import os
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    out = tmp_path / "trace.json"
    os.symlink(precious, out)
    loader = make(small_root)
    with loader.trace(out):
        sum(1 for _ in loader)
    assert precious.read_text() == "keep me"
    assert not out.is_symlink() and "traceEvents" in json.loads(out.read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious.txt", "trace.json"]
    with loader.trace(out):  # an existing trace is replaced
        next(iter(loader))
    assert "traceEvents" in json.loads(out.read_text())
