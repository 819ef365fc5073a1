"""The GPU feeder's Python side: a thin wrapper over ``_C.DeviceLoader``.

With ``Loader(..., device="cuda:N")`` the C++ ``DeviceLoader`` (stoker/device_loader.h)
does the feeding: the host stage's uint8 NHWC batches in page-locked memory, copies and
conversions launched one batch ahead on stoker's copy stream, the hand-off to the
consumer's stream, the synchronisation of a batch launched ahead on stop, a new epoch or
an error. This module passes it ``torch.cuda.current_stream()`` and an allocator that
makes torch tensors, so device memory comes from, and returns to, PyTorch's caching
allocator; and it views those tensors as the batch's dtype and shape.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional, Tuple

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


# Tests only: run device loaders through the C++ host fallback (_C.HOST_DEVICE), with
# outputs in CPU tensors, so the feeding policy runs on machines without a GPU.
_HOST_FALLBACK = False


def _torch_dtype(name: str):
    return {"float32": torch.float32, "float16": torch.float16,
            "bfloat16": torch.bfloat16}[name]


def _allocator(device):
    """The DeviceLoader's output memory: torch tensors. Called inside next(), where
    torch's current stream is the `stream` it is given. (A closure over the device only:
    a bound method would tie the feeder and the C++ loader in a cycle gc cannot see.)"""
    def allocate(nbytes: int, stream: int):
        return torch.empty(nbytes, dtype=torch.uint8, device=device)
    return allocate


class _DeviceFeeder:
    """A ``_C.DeviceLoader`` with torch tensors for memory and torch's current stream."""

    def __init__(self, source, options, device: str, dtype: str,
                 augment: Optional[DeviceAugment]):
        index = _C.parse_device(device)
        if torch is None:
            raise _C.StokerError(f"device={device!r} needs torch (the batches are torch tensors)")
        if _HOST_FALLBACK:
            index = _C.HOST_DEVICE
        host = index == _C.HOST_DEVICE
        self.device = torch.device("cpu") if host else torch.device("cuda", index)
        aug = (augment or DeviceAugment()).as_dict()
        self._impl = _C.DeviceLoader(source, options, index, aug, _allocator(self.device))
        self._dtype = _torch_dtype(dtype)
        if not host and not torch.cuda.is_available():
            raise _C.StokerError(
                f"device={device!r} requested but torch has no CUDA "
                "(torch.cuda.is_available() is False)")
        self.loader = self._impl.loader  # the host Loader: len, stats, epochs, checkpoints
        self.stage = self._impl.stage

    def _stream(self) -> int:
        if self.device.type == "cpu":
            return 0
        return torch.cuda.current_stream(self.device).cuda_stream

    def start(self) -> None:
        self._impl.start()

    def next(self):
        """The next (images, labels, ids), safe on torch's current stream; None at the end."""
        if self.device.type == "cuda":
            with torch.cuda.device(self.device):
                batch = self._impl.next(self._stream())
        else:
            batch = self._impl.next(0)
        if batch is None:
            return None
        images, labels, ids, dims = batch
        return images.view(self._dtype).view(dims), labels.view(torch.int64), \
            torch.from_numpy(ids)

    def stop(self) -> None:
        self._impl.stop()

    def state(self):
        return self._impl.state()
