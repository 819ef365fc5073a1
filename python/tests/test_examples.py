"""The migrated training scripts in examples/ run: pytorch/examples'
imagenet/main.py in one process, torchvision's references/classification/train.py with
the new recipe's flags under torchrun with 2 ranks, checkpoint and resume. A few steps
each, on a small generated image folder; the evaluations must count every validation
sample exactly once over the ranks."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from conftest import photo, torchrun_command

pytest.importorskip("torchvision")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VAL = 11  # odd: two ranks read 6 and 5


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("examples")
    for split, n in (("train", 20), ("val", VAL)):
        for i in range(n):
            cls = d / split / f"class{i % 2}"
            cls.mkdir(parents=True, exist_ok=True)
            Image.fromarray(photo(48 + i % 5, 40 + i % 3, 500 + i)).save(cls / f"{i}.jpg")
    return d


def run(cmd, env_extra=None):
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1", **(env_extra or {}))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail("example hung: " + out[-2000:] + err[-2000:])
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_imagenet_main(data, tmp_path):
    ckpt = tmp_path / "ck.pth"
    out = run([sys.executable, str(EXAMPLES / "imagenet_main.py"), str(data), "-a", "resnet18",
               "--crop", "32", "-b", "4", "-j", "2", "--epochs", "1", "--max-steps", "2",
               "--checkpoint", str(ckpt), "--seed", "1"])
    assert out.count("Epoch: [0]") == 2 and "[1/5]" in out, out
    assert f"over {VAL} samples" in out, out
    out = run([sys.executable, str(EXAMPLES / "imagenet_main.py"), str(data), "-a", "resnet18",
               "--crop", "32", "-b", "4", "-j", "2", "--evaluate", "--resume", str(ckpt),
               "--seed", "1"])
    assert f"over {VAL} samples" in out, out


def test_classification_train_recipe_under_torchrun(data, tmp_path):
    def torchrun(*extra):
        return run([*torchrun_command(), "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
                    "--master_port", str(free_port()), str(EXAMPLES / "classification_train.py"),
                    "--data-path", str(data), "--model", "resnet18", "-b", "4", "-j", "2",
                    "--train-crop-size", "32", "--val-resize-size", "36",
                    "--val-crop-size", "32", "--epochs", "2", "--auto-augment", "ta_wide",
                    "--random-erase", "0.1", "--mixup-alpha", "0.2", "--cutmix-alpha", "1.0",
                    "--label-smoothing", "0.1", "--output-dir", str(tmp_path), *extra])
    out = torchrun("--max-steps", "2")
    # Each rank: 10 of the 20 training images, 3 batches of 4 (the last short).
    assert re.search(r"step 2 \(3 batches, 1 left\)", out), out
    assert out.count(f"samples {VAL}") == 2, out  # both ranks, after all_reduce
    out = torchrun("--max-steps", "4", "--resume", str(tmp_path / "checkpoint.pth"))
    # Resumed mid-epoch: the epoch's one batch left (len() still the whole epoch's), then
    # the next epoch.
    assert re.search(r"Epoch: \[0\] step 3 \(3 batches, 0 left\)", out), out
    assert re.search(r"Epoch: \[1\] step 4 \(3 batches, 2 left\)", out), out
    assert "step 2 " not in out
