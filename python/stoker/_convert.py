"""A native batch (numpy arrays that view the pooled batch memory) as what the Loader
yields: torch tensors sharing that memory (numpy arrays without torch), the labels through
``target_transform``, and the indices when asked for."""

from __future__ import annotations

import numpy as np

try:  # torch is optional: without it batches are numpy arrays.
    import torch
except ImportError:  # pragma: no cover - exercised only without torch
    torch = None


def _tensor(a, bfloat16=False):
    """``a`` as a tensor without a copy; numpy's int16 bits as bfloat16 (numpy has no
    bfloat16); uint16/32/64 arrays and non-arrays unchanged (torch has no such dtypes)."""
    if not isinstance(a, np.ndarray):
        return a
    if bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    if a.dtype in (np.uint16, np.uint32, np.uint64):
        return a
    return torch.from_numpy(a)


class Converter:
    """Converts the batches of one loader. Thread-safe (holds only its settings)."""

    def __init__(self, dtype: str, return_indices: bool, target_transform=None,
                 field_lists=frozenset(), image_field=None):
        self.dtype = dtype
        self.return_indices = return_indices
        self.target_transform = target_transform
        self.field_lists = field_lists  # collate={name: "list"}: lists of per-sample views
        self.image_field = image_field  # a record's primary image (bfloat16 bits)

    def __call__(self, arrays):
        """(images, labels, ids) -> (images, labels[, ids]); (fields, ids) -> fields[, ids]."""
        if len(arrays) == 2:
            return self.record(*arrays)
        images, labels, ids = arrays
        if self.target_transform is not None:
            labels = apply_target_transform(self.target_transform, labels)
        if torch is not None:
            bf = self.dtype == "bfloat16"
            images = ([_tensor(a, bf) for a in images] if isinstance(images, list)
                      else _tensor(images, bf))
            if isinstance(labels, np.ndarray):
                labels = torch.from_numpy(labels)
            ids = torch.from_numpy(ids)
        return (images, labels, ids) if self.return_indices else (images, labels)

    def record(self, fields, ids):
        """A record batch: every numpy array as a tensor, lists stay lists of per-sample
        values."""
        if torch is not None:
            out = {}
            for name, value in fields.items():
                bf = self.dtype == "bfloat16" and name == self.image_field
                if isinstance(value, list):
                    out[name] = [_tensor(v, bf) for v in value]
                elif name in self.field_lists:
                    out[name] = list(_tensor(value, bf))
                else:
                    out[name] = _tensor(value, bf)
            fields = out
            ids = torch.from_numpy(ids)
        return (fields, ids) if self.return_indices else fields


def apply_target_transform(fn, labels: np.ndarray):
    """fn on every label (a Python int); the results collated as the Loader docstring says."""
    out = [fn(int(v)) for v in labels]
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in out):
        return np.asarray(out, dtype=np.int64)
    if all(isinstance(v, (float, int, np.floating, np.integer)) for v in out):
        return np.asarray(out, dtype=np.float32)
    if torch is not None and all(isinstance(v, torch.Tensor) for v in out):
        if len({tuple(v.shape) for v in out}) == 1:
            return torch.stack(out)
        return out
    if all(isinstance(v, np.ndarray) for v in out) and len({v.shape for v in out}) == 1:
        return np.stack(out)
    return out
