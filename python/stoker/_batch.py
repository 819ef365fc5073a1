"""Batch-level augmentations with torchvision.transforms.v2's names and meaning: MixUp,
CutMix, and RandomChoice among them.

They mix a batch with itself rolled by one (as v2 does) and turn integer labels into soft
labels ``[B, num_classes]`` float32. Call them on the batches the Loader yields, in the
training loop (CPU or GPU tensors)::

    mix = stoker.CutMix(num_classes=1000, seed=0)
    for epoch in range(epochs):
        loader.set_epoch(epoch); mix.set_epoch(epoch)
        for images, labels in loader:
            images, labels = mix(images, labels)

or, simpler, give one to the Loader as ``batch_transform=``: the loader applies it to every
batch it yields, follows its epoch, and keeps its random state in ``state_dict()``, so a
resumed run mixes exactly as an uninterrupted one. The recipe's random choice per batch::

    mix = stoker.RandomChoice([stoker.MixUp(alpha=0.2, num_classes=1000),
                               stoker.CutMix(alpha=1.0, num_classes=1000)])
    loader = stoker.Loader(..., batch_transform=mix)

Randomness: lambda (Beta(alpha, alpha)), the CutMix box and RandomChoice's pick are drawn
from ``(seed, epoch, call index within the epoch)``, so runs repeat whatever the thread
count; ``state_dict()`` / ``load_state_dict()`` save and restore that position.
Images are float ``[B, C, H, W]`` (layout="NCHW", the default) or ``[B, H, W, C]`` with
``layout="NHWC"``.
"""

from __future__ import annotations

import math

import numpy as np


def _rng(seed: int, epoch: int, step: int, salt: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, epoch, step, salt]))


class _BatchMix:
    _SALT = 0

    def __init__(self, *, alpha: float = 1.0, num_classes: int, seed: int = 0,
                 layout: str = "NCHW"):
        if not alpha > 0:
            raise ValueError(f"{type(self).__name__}: alpha must be > 0, got {alpha}")
        if not (isinstance(num_classes, int) and num_classes > 0):
            raise ValueError(f"{type(self).__name__}: num_classes must be a positive int, "
                             f"got {num_classes!r}")
        if layout not in ("NCHW", "NHWC"):
            raise ValueError(f"{type(self).__name__}: layout must be 'NCHW' or 'NHWC'")
        self.alpha = float(alpha)
        self.num_classes = num_classes
        self.seed = int(seed)
        self.layout = layout
        self._epoch = 0
        self._step = 0

    def set_epoch(self, epoch: int) -> None:
        """Restart the draws for `epoch` (call it with the Loader's set_epoch)."""
        self._epoch = int(epoch)
        self._step = 0

    def state_dict(self) -> dict:
        """The draws' position: {"seed", "epoch", "step"} (plain ints)."""
        return {"seed": self.seed, "epoch": self._epoch, "step": self._step}

    def load_state_dict(self, state: dict) -> None:
        """Continues the draws from ``state_dict()``'s position. ValueError for another
        seed (the draws would differ)."""
        if int(state["seed"]) != self.seed:
            raise ValueError(f"{type(self).__name__}: the state was saved with seed="
                             f"{state['seed']}, this one has seed={self.seed}")
        self._epoch, self._step = int(state["epoch"]), int(state["step"])

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(alpha={self.alpha}, num_classes={self.num_classes}, "
                f"seed={self.seed})")

    def _soft(self, labels):
        import torch
        if labels.ndim != 1:
            raise ValueError(f"{type(self).__name__}: labels must be [B] class indices")
        return torch.nn.functional.one_hot(labels.long(), self.num_classes).float()

    def _check(self, images):
        import torch
        if not isinstance(images, torch.Tensor) or images.ndim != 4 or \
                not images.is_floating_point():
            raise TypeError(f"{type(self).__name__}: images must be a float torch tensor "
                            "[B, C, H, W] (or [B, H, W, C] with layout='NHWC'); use "
                            "dtype='float32' (or float16/bfloat16) in the Loader")

    def __call__(self, images, labels):
        self._check(images)
        rng = _rng(self.seed, self._epoch, self._step, self._SALT)
        self._step += 1
        return self._mix(images, labels, rng)


class MixUp(_BatchMix):
    """v2.MixUp: images = lam * x + (1 - lam) * x.roll(1), lam ~ Beta(alpha, alpha); labels
    mixed the same way as one-hot vectors."""

    _SALT = 1

    def _mix(self, images, labels, rng):
        lam = float(rng.beta(self.alpha, self.alpha))
        soft = self._soft(labels).to(images.device)
        out = images.roll(1, 0).mul(1.0 - lam).add_(images.mul(lam))
        soft = soft.roll(1, 0).mul_(1.0 - lam).add_(soft.mul(lam))
        self.last_lam = lam
        return out, soft


class CutMix(_BatchMix):
    """v2.CutMix: a box of area (1 - lam) of the image (lam ~ Beta(alpha, alpha), centre
    uniform, clipped to the image) is pasted from x.roll(1); labels mixed by the pasted
    box's actual area."""

    _SALT = 2

    def _mix(self, images, labels, rng):
        lam = float(rng.beta(self.alpha, self.alpha))
        if self.layout == "NCHW":
            h, w = images.shape[-2], images.shape[-1]
        else:
            h, w = images.shape[1], images.shape[2]
        r_x = int(rng.integers(w))
        r_y = int(rng.integers(h))
        r = 0.5 * math.sqrt(1.0 - lam)
        r_w_half, r_h_half = int(r * w), int(r * h)
        x1, y1 = max(r_x - r_w_half, 0), max(r_y - r_h_half, 0)
        x2, y2 = min(r_x + r_w_half, w), min(r_y + r_h_half, h)
        out = images.clone()
        rolled = images.roll(1, 0)
        if self.layout == "NCHW":
            out[..., y1:y2, x1:x2] = rolled[..., y1:y2, x1:x2]
        else:
            out[:, y1:y2, x1:x2, :] = rolled[:, y1:y2, x1:x2, :]
        lam_adjusted = 1.0 - (x2 - x1) * (y2 - y1) / (w * h)
        soft = self._soft(labels).to(images.device)
        soft = soft.roll(1, 0).mul_(1.0 - lam_adjusted).add_(soft.mul(lam_adjusted))
        self.last_lam, self.last_box = lam_adjusted, (x1, y1, x2, y2)
        return out, soft


class RandomChoice(_BatchMix):
    """v2.RandomChoice on the batch: each call applies one of ``transforms`` (MixUp or
    CutMix), picked with probabilities ``p`` (default: equal), e.g. torchvision's recipe
    ``RandomChoice([MixUp(alpha=0.2), CutMix(alpha=1.0)])``. The pick and the chosen
    transform's draws come from this object's ``(seed, epoch, step)``; the transforms'
    own seeds and positions are not used."""

    _SALT = 3

    def __init__(self, transforms, p=None, *, seed: int = 0):
        transforms = list(transforms)
        if not transforms or not all(isinstance(t, (MixUp, CutMix)) for t in transforms):
            raise TypeError("RandomChoice: transforms must be a non-empty list of "
                            "stoker.MixUp / stoker.CutMix (per-sample random choices are "
                            "not implemented)")
        classes = {t.num_classes for t in transforms}
        if len(classes) != 1 or len({t.layout for t in transforms}) != 1:
            raise ValueError("RandomChoice: the transforms must have the same num_classes "
                             "and layout")
        if p is None:
            p = [1.0] * len(transforms)
        p = [float(v) for v in p]
        if len(p) != len(transforms) or any(not v >= 0 for v in p) or sum(p) <= 0:
            raise ValueError(f"RandomChoice: p must be {len(transforms)} non-negative "
                             f"numbers with a positive sum, got {p!r}")
        self.transforms = transforms
        self.p = [v / sum(p) for v in p]
        self.num_classes = transforms[0].num_classes
        self.layout = transforms[0].layout
        self.seed = int(seed)
        self._epoch = 0
        self._step = 0

    def __repr__(self) -> str:
        return f"RandomChoice({self.transforms!r}, p={self.p}, seed={self.seed})"

    def _check(self, images):
        self.transforms[0]._check(images)

    def _mix(self, images, labels, rng):
        k = int(rng.choice(len(self.transforms), p=self.p))
        self.last_choice = k
        return self.transforms[k]._mix(images, labels, rng)


def detection_targets(batch, boxes: str = "boxes", labels: str = "labels", **extra: str):
    """The targets torchvision's detection models take, from a batch of a loader with
    ``targets=``: a list of one dict per sample, ``{"boxes": float32 [n_i, 4] xyxy in output
    pixels, "labels": int64 [n_i]}``, plus ``extra`` keys (output name -> batch field, e.g.
    ``keypoints="keypoints"``, ``masks="mask"``). ``boxes`` and ``labels`` name the batch's
    fields (a boxes target and a per_box field). Under ``collate="pad"`` the padding is cut
    off with ``boxes + "_lengths"``. The labels are passed as the batch holds them:
    ``stoker.Coco``'s default labels are the category ids (0 is the models' background;
    build the model with ``num_classes=source.num_classes``). E.g.::

        images, targets = batch["image"], stoker.detection_targets(batch)
        loss_dict = model(list(images), targets)
    """
    import torch

    def rows(name):
        v = batch[name]
        lengths = batch.get(boxes + "_lengths")
        if isinstance(v, torch.Tensor) and lengths is not None and v.dim() >= 2 \
                and name in (boxes, labels):
            n = lengths[:, 0] if lengths.dim() == 2 else lengths
            return [v[i, :int(n[i])] for i in range(len(v))]
        return list(v)
    names = {"boxes": boxes, "labels": labels, **extra}
    for key, name in names.items():
        if name not in batch:
            raise KeyError(f"detection_targets: the batch has no field {name!r} for {key!r} "
                           f"(its fields: {sorted(batch)})")
    columns = {key: rows(name) for key, name in names.items()}
    out = []
    for i in range(len(columns["boxes"])):
        d = {key: torch.as_tensor(col[i]) for key, col in columns.items()}
        d["labels"] = d["labels"].to(torch.int64)
        out.append(d)
    return out
