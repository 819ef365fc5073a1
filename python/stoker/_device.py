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


def make_feeder(source, options, device: str, dtype: str, augment, collate: str):
    """The Loader's ``_DeviceFeeder`` for ``device``/``device_augment``, or None for
    ``device="cpu"`` without augmentations; ValueError for combinations the GPU stage
    refuses."""
    if device == "cpu" and augment is None:
        return None
    if collate == "list":
        raise ValueError(
            f"collate='list' is not supported with device={device!r}: the GPU stage "
            "works on fixed-size batches; use device='cpu' and move each image with "
            ".to('cuda', non_blocking=True), or end the transforms in a fixed size "
            "with collate='batch'")
    if device == "cpu":
        raise ValueError("device_augment needs device='cuda' or 'cuda:N'")
    return _DeviceFeeder(source, options, device, dtype, augment)


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
        """The next (images, labels, ids), safe on torch's current stream; None at the end.
        Records: (fields, ids as numpy), fields a dict (``_record``)."""
        if self.device.type == "cuda":
            with torch.cuda.device(self.device):
                batch = self._impl.next(self._stream())
        else:
            batch = self._impl.next(0)
        if batch is None:
            return None
        images, labels, ids, dims = batch[:4]
        if images is not None:  # (None: a record without an image)
            images = images.view(self._dtype).view(dims)
        labels = labels.view(torch.int64)
        if len(batch) == 4:
            return images, labels, torch.from_numpy(ids)
        return _record(batch[4], images, labels, self.device), ids

    def stop(self) -> None:
        self._impl.stop()

    def state(self):
        return self._impl.state()

    def batches_left(self) -> int:
        return self._impl.batches_left()


def _record(entries, images, labels, device) -> dict:
    """A record batch from ``_C.DeviceLoader.next``'s entries: the fixed-shape fields as
    device tensors of their dtype and shape, the others (lists, padded lengths) as the host
    batch's numpy values (the Loader turns them into tensors as on the CPU path)."""
    out = {}
    for entry in entries:
        name, where = entry[0], entry[1]
        if where == "image":
            out[name] = images
        elif where == "label":
            out[name] = labels
        elif where == "host":
            out[name] = entry[2]
        else:
            _, _, memory, dtype, shape = entry
            out[name] = _device_field(memory, dtype, shape, device)
    return out


def _device_field(memory, dtype: str, shape, device):
    """A field's device bytes (a uint8 tensor from the allocator, None when empty) viewed
    as ``dtype`` and ``shape``. Dtypes this torch lacks (uint16/32/64 before torch 2.3)
    stay raw: uint8 with a last dimension of the element's bytes."""
    tdtype = getattr(torch, dtype, None)
    if not isinstance(tdtype, torch.dtype):
        tdtype = None
    if tdtype is None:
        tdtype, shape = torch.uint8, tuple(shape) + ({"uint16": 2, "uint32": 4, "uint64": 8}[dtype],)
    if memory is None:  # zero bytes
        return torch.empty(tuple(shape), dtype=tdtype, device=device)
    count = 1
    for d in shape:
        count *= int(d)
    return memory[:count * torch.empty((), dtype=tdtype).element_size()] \
        .view(tdtype).view(tuple(shape))
