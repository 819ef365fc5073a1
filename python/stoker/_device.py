"""The GPU stage's Python side: device tensors from torch, copies and kernels in C++.

With ``Loader(..., device="cuda:N")`` the host stage produces uint8 NHWC batches in
page-locked memory; ``_DeviceFeeder`` launches each batch's copy and conversion on
stoker's copy stream one batch ahead (so the copy of batch k+1 overlaps the step on
batch k) and, when handing a batch over, makes ``torch.cuda.current_stream()`` wait
for it. Output tensors are allocated with ``torch.empty`` on the device, so their
memory comes from, and returns to, PyTorch's caching allocator.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional, Sequence, Tuple

from stoker import _C

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


@dataclass(frozen=True)
class DeviceAugment:
    """Batched GPU augmentations, each sample's parameters drawn from
    ``(seed, epoch, sample id)`` like the CPU ones (docs/gpu.md).

    flip_p: RandomHorizontalFlip probability. crop: (height, width) of a random crop of
    the input padded by ``pad`` zeros per side (torchvision's RandomCrop). brightness,
    contrast, saturation: ColorJitter amounts (factor uniform in [max(0, 1-x), 1+x]).
    degrees, translate, scale: RandomAffine (bilinear, zero outside the image).
    """
    flip_p: float = 0.0
    crop: Optional[Tuple[int, int]] = None
    pad: int = 0
    brightness: float = 0.0
    contrast: float = 0.0
    saturation: float = 0.0
    degrees: float = 0.0
    translate: float = 0.0
    scale: Tuple[float, float] = (1.0, 1.0)

    def as_dict(self) -> dict:
        d = asdict(self)
        crop = d.pop("crop")
        scale = d.pop("scale")
        d["crop_height"], d["crop_width"] = (int(crop[0]), int(crop[1])) if crop else (0, 0)
        d["scale_min"], d["scale_max"] = float(scale[0]), float(scale[1])
        return d


def _torch_dtype(name: str):
    return {"float32": torch.float32, "float16": torch.float16,
            "bfloat16": torch.bfloat16}[name]


class _DeviceFeeder:
    """Feeds one Loader's batches through a ``_C.DeviceStage``."""

    def __init__(self, device: str, transforms: Sequence, dtype: str, layout: str,
                 augment: Optional[DeviceAugment], seed: int, batch_size: int):
        self.index = _C.parse_device(device)
        _C.check_cuda_device(self.index)  # StokerError naming the reason
        if torch is None or not torch.cuda.is_available():
            raise _C.StokerError(
                f"device={device!r} requested but torch has no CUDA "
                "(torch.cuda.is_available() is False)")
        if dtype == "uint8":
            raise ValueError("with a CUDA device, dtype must be float32, float16 or bfloat16")
        self.device = torch.device("cuda", self.index)
        self.dtype = dtype
        self.layout = layout
        self.augment = augment or DeviceAugment()
        self.seed = seed
        self.batch_size = batch_size
        # Normalize moves to the device; everything else stays on the host.
        self.mean, self.std, self.normalize = (0.0,) * 3, (1.0,) * 3, False
        self.host_transforms = []
        for t in transforms:
            normalize = _C._normalize_params(t)
            if normalize is not None:
                self.mean, self.std = tuple(normalize[0]), tuple(normalize[1])
                self.normalize = True
            else:
                self.host_transforms.append(t)
        self.allocator = _C.pinned_allocator(self.index)
        self.stage = None
        self._pending = None

    def bind(self, height: int, width: int) -> None:
        """Creates the stage once the Loader knows its sample size."""
        self.stage = _C.DeviceStage(self.index, self.dtype, self.layout, self.normalize,
                                    list(self.mean), list(self.std), self.augment.as_dict(),
                                    self.seed, self.batch_size, height, width)

    def start_epoch(self) -> None:
        self.finish()

    def _launch(self, arrays):
        if arrays is None:
            return None
        images, labels, ids = arrays
        n = images.shape[0]
        stream = torch.cuda.current_stream(self.device)
        with torch.cuda.device(self.device):
            out = torch.empty(self.stage.output_dims(n), dtype=_torch_dtype(self.dtype),
                              device=self.device)
            labels_d = torch.empty(n, dtype=torch.int64, device=self.device)
        ticket = self.stage.launch(images, out.data_ptr(), labels_d.data_ptr(), stream.cuda_stream)
        # The host batch goes back to the pool now; its buffer is reused only
        # after the copy that reads it (the stage's event fence).
        return out, labels_d, torch.from_numpy(ids.copy()), ticket

    def next(self, impl):
        """The next (images, labels, ids) on the device, or None at the end of the epoch."""
        current = self._pending if self._pending is not None else self._launch(impl.next())
        self._pending = None
        if current is None:
            return None
        try:
            self._pending = self._launch(impl.next())  # overlaps the consumer's step on `current`
        except BaseException:
            self._pending = current  # finish() waits for its copy before its memory is freed
            raise
        out, labels, ids, ticket = current
        self.stage.handoff(ticket, torch.cuda.current_stream(self.device).cuda_stream)
        return out, labels, ids

    def finish(self) -> None:
        """Drops a batch launched ahead (after its copy finished: its memory may be reused)."""
        if self._pending is not None:
            self.stage.synchronize()
            out, labels, ids, ticket = self._pending
            self._pending = None
            self.stage.handoff(ticket, torch.cuda.current_stream(self.device).cuda_stream)
