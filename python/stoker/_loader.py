"""stoker.Loader: the Python face of the C++ engine."""

from __future__ import annotations

import atexit
import json
import os
import threading
import time
import warnings
import weakref
from typing import Dict, Optional, Sequence, Union

import numpy as np

from stoker import _C, _device, _monitor, _report, _sampler, _trace
from stoker._args import INT64_MAX, as_integral
from stoker._args import bool_arg as _bool_arg
from stoker._args import choice_arg as _choice_arg
from stoker._args import int_arg as _int_arg
from stoker import metrics as _metrics
from stoker._transforms import _transform_list

try:  # torch is optional: without it batches are numpy arrays.
    import torch
    from torch.autograd import _profiler_enabled
    from torch.autograd.profiler import record_function
except ImportError:  # pragma: no cover - exercised only without torch
    torch = None

    def _profiler_enabled():
        return False

_DTYPES = ("uint8", "float32", "float16", "bfloat16")
_INT_MAX = 2**31 - 1


# Loaders that run Python callables in their worker threads. They are closed before the
# interpreter shuts down: a worker that took the GIL during shutdown would be ended by
# CPython in the middle of its sample, and the loader could never stop.
_WITH_CALLABLES = weakref.WeakSet()


# How long the interpreter's exit waits for the workers of loaders that run Python callables
# to finish the samples in hand.
_EXIT_GRACE_S = 2.0


@atexit.register
def _close_loaders_with_callables() -> None:
    # Each is cancelled without waiting, then stopped on a helper thread for up to
    # _EXIT_GRACE_S (the callables need the GIL, which the waiting main thread lets go), so
    # no worker is inside Python when finalization starts. A loader still not stopped then
    # (a worker blocked in its callable: an Event never set, a long sleep after Ctrl-C) is
    # abandoned: never destroyed, its threads ended by the process exit (a worker that
    # returns from Python meanwhile parks, without the GIL).
    pending = []
    for loader in list(_WITH_CALLABLES):
        impl = None
        try:
            impl = loader._impl
            it = loader._iterator() if loader._iterator is not None else None
            if it is not None:
                it._done = True
            loader._impl = loader._feeder = loader._iterator = None
            if impl is None:
                continue
            impl.cancel()
            stopper = threading.Thread(target=impl.stop, daemon=True,
                                       name="stoker exit: stop a loader")
            stopper.start()
            pending.append((impl, stopper))
        except Exception:  # pragma: no cover - best effort at exit (a thread refused)
            if impl is not None:
                impl.abandon()
    deadline = time.monotonic() + _EXIT_GRACE_S
    for impl, stopper in pending:
        stopper.join(max(0.0, deadline - time.monotonic()))
        if stopper.is_alive():
            impl.abandon()

# At interpreter exit a thread other than the main one that still iterates a loader (a
# daemon thread's `for b in loader`) parks for good at its next iter() or next(), without
# the GIL: while the interpreter finalises it runs no more Python. Left running, it could be
# inside a tensor's deallocation when finalization ends it (torch releases the GIL there:
# "terminate called without an active exception", SIGABRT). The exit waits up to
# _EXIT_PARK_S for each such thread that is alive to park (one busy elsewhere for good
# delays the exit by that much).
_EXITING = False
_ITERATING = weakref.WeakSet()  # the threads other than the main one that called next()
_PARKED_THREADS = weakref.WeakSet()
_PARKED = threading.Condition()
_EXIT_PARK_S = 1.0


def _note_iterating_thread() -> None:
    # In next(): remembers a thread other than the main one, and parks it at exit.
    thread = threading.current_thread()
    if thread is not threading.main_thread():
        _ITERATING.add(thread)
        _park_if_exiting()


def _park_if_exiting() -> None:
    thread = threading.current_thread()
    if _EXITING and thread is not threading.main_thread():
        with _PARKED:
            _PARKED_THREADS.add(thread)
            _PARKED.notify_all()
        _C.park_forever()


@atexit.register  # after _close_loaders_with_callables: run before it (atexit is LIFO)
def _park_iterating_threads() -> None:
    global _EXITING
    with _PARKED:
        _EXITING = True
        deadline = time.monotonic() + _EXIT_PARK_S
        while any(t.is_alive() and t not in _PARKED_THREADS for t in list(_ITERATING)):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            _PARKED.wait(left)


# The keys of Loader.state_dict(), the engine's LoaderState (stoker/loader.h), that
# load_state_dict requires ("batch_transform" is optional: only with a batch_transform that
# has a state).
_STATE_KEYS = ("version", "epoch", "consumed", "world_size", "seed", "shuffle", "num_samples",
               "fingerprint")


def _env_int(name: str) -> Optional[int]:
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} is not an integer") from None


def _distributed_ranks(rank, world_size):
    """(rank, world_size, local_world_size): explicit values, else torch.distributed when
    it is initialised, else torchrun's environment (RANK, WORLD_SIZE, LOCAL_WORLD_SIZE),
    else 0, 1 and 1."""
    found_rank, found_world = None, None
    if torch is not None and (rank is None or world_size is None):
        try:
            import torch.distributed as dist
            if dist.is_available() and dist.is_initialized():
                found_rank, found_world = dist.get_rank(), dist.get_world_size()
        except (ImportError, RuntimeError):  # pragma: no cover - torch without distributed
            pass
    if found_rank is None:
        env_rank, env_world = _env_int("RANK"), _env_int("WORLD_SIZE")
        if env_rank is not None and env_world is not None:
            found_rank, found_world = env_rank, env_world
    rank = (found_rank or 0) if rank is None else rank
    world_size = (found_world or 1) if world_size is None else world_size
    checked = []
    for name, value in (("rank", rank), ("world_size", world_size)):
        i = as_integral(value)
        if i is None:
            raise TypeError(f"{name} must be an int or None, got {type(value).__name__} "
                            f"{value!r}")
        if abs(i) > _INT_MAX:
            raise ValueError(f"{name} must be in [0, {_INT_MAX}], got {i}")
        checked.append(i)
    rank, world_size = checked
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, world_size) and world_size >= 1, got rank "
                         f"{rank}, world_size {world_size}")
    local = _env_int("LOCAL_WORLD_SIZE")
    if local is None or local < 1:
        local = 1
    return rank, world_size, local


# DataLoader arguments stoker has no counterpart for: each gets a TypeError saying what
# to write instead (the ones it maps, num_workers, pin_memory, prefetch_factor and a torch
# sampler, are arguments of Loader).
_DATALOADER_ONLY = {
    "collate_fn": "stoker makes each batch itself: collate='list' keeps each sample's own "
                  "size (detection, segmentation), target_transform= maps labels, and "
                  "stoker.MixUp / stoker.CutMix / stoker.RandomChoice work on the batch",
    "worker_init_fn": "stoker's workers are native threads that run no Python per worker; "
                      "every sample's randomness comes from (seed, epoch, index): pass seed=",
    "persistent_workers": "stoker's threads always persist across epochs (and prefetch the "
                          "next epoch's first batches): remove the argument",
    "batch_sampler": "pass batch_size= and drop_last=, and sampler= for the indices",
    "generator": "pass seed= (by default the seed follows torch.initial_seed(), so "
                 "torch.manual_seed controls it)",
    "timeout": "the loader has no worker processes to time out; a stalled read raises "
               "StokerError from the source's own timeouts",
    "multiprocessing_context": "stoker's workers are native threads, not processes: remove "
                               "the argument",
    "pin_memory_device": "pass device='cuda:N' to make batches on that GPU, or "
                         "pin_memory=True for page-locked host batches",
}


def _default_seed(world_size: int) -> int:
    """The seed when none is given: with ranks 0 (DistributedSampler's default, the same on
    every rank, so the ranks' shares stay disjoint), else torch.initial_seed() when torch is
    imported, so torch.manual_seed controls it as it controls DataLoader's; else 0."""
    if world_size > 1 or torch is None:
        return 0
    return int(torch.initial_seed()) % 2**64


class Loader:
    """Batches of (images, labels) from a source, made on native threads.

    Args:
      source: a source, e.g. ``stoker.ImageFolder(root)``.
      batch_size: samples per batch.
      shuffle: shuffle the order, drawn from ``(seed, epoch)`` (default False).
      seed: the seed for the order and for every sample's augmentation. Default: derived
        from ``torch.initial_seed()`` when torch is imported, so ``torch.manual_seed(s)``
        before building the loader controls it, as it controls DataLoader's (0 without
        torch); with ranks (world_size > 1), 0, as DistributedSampler's default, so every
        rank draws the same order. An explicit ``seed=`` wins.
      drop_last: drop the last batch when it would be short (``DataLoader(drop_last=)``).
        With ranks and ``rank_tail=None`` it also drops the tail that does not split evenly
        over the ranks (``DistributedSampler(drop_last=True)``).
      transforms: stoker transforms (torchvision names): one, a list, ``stoker.Compose([...])``
        or ``torchvision.transforms.Compose([...])`` of them; must end in a fixed size unless
        ``collate="list"`` or the source's images all have one size (``stoker.Npy``,
        ``stoker.HDF5`` raw pixels: no transform needed). A Python callable (or
        ``stoker.Lambda(fn)``) runs per sample on the uint8 [H, W, 3] output-size image,
        under the GIL (see ``stoker.Lambda``). Anything else (a torchvision
        transform object) raises a TypeError that names it and says what to use instead. At
        most one Normalize.
      target_transform: a Python callable applied to each label (an int) of every batch, in
        the iterating thread, after the batch is made: ``target_transform(label)``. Results
        that are all ints give an int64 tensor, all floats a float32 tensor, tensors or arrays
        of one shape a stacked tensor; anything else a list.
      threads: worker threads (default: one per available core), or "auto": tuned while
        you iterate -- more threads while they raise throughput and your step waits for
        data, fewer when it never waits (between 1 and ``max_threads``).
      prefetch: batches in flight (each one batch buffer of memory), or "auto" (between 1
        and ``max_prefetch``: deeper while your step waits and threads cannot help).
      max_threads: the ceiling for ``threads="auto"`` (default: one per available core).
      max_prefetch: the ceiling for ``prefetch="auto"``.
      dtype: "uint8" (raw pixels, no Normalize), "float32", "float16" or "bfloat16".
      layout: "NCHW" (default, ``[B, 3, H, W]``) or "NHWC".
      collate: "batch" (default): each batch is one ``[B, 3, H, W]`` tensor, so the
        transforms must end in a fixed size. "list": each batch's images are a list of B
        tensors, each ``[3, H, W]`` (``[H, W, 3]`` for NHWC) of the sample's own size, as
        its transforms give it (``Resize(256)`` keeps the aspect ratio; no resize keeps the
        image's size): for detection and segmentation inputs. No padding, no copy: each
        tensor views its own region of a pooled batch buffer, reused once the whole batch
        is released (``stats()["batch_region_allocations"]`` stays flat in steady state).
        Not with ``device="cuda"`` (move each tensor with ``.to("cuda")``) or
        ``stoker.diagnose``. "pad" (records): as "batch" for the image (its transforms
        must end in a fixed size), and each array field whose shape varies from sample to
        sample (an undeclared ``.npy`` shard member, a ``Lambda`` output) is one tensor
        padded to the batch's largest sample along each dimension with ``pad_value``
        (default 0; converted to the field's dtype), made natively into pooled batch
        memory, plus ``batch[name + "_lengths"]``: int64 ``[B]`` for a 1-D field (as with
        ``torch.nn.utils.rnn.pad_sequence`` and a lengths tensor), ``[B, ndim]`` (each
        sample's shape) otherwise. The samples of a batch must agree on the field's dtype
        and number of dimensions: a dtype the source declares (``Shards`` ``fields=``
        ``{"ext": "npy", "dtype": ..., "shape": (None,)}``) is checked per sample as it is
        read (``on_error="skip"`` skips a wrong one); an undeclared one when the batch is
        made (StokerError naming the field and the sample ids, not skipped). Text, bytes
        and json fields stay lists; fixed-shape fields are stacked as always.
        A dict (records) chooses per field, e.g. ``{"caption": "list", "tokens": "pad",
        "emb": "batch"}``, each field with the rules above: "pad" pads it when its shape
        varies, "batch" stacks it when its shape is fixed (a list otherwise), "list" gives
        a list of per-sample tensors whatever its shape; fields not named, and the image
        (batched; give the string "list" for per-sample images), as with "batch". A key
        that is not a field, the primary image or label: ValueError.
      pad_value: the value padded fields are filled with under ``collate="pad"``.
      targets: record fields that follow the image through every geometric transform with
        its random draw (the crops, resizes, pads, flips, rotations, affines and
        perspectives; never the photometric ones): a dict field name -> role, or -> a dict
        with "target" and the role's options. Roles: "mask" (a uint8/uint16 ``[H, W]``
        label map of the image's size, or a one-channel PNG read with mode "native":
        resampled nearest-neighbour, padding and warped-in areas set to "ignore_index",
        default 255; delivered ``[B, H, W]``), "boxes" (``[N, 4]`` in "format" "xyxy"
        (default), "xywh" or "cxcywh": delivered float32 xyxy in output pixels, a list of
        ``[N', 4]`` tensors (padded with ``boxes_lengths`` under ``collate="pad"``);
        clamped to the image, and a box narrower or lower than "min_size" (default 1) or
        keeping less than "min_area_fraction" (default 0) of its area, or whose centre a
        RandomIoUCrop left outside its crop, is removed, counted in
        ``stats()["boxes_removed"]``), "keypoints" (``[K, 2]`` or ``[K, 3]`` with
        visibility: delivered float32 ``[K, 3]``, visibility 0 once a point leaves the
        image, never dropped) and "per_box" (rows, e.g. labels ``[N]``, that follow the
        boxes field named by "follows", default the only one: removed with their box).
        E.g. ``targets={"mask": "mask"}``, ``targets={"boxes": {"target": "boxes",
        "format": "xywh"}, "labels": "per_box"}``.
      on_error: "raise" (an exception naming the file) or "skip" (leave the sample out:
        every good sample is delivered once, in full batches but the epoch's last, the same
        for any thread count; counted in ``stats()["skipped"]`` (samples) and
        ``["skipped_files"]`` (distinct files); ``len()`` is then an upper bound, except with
        ranks, where each rank repeats its first samples for its missing ones so that every
        rank keeps ``len()`` batches; an epoch with nothing readable raises StokerError).
      return_indices: also yield the dataset index of every sample.
      dct_scaling: let JPEG decode at 1/2, 1/4, 1/8 size when a crop is downscaled 2x or more
        (faster, slightly different pixels). "auto" (default): on when the transforms have a
        random geometric transform (RandomResizedCrop), where no fixed reference exists; off
        otherwise, so Resize + CenterCrop pipelines are bit-identical to torchvision on PIL.
      max_pixels: refuse images with more pixels than this before decoding them.
      device: "cpu" (default) or "cuda" / "cuda:N": the host makes uint8 batches in pinned
        memory, a copy stream moves them to the GPU, and one kernel per batch applies
        ``Normalize``, ``dtype`` and ``layout`` there (docs/gpu.md). Raises StokerError,
        naming the reason, when no CUDA device can be used. Records: the image as above, every fixed-shape field (stacked, and padded
        under ``collate="pad"``) as a tensor on the device, copied from the pinned batch on
        the same copy stream; lists (text, bytes, json, arrays of varying shape) and the
        padded fields' ``_lengths`` stay on the host. A record without an image (arrays
        only) gets its fields and label on the device (``device_augment`` is refused).
      device_augment: ``stoker.DeviceAugment(...)``: batched GPU augmentations (CUDA only).
      rank, world_size: data-parallel training: this process reads rank ``rank``'s share of
        every epoch (``DistributedSampler``'s rule: samples dealt round-robin; the tail that
        does not split evenly follows ``rank_tail``). None: from ``torch.distributed``
        when it is initialised, else torchrun's ``RANK``/``WORLD_SIZE``, else 0 and 1. The
        default ``threads`` is then the available cores divided by ``LOCAL_WORLD_SIZE``
        (not divided when the launcher pinned this rank to its own cores).
      rank_tail: with ranks, the samples of an epoch that do not split evenly over them:
        "pad" (``DistributedSampler(drop_last=False)``: repeat the start of the epoch's order
        so every rank gets the same number of samples; ``stats()["padded_samples"]``; the
        repeats are counted twice in an eval metric), "drop" (``DistributedSampler(
        drop_last=True)``: leave them out), or "uneven" (every sample exactly once, no
        padding: the first ranks read one sample more, so their batch counts may differ by
        one; random-access sources). None (default): "drop" under ``drop_last=True``, else
        "pad". The short last batch is ``drop_last``'s alone once ``rank_tail`` is given:
        distributed evaluation is ``rank_tail="uneven", drop_last=False``.
      sampler: which samples each epoch visits: ``stoker.WeightedSampler(...)``,
        ``stoker.ClassBalanced()``, ``stoker.Subset(indices)`` or a sequence of indices
        (default: every sample once). Draws depend on ``(seed, epoch)`` only. A torch
        sampler is mapped to stoker's equivalent with a ``stoker.MigrationWarning`` that
        says what to write: ``DistributedSampler`` to ``rank``/``world_size``/``shuffle``/
        ``seed``/``rank_tail`` (the epoch is split once; its ``set_epoch`` sets the
        loader's epoch), ``RandomSampler`` to ``shuffle=True`` (with replacement:
        ``WeightedSampler``), ``SequentialSampler`` to ``shuffle=False``,
        ``SubsetRandomSampler`` to ``Subset`` with ``shuffle=True``,
        ``WeightedRandomSampler`` to ``WeightedSampler``; other samplers (their order is
        drawn in Python each epoch) and iterators raise TypeError.
      batch_transform: ``stoker.MixUp``, ``stoker.CutMix`` or ``stoker.RandomChoice([...])``
        (or a callable ``(images, labels) -> (images, labels)``), applied to every batch
        in the iterating thread (float dtypes, collate="batch"). The loader sets its epoch
        and keeps its random state in ``state_dict()``, so a resumed run mixes (and
        trains) exactly as an uninterrupted one.
      num_workers, pin_memory, prefetch_factor: DataLoader's names, mapped with a
        ``stoker.MigrationWarning``: ``num_workers=N`` is ``threads=N`` (0: 1),
        ``pin_memory=True`` makes batches in page-locked memory (ignored, as by DataLoader,
        without CUDA), ``prefetch_factor=k`` is ``prefetch=k * num_workers`` (the same
        batches in flight). ``collate_fn``, ``worker_init_fn``, ``persistent_workers``,
        ``batch_sampler``, ``generator``, ``timeout``, ``multiprocessing_context`` and
        ``pin_memory_device`` raise TypeError naming stoker's equivalent.
      cache: keep samples in memory so later epochs skip reading and decoding:
        ``"decoded"`` keeps whole decoded images (random transforms still run every epoch;
        images are decoded at full size, so ``dct_scaling`` is off), ``"output"`` keeps
        finished samples of a pipeline without random transforms (validation). Needs
        ``cache_bytes``; hit rate and bytes in use are in ``stats()["cache"]``. Like
        tf.data's cache, an entry is what was first read: a file rewritten or deleted
        between epochs is still served from the cache unless ``cache_validate=True``.
      cache_bytes: the cache's bound in bytes; least recently used entries are evicted.
      cache_validate: with a cache, check before serving an entry that its file (image
        file, indexed shard or HDF5 file) has the size, mtime and inode it had when the
        entry was made (one ``stat()`` per hit); a changed or deleted file is read again
        (a miss; ``stats()["cache"]["stale"]`` counts them). ``.npy`` arrays are not
        checked. Default False.
      monitor: ``stoker.Monitor(reference="stats.json", every="epoch" | N, strict=False)``:
        keeps running statistics of what the loader delivers (class histogram, sampled
        per-channel mean/std, skips) and compares them with a ``stoker stats --json``
        report using ``stoker stats --against``'s tests; drift warns once per item with a
        ``stoker.DriftWarning`` (``strict=True``: raises it from ``next()``) and counts in
        ``stats()["monitor"]`` (docs/diagnosis.md, "Data monitor").

    Iterating yields ``(images, labels)`` torch tensors (numpy arrays without torch) that
    share the batch buffer: no copy. A batch stays valid while you hold it; its buffer
    returns to the pool when released. Each ``iter()`` runs one epoch: the epoch set by
    ``set_epoch()``, or else the one after the previous iteration's. A new ``iter()`` while
    an epoch runs stops that epoch: its iterator raises RuntimeError on its next use (as a
    nested ``for`` over the same loader would otherwise end the outer loop silently).
    ``next()`` from several threads is serialised. ``state_dict()`` / ``load_state_dict()``
    checkpoint the position in the epoch (resumable at another world size).
    """

    def __init__(self, source, *, batch_size: int, shuffle: Optional[bool] = None,
                 seed: Optional[int] = None, drop_last: bool = False, transforms=(), target_transform=None,
                 threads=None, prefetch=2, dtype: str = "float32",
                 layout: str = "NCHW", on_error: str = "raise", return_indices: bool = False,
                 dct_scaling="auto", max_pixels: int = 1 << 28,
                 max_threads: Optional[int] = None, max_prefetch: int = 8, device: str = "cpu",
                 device_augment=None, sampler=None, cache: Optional[str] = None,
                 cache_bytes: Optional[int] = None, rank: Optional[int] = None,
                 world_size: Optional[int] = None,
                 collate: Union[str, Dict[str, str]] = "batch",
                 rank_tail: Optional[str] = None, num_workers: Optional[int] = None,
                 pin_memory: Optional[bool] = None, prefetch_factor: Optional[int] = None,
                 batch_transform=None, cache_validate: bool = False, pad_value: float = 0,
                 monitor=None, targets=None,
                 **dataloader_only):
        # Every argument is checked here, in one place (issue 17 items 18-19).
        for name in dataloader_only:
            if name in _DATALOADER_ONLY:
                raise TypeError(f"Loader() has no {name}= (a DataLoader argument): "
                                f"{_DATALOADER_ONLY[name]}")
            raise TypeError(f"Loader() got an unexpected keyword argument {name!r}")
        if not isinstance(source, _C.Source):
            hint = (f": did you mean stoker.ImageFolder({source!r})?"
                    if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__") else "")
            raise TypeError(
                f"source: {type(source).__name__} is not a stoker source: use stoker.ImageFolder, "
                "stoker.Shards, stoker.Npy or stoker.HDF5 (a torch Dataset runs Python code per "
                f"sample, which the native pipeline cannot call){hint}")
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {_DTYPES}, got {dtype!r}")
        batch_size = _int_arg("batch_size", batch_size, 1, _INT_MAX)
        if seed is not None:
            seed = _int_arg("seed", seed, 0, 2**64 - 1)
        if shuffle is not None:
            shuffle = _bool_arg("shuffle", shuffle)
        if rank_tail is not None:
            rank_tail = _choice_arg("rank_tail", rank_tail, ("pad", "drop", "uneven"))
        threads, prefetch, allocator = self._map_dataloader_args(
            threads, prefetch, num_workers, pin_memory, prefetch_factor)
        drop_last = _bool_arg("drop_last", drop_last)
        return_indices = _bool_arg("return_indices", return_indices)
        on_error = _choice_arg("on_error", on_error, ("raise", "skip"))
        layout = _choice_arg("layout", layout, ("NCHW", "NHWC"))
        field_collate = []
        if isinstance(collate, dict):
            for key, mode in collate.items():
                if not isinstance(key, str):
                    raise TypeError(f"collate: keys are field names, got {key!r}")
                field_collate.append((key, _choice_arg(f"collate[{key!r}]", mode,
                                                       ("batch", "list", "pad"))))
            self._field_lists = {k for k, m in field_collate if m == "list"}
            collate = "batch"
        else:
            collate = _choice_arg("collate", collate, ("batch", "list", "pad"))
            self._field_lists = set()
        if (isinstance(pad_value, (bool, np.bool_)) or not isinstance(pad_value, (int, float, np.integer, np.floating))
                or not np.isfinite(pad_value)):
            raise ValueError(f"pad_value must be a finite number, got {pad_value!r}")
        max_pixels = _int_arg("max_pixels", max_pixels, 0, 2**63 - 1)
        max_threads = _int_arg("max_threads", 0 if max_threads is None else max_threads, 0,
                               _INT_MAX)
        max_prefetch = _int_arg("max_prefetch", max_prefetch, 1, _INT_MAX)
        transforms = _transform_list(transforms)
        # Lambda(fn, fields=...): steps on record fields, apart from the image transforms.
        field_steps = [t for t in transforms if isinstance(t, _C.FieldStep)]
        transforms = [t for t in transforms if not isinstance(t, _C.FieldStep)]
        if target_transform is not None and not callable(target_transform):
            raise TypeError(f"target_transform must be callable, got {target_transform!r}")
        self._records = bool(source.records)
        # The primary image (as the engine picks it): "image", else the first RGB image field.
        rgb = [n for n, d in source.fields.items() if d.startswith(f"{n}: image RGB")]
        self._image_field = "image" if "image" in rgb else (rgb[0] if rgb else None)
        if self._records and target_transform is not None:
            raise ValueError(f"target_transform applies to the labels of (images, labels) "
                             f"batches; {source!r} yields records (dicts of fields): transform "
                             f"the fields in your training step")
        self._target_transform = target_transform
        if batch_transform is not None:
            if not callable(batch_transform):
                raise TypeError(f"batch_transform must be stoker.MixUp, stoker.CutMix, "
                                f"stoker.RandomChoice or a callable, got {batch_transform!r}")
            if dtype == "uint8" or collate == "list":
                raise ValueError("batch_transform mixes float batches: it needs "
                                 "dtype='float32' (or float16/bfloat16) and collate='batch'")
        self._batch_transform = batch_transform
        self._batch_transform_resume = None  # its state_dict() part, until the epoch runs
        dct_auto = isinstance(dct_scaling, str) and dct_scaling == "auto"
        if isinstance(dct_scaling, str):
            if dct_scaling != "auto":
                raise ValueError(f"dct_scaling must be True, False or 'auto', got {dct_scaling!r}")
            dct_scaling = any(t.random_geometry for t in transforms)
        elif not isinstance(dct_scaling, (bool, np.bool_)):
            raise TypeError(f"dct_scaling must be True, False or 'auto', got {dct_scaling!r}")
        self._dct_scaling = bool(dct_scaling)
        auto_threads = threads == "auto"
        auto_prefetch = prefetch == "auto"
        if threads is None or auto_threads:
            threads = 0
        if prefetch == "auto":
            prefetch = 2
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise ValueError(f"threads must be a non-negative int, None or 'auto', got {threads!r}")
        if isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 1:
            raise ValueError(f"prefetch must be a positive int or 'auto', got {prefetch!r}")
        threads = _int_arg("threads", threads, 0, _INT_MAX)
        prefetch = _int_arg("prefetch", prefetch, 1, _INT_MAX)
        self._sampler = sampler
        self._torch_sampler = None
        if _sampler.is_torch_sampler(sampler):
            try:
                size = len(source)
            except TypeError:
                raise TypeError(f"sampler={type(sampler).__name__}(...) needs a source of "
                                f"known length; {source!r} is a stream") from None
            mapped = _sampler.from_torch(sampler, size)
            notes = []
            for key, given in (("shuffle", shuffle), ("rank", rank), ("world_size", world_size),
                               ("rank_tail", rank_tail), ("seed", seed)):
                if key not in mapped:
                    continue
                if given is not None and given != mapped[key]:
                    raise ValueError(f"{key}={given!r} contradicts sampler="
                                     f"{type(sampler).__name__}(...), which means "
                                     f"{key}={mapped[key]!r}: give one of them")
            shuffle = mapped["shuffle"]
            if "rank" in mapped:
                rank, world_size = mapped["rank"], mapped["world_size"]
                rank_tail, seed = mapped["rank_tail"], mapped["seed"]
                self._torch_sampler = sampler
            warnings.warn(f"sampler={type(sampler).__name__}(...) is mapped to stoker's "
                          f"equivalent: {mapped['note']}; write that instead to silence "
                          "this warning", _sampler.MigrationWarning, stacklevel=2)
            sampler = mapped["sampler"]
        shuffle = bool(shuffle)
        rank, world_size, local_world_size = _distributed_ranks(rank, world_size)
        self._seed_from_torch = seed is None and world_size == 1 and torch is not None
        if seed is None:
            seed = _default_seed(world_size)
        self._rank, self._world_size = rank, world_size
        self._rank_tail = rank_tail if rank_tail is not None else (
            "drop" if drop_last else "pad")
        self._drop_last = drop_last
        self._batch_size = batch_size
        if cache not in (None, "decoded", "output"):
            raise ValueError(f"cache must be None, 'decoded' or 'output', got {cache!r}")
        if cache is not None:
            if (isinstance(cache_bytes, bool) or not isinstance(cache_bytes, int)
                    or cache_bytes < 1):
                raise ValueError(f"cache={cache!r} needs cache_bytes, a positive number of "
                                 f"bytes (e.g. 8 << 30), got {cache_bytes!r}")
            if cache == "decoded":
                # cached images are whole, decoded at full size
                if dct_scaling and not dct_auto:
                    raise ValueError("cache='decoded' keeps full-size images: it cannot be "
                                     "combined with dct_scaling=True (leave it 'auto')")
                dct_scaling = False
                self._dct_scaling = False
        elif cache_bytes is not None:
            raise ValueError("cache_bytes given without cache='decoded' or cache='output'")
        cache_validate = _bool_arg("cache_validate", cache_validate)
        if cache_validate and cache is None:
            raise ValueError("cache_validate=True given without cache='decoded' or "
                             "cache='output'")
        sampler_spec = _sampler.as_spec(sampler)
        self._dtype = dtype
        self._seed = int(seed)
        self._shuffle = bool(shuffle)
        self._generation = 0
        self._return_indices = return_indices
        self._source = source
        self._iterator = None
        # iter(), close() and load_state_dict() one thread at a time: each stops the epoch
        # being iterated (whose next() then raises) before it changes the loader.
        self._control = threading.RLock()
        self._feeder = None
        self._collate = collate
        self._batch_hooks = []  # stoker.metrics.every
        if monitor is not None and not isinstance(monitor, _monitor.Monitor):
            raise TypeError(f"monitor must be a stoker.Monitor, got {type(monitor).__name__}")
        self._monitor = monitor
        self._shard_cache_warned = False  # _warn_shard_cache: once per loader
        self._batches_delivered = 0
        options = _C.LoaderOptions(
            batch_size=int(batch_size), shuffle=bool(shuffle), seed=int(seed),
            drop_last=bool(drop_last), transforms=list(transforms), threads=threads,
            prefetch=int(prefetch), dtype=dtype, layout=layout, on_error=on_error,
            dct_scaling=bool(dct_scaling), max_pixels=int(max_pixels), auto_threads=auto_threads,
            auto_prefetch=auto_prefetch, max_threads=int(max_threads or 0),
            max_prefetch=int(max_prefetch), sampler=sampler_spec, cache=cache,
            cache_bytes=int(cache_bytes or 0), rank=rank, world_size=world_size,
            local_world_size=local_world_size, collate=collate, field_collate=field_collate,
            rank_tail=rank_tail,
            allocator=allocator, cache_validate=cache_validate, pad_value=float(pad_value),
            field_steps=field_steps, targets=targets)
        if device != "cpu" or device_augment is not None:
            if collate == "list":
                raise ValueError(
                    f"collate='list' is not supported with device={device!r}: the GPU stage "
                    "works on fixed-size batches; use device='cpu' and move each image with "
                    ".to('cuda', non_blocking=True), or end the transforms in a fixed size "
                    "with collate='batch'")
            if device == "cpu":
                raise ValueError("device_augment needs device='cuda' or 'cuda:N'")
            # The C++ DeviceLoader owns the host Loader (self._impl) and feeds the device.
            self._feeder = _device._DeviceFeeder(source, options, device, dtype, device_augment)
            self._impl = self._feeder.loader
        else:
            self._impl = _C.Loader(source, options)
        if monitor is not None:
            monitor._attach(self, transforms, dtype, layout)
        if field_steps or any(t.name == "Lambda" for t in transforms):
            _WITH_CALLABLES.add(self)
        if self._torch_sampler is not None and hasattr(self._torch_sampler, "set_epoch"):
            # The training loop's sampler.set_epoch(epoch) sets the loader's epoch.
            _forward_set_epoch(self._torch_sampler, self)

    @staticmethod
    def _map_dataloader_args(threads, prefetch, num_workers, pin_memory, prefetch_factor):
        """DataLoader's num_workers, pin_memory and prefetch_factor as stoker's threads,
        prefetch and batch allocator, with a MigrationWarning naming them."""
        notes, allocator = [], None
        if num_workers is not None:
            num_workers = _int_arg("num_workers", num_workers, 0, _INT_MAX)
            if threads is not None:
                raise TypeError("give threads= or num_workers= (DataLoader's name), not both")
            threads = max(1, num_workers)
            notes.append(f"num_workers={num_workers} -> threads={threads}")
        if prefetch_factor is not None:
            prefetch_factor = _int_arg("prefetch_factor", prefetch_factor, 1, _INT_MAX)
            if prefetch != 2:
                raise TypeError("give prefetch= or prefetch_factor= (DataLoader's name), not "
                                "both")
            workers = threads if isinstance(threads, int) and threads > 0 else 1
            prefetch = prefetch_factor * workers
            notes.append(f"prefetch_factor={prefetch_factor} -> prefetch={prefetch} (batches "
                         "in flight)")
        if pin_memory is not None and _bool_arg("pin_memory", pin_memory):
            if torch is not None and torch.cuda.is_available():
                allocator = _C.pinned_allocator(torch.cuda.current_device())
                notes.append("pin_memory=True -> batches in page-locked memory (or pass "
                             "device='cuda' to have them on the GPU)")
            else:
                notes.append("pin_memory=True ignored: no CUDA device (as DataLoader does)")
        if notes:
            warnings.warn("DataLoader arguments mapped: " + "; ".join(notes) + ". Write "
                          "stoker's names to silence this warning", _sampler.MigrationWarning,
                          stacklevel=3)
        return threads, prefetch, allocator

    def _live(self):
        if self._impl is None:
            raise RuntimeError("the loader is closed")
        return self._impl

    def __len__(self) -> int:
        """Batches per epoch for this rank, the whole epoch's also after a mid-epoch
        ``load_state_dict()`` (as DataLoader's and StatefulDataLoader's): an LR schedule of
        ``len(loader) * epochs`` steps is the same schedule after a resume. What is left of
        the epoch is ``batches_left``."""
        n = self._live().__len__()
        if n < 0:  # a stream (e.g. compressed or remote shards): the length is unknown
            raise TypeError("this loader's source is a stream of unknown length; it has no len()")
        return n

    @property
    def batches_left(self) -> int:
        """Batches this rank has left to deliver in the epoch being iterated, or in the one
        the next ``iter()`` runs: after a mid-epoch ``load_state_dict()``, the rest of the
        resumed epoch (until that epoch ends or ``set_epoch()`` names another), so progress
        bars and ETAs count what will come, and ``len(loader) - loader.batches_left`` is the
        resumed epoch's batch index at its start. Under ``on_error="skip"`` an upper bound.
        TypeError for a stream of unknown length."""
        n = (self._feeder or self._live()).batches_left()
        if n < 0:
            raise TypeError("this loader's source is a stream of unknown length; it has no "
                            "batches_left")
        return n

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch the next iteration runs (order and augmentation depend on it)."""
        _C.refuse_in_worker_thread("Loader.set_epoch()")
        epoch = _int_arg("epoch", epoch, 0, 2**63 - 1)
        self._live().set_epoch(epoch)

    @property
    def dataset(self):
        """The source (DataLoader's name for it)."""
        return self._source

    @property
    def sampler(self):
        """The ``sampler=`` given (None: every sample once)."""
        return self._sampler

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def drop_last(self) -> bool:
        """Whether a short last batch is dropped."""
        return self._drop_last

    @property
    def rank_tail(self) -> str:
        """"pad", "drop" or "uneven" (see the class docstring)."""
        return self._rank_tail

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def epoch(self) -> int:
        """The epoch the next iteration runs."""
        return self._live().epoch

    def state_dict(self) -> dict:
        """Where the epoch stands, as a small plain dict (torch.save and
        torch.distributed.checkpoint take it as is): the epoch in progress and the number of
        its samples consumed over all ranks (every rank reports the same when they take the
        same number of batches, as DDP does), or the next epoch at 0 after an epoch's end."""
        st = (self._feeder or self._live()).state()  # the engine's LoaderState
        state = {key: getattr(st, key) for key in _STATE_KEYS}
        if hasattr(self._batch_transform, "state_dict"):
            state["batch_transform"] = self._batch_transform.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        """Resumes from ``state_dict()``'s dict, possibly saved at another world size: the next
        iteration continues its epoch at the next unconsumed sample (every sample of the
        epoch exactly once over both segments, apart from the padding that evens out the
        ranks), with the same pixels as an uninterrupted run. A ``set_epoch()`` naming another
        epoch cancels it. Raises ValueError for a state from a newer format, another dataset
        (size or fingerprint), or another seed or shuffle setting, or with ``consumed`` past
        the epoch's samples (the engine's checks, as for a C++ caller), and ValueError or
        TypeError naming the key for a dict that lacks one of ``state_dict()``'s keys or
        holds a value of the wrong type or range (``epoch=-5``, ``shuffle="False"``,
        ``world_size=0``, ``consumed=1.9``). An epoch being iterated (in another thread)
        stops and its iterator raises RuntimeError."""
        _C.refuse_in_worker_thread("Loader.load_state_dict()")
        impl = self._live()
        if not isinstance(state, dict):
            raise TypeError(f"load_state_dict expects a dict, got {type(state).__name__}")
        # Every key is required and checked (issue 32 items 15, 27, 28): a partial or
        # hand-edited dict must not skip the dataset, seed and shuffle checks.
        missing = [k for k in _STATE_KEYS if k not in state]
        if missing:
            raise ValueError(f"not a stoker Loader state: no {missing[0]!r} (a state_dict() "
                             f"has the keys {', '.join(_STATE_KEYS)})")

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
        with self._control:
            self._finish_current("the loader's state was replaced (load_state_dict()) while "
                                 "this epoch was iterated")
            try:  # the engine checks the version, the dataset, the order and the position
                impl.resume(st)
            except ValueError as e:
                if "with seed=" in str(e) and self._seed_from_torch:
                    raise ValueError(
                        f"{e} (this loader's seed came from torch.initial_seed(): call "
                        "torch.manual_seed() with the first run's seed before building the "
                        "loader, or pass seed=)") from None
                raise
        self._batch_transform_resume = state.get("batch_transform")

    @property
    def source(self):
        """The source the loader reads."""
        return self._source

    def stats(self) -> dict:
        """Counters: images, batches, seconds, images_per_sec, skipped (samples left out under
        ``on_error="skip"``), skipped_files (distinct files among them), per-stage busy seconds
        (read_s, decode_s, augment_s summed over threads; callback_s: the part of augment_s
        spent in Python callables, GIL waits included), worker_wait_s, consumer_wait_s,
        padded_samples, boxes_removed (the boxes a ``targets=`` boxes field lost to its
        min_size / min_area_fraction, or to a RandomIoUCrop that left their centre
        outside its crop), and the same for the current epoch under "epoch";
        threads and prefetch in use, and with "auto" the tuner's last decision ("tuning")
        and how often it changed them. The top-level counters are totals over the loader's life; those under
        "epoch" are the running (or last) epoch's. padded_samples: the samples this rank
        delivered that repeat a sample so that every rank yields the same count. With ranks
        (``rank_tail="pad"``), the end of its share that wraps to the epoch's start
        (``DistributedSampler``'s padding: one sample or none per rank per epoch; counted when
        delivered); for streamed shards with a declared ``length``, the samples of its shards
        read again when they run short of its share (counted when read: exact at the epoch's
        end); under ``on_error="skip"`` with ranks, the repeats standing in for its skipped
        samples. It never counts another rank's repeats: summed over the ranks,
        ``stats()["epoch"]["padded_samples"]`` is the epoch's repeats. shard_cache
        (``Shards(cache_dir=...)`` in stream mode only): downloads and hits of the node-wide
        shard cache by this loader's source, capacity (``cache_bytes``, 0: unbounded), floor
        (the bytes this node's ranks hold in the cache at once: the largest shard seen x 2 x
        ``concurrent_shards`` (2 unshuffled) x ``LOCAL_WORLD_SIZE``), too_small (capacity below
        the floor: shards are evicted while still wanted and downloaded again, as often as
        without a cache or more; a RuntimeWarning says so once, at the end of the first epoch
        that sees it) and advice (what to set). With a ``monitor=``, its state under
        "monitor" (``stoker.Monitor.stats()``). "video" (in the totals and under "epoch"; all
        zero unless the source is a ``stoker.VideoClips``): the decode-video stage, clips,
        frames_decoded (all the decoder produced), frames_converted (distinct wanted frames,
        <= frames_decoded), frames_delivered (clip_len per clip, repeats included),
        gops_decoded (keyframes decoded: >= clips), seeks, indexes_built, and the busy
        seconds demux_s (opening, reading packets, building an index: part of read_s),
        seek_s, decode_s and convert_s (to RGB: these three are decode_s) and transform_s
        (the clip's transforms: part of augment_s)."""
        s = self._live().stats()
        if self._monitor is not None:
            s["monitor"] = self._monitor.stats()
        return s

    def _warn_shard_cache(self) -> None:
        """At an epoch's end: a RuntimeWarning, once, when Shards(cache_bytes=) is below what
        the node's ranks hold in the cache at once (stats()["shard_cache"]["too_small"])."""
        if self._shard_cache_warned or self._impl is None:
            return
        cache = self._impl.stats().get("shard_cache")
        if cache is not None and cache["too_small"]:
            self._shard_cache_warned = True
            warnings.warn("Shards(cache_dir=...): " + cache["advice"], RuntimeWarning,
                          stacklevel=4)

    def trace(self, path=None, *, spans_per_thread: int = _trace.DEFAULT_SPANS_PER_THREAD):
        """Records what the loader's threads do, as spans, until the session stops:
        ``with loader.trace("trace.json"): ...`` writes Chrome trace / Perfetto JSON at the end
        of the block (open it in ui.perfetto.dev or chrome://tracing). Per worker thread: read,
        decode (with its path: region, DCT scale, row-streamed, whole), each transform step,
        the caches and the waits for a free batch slot; on the consumer: each next()
        (hand-off), the wait inside it (with the stage that was short) and the collate. Each
        span carries the sample id, the batch and the epoch. Memory: a ring of
        ``spans_per_thread`` spans (48 bytes each) per recording thread keeps the newest.
        Off (the default) it costs one flag load per step."""
        spans = _int_arg("spans_per_thread", spans_per_thread, 1, 1 << 24)
        return _trace.TraceSession(self._live().tracer, path, spans)

    def __iter__(self):
        _C.refuse_in_worker_thread("iter(loader)")
        _park_if_exiting()
        with self._control:
            return self._iter_locked()

    def _iter_locked(self):
        impl = self._live()
        self._finish_current(_SUPERSEDED)
        self._generation += 1
        (self._feeder or self._impl).start()
        if self._batch_transform is not None:
            # The batch transform follows the epoch now running, continuing a resumed
            # epoch's draws where the checkpoint left them.
            epoch, pending = int(impl.epoch), self._batch_transform_resume
            self._batch_transform_resume = None
            if pending is not None and int(pending.get("epoch", -1)) == epoch:
                self._batch_transform.load_state_dict(pending)
            elif hasattr(self._batch_transform, "set_epoch"):
                self._batch_transform.set_epoch(epoch)
        it = _EpochIterator(self)
        self._iterator = weakref.ref(it)
        return it

    def close(self) -> None:
        """Stops the worker threads now (they also stop when the loader is deleted). Any use
        after it (iteration, len, stats, set_epoch) raises RuntimeError, and so does an
        iteration it interrupts (in another thread)."""
        _C.refuse_in_worker_thread("Loader.close()")
        with self._control:
            self._finish_current("the loader was closed (close()) while this epoch was "
                                 "iterated")
            if self._impl is not None and self._feeder is None:
                # The workers leave here, where Ctrl-C can interrupt the wait for one
                # blocked in a Python callable (the loader then stays open), not in the
                # destructor, which could not be interrupted.
                self._impl.stop()
            self._iterator = None
            self._impl = None
            self._feeder = None

    def _finish_current(self, why: str):
        """Stops the epoch being iterated; its iterator then raises RuntimeError(why) (also
        in a thread that is inside its next(): never a silently short epoch)."""
        it = self._iterator() if self._iterator is not None else None
        if it is not None:
            if not it._done:
                it._why = why
            it._finish()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def dct_scaling(self) -> bool:
        """Whether JPEG DCT-domain downscaling is on (``"auto"`` resolved)."""
        return self._dct_scaling

    @property
    def collate(self) -> str:
        """"batch" or "list" (see the class docstring)."""
        return self._collate

    def _mix(self, batch):
        if self._batch_transform is None:
            return batch
        images, labels = self._batch_transform(batch[0], batch[1])
        return (images, labels) + tuple(batch[2:])

    def _convert(self, arrays):
        if len(arrays) == 2:
            return self._convert_record(*arrays)
        images, labels, ids = arrays
        if self._target_transform is not None:
            labels = _apply_target_transform(self._target_transform, labels)
        if torch is not None:
            if self._dtype == "bfloat16":  # numpy has no bfloat16: the bits travel as int16
                def tensor(a):
                    return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
            else:
                tensor = torch.from_numpy
            images = [tensor(a) for a in images] if isinstance(images, list) else tensor(images)
            if isinstance(labels, np.ndarray):
                labels = torch.from_numpy(labels)
            ids = torch.from_numpy(ids)
        if self._return_indices:
            return images, labels, ids
        return images, labels


    def _convert_record(self, fields, ids):
        """A record batch: every numpy array as a tensor (uint16/32/64 arrays stay numpy:
        torch has no such dtypes), lists stay lists of per-sample values."""
        if torch is not None:
            image = self._image_field

            def tensor(a, bfloat16=False):
                if not isinstance(a, np.ndarray):
                    return a
                if bfloat16:
                    return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
                if a.dtype in (np.uint16, np.uint32, np.uint64):
                    return a
                return torch.from_numpy(a)
            out = {}
            for name, value in fields.items():
                bf = self._dtype == "bfloat16" and name == image
                if isinstance(value, list):
                    out[name] = [tensor(v, bf) for v in value]
                elif name in self._field_lists:  # collate={name: "list"}: per-sample views
                    out[name] = list(tensor(value, bf))
                else:
                    out[name] = tensor(value, bf)
            fields = out
            ids = torch.from_numpy(ids)
        if self._return_indices:
            return fields, ids
        return fields


def _forward_set_epoch(torch_sampler, loader: Loader) -> None:
    """Makes torch_sampler.set_epoch(e) also set the loader's epoch (weakly: the sampler
    does not keep the loader alive)."""
    ref = weakref.ref(loader)
    original = torch_sampler.set_epoch

    def set_epoch(epoch):
        original(epoch)
        target = ref()
        if target is not None and target._impl is not None:
            target.set_epoch(epoch)
    torch_sampler.set_epoch = set_epoch


def _apply_target_transform(fn, labels: np.ndarray):
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


_SUPERSEDED = ("this epoch's iterator was stopped by a newer iter() over the same loader (a "
               "nested for loop over one loader, or another thread iterating it?); use one "
               "iterator at a time")


class _EpochIterator:
    """One epoch. Deleting it (e.g. on ``break``) stops the epoch's work."""

    def __init__(self, loader: Loader):
        self._loader = loader
        self._impl = loader._impl
        self._feeder = loader._feeder  # device loaders: the C++ DeviceLoader's wrapper
        self._done = False
        self._why = None  # set when the epoch was stopped from outside: next() raises it
        self._lock = threading.Lock()  # next() from several threads, one at a time
        self._epoch = int(self._impl.epoch)  # the epoch this iterator runs (the monitor's)
        # The run its start() began: a next() still waiting when another thread starts a
        # newer epoch ends instead of taking that epoch's batches.
        self._run = int(self._impl.run) if self._feeder is None else 0

    def __iter__(self):
        return self

    def __next__(self):
        # Before the lock: a Lambda calling next() would wait for it, and for itself.
        _C.refuse_in_worker_thread("next() on a loader's iterator")
        _note_iterating_thread()  # interpreter exit: _park_iterating_threads
        with self._lock:
            if _profiler_enabled():  # a torch.profiler session records: a named range
                with record_function("stoker.next"):
                    return self._next_locked()
            return self._next_locked()

    def _next_locked(self):
        if self._why is not None:
            raise RuntimeError(self._why)
        if self._done:
            raise StopIteration
        try:
            if self._feeder is not None:  # already device tensors
                arrays = self._feeder.next()
                if arrays is not None:
                    if self._loader._batch_hooks:
                        _metrics._run_hooks(self._loader)
                    if self._loader._records:  # device tensors and host values
                        return self._loader._mix(self._loader._convert_record(*arrays))
                    if self._loader._monitor is not None:
                        self._loader._monitor._observe(arrays[0], arrays[1])
                    return self._loader._mix(
                        arrays if self._loader._return_indices else arrays[:2])
            else:
                arrays = self._impl.next(self._run)
        except BaseException as e:
            if isinstance(e, _monitor.DriftWarning):  # strict monitor: the epoch goes on
                raise
            if self._feeder is None and not isinstance(e, Exception):
                # Ctrl-C (or another interrupt): raised now, without waiting for a worker
                # inside a Python callable, which finishes its sample in the background.
                self._done = True
                self._impl.cancel()
            else:
                self._finish()
            raise
        if arrays is None:
            if self._why is not None:  # stopped from another thread while we waited
                raise RuntimeError(self._why)
            self._done = True
            self._loader._warn_shard_cache()
            if self._loader._monitor is not None:  # strict: raises DriftWarning instead
                self._loader._monitor._end_epoch(self._epoch)
            raise StopIteration
        if self._loader._batch_hooks:
            _metrics._run_hooks(self._loader)
        batch = self._loader._convert(arrays)
        if self._loader._monitor is not None and len(arrays) == 3:
            # The images as delivered, the labels as the source gave them (before
            # target_transform and batch_transform).
            self._loader._monitor._observe(batch[0], arrays[1])
        return self._loader._mix(batch)

    def __len__(self) -> int:
        return len(self._loader)

    def _finish(self):
        if not self._done:
            self._done = True
            (self._feeder or self._impl).stop()

    def __del__(self):
        try:
            if not self._done:
                self._finish()
        except Exception:  # interpreter shutdown
            pass


def diagnose(loader: Loader, step_fn=None, batches: int = 30, agree: int = 3,
             max_rounds: int = 7, *, report=None, tune=None) -> dict:
    """Is the training step waiting for data, and which stage is to blame?

    The verdict rests on how long ``step_fn(images, labels)`` (your training step;
    None: an infinitely fast one) waits inside the loader's ``next()`` while the full
    pipeline feeds it: rounds of ``batches`` steps repeat until the last ``agree``
    rounds say the same ("fed": the step waited < 3% of the time, "marginal": 3-10%,
    "data-bound": > 10%), or ``max_rounds`` have run and the diagnosis says
    "undecided". The machine's and the process's CPU use during the rounds, and the
    step's own on its own, show CPU contention (other processes, the step's threads)
    as a cause of its own. Which stage is short comes from feeding the step from
    (1) one cached batch, (2) a batch copied before each step (a host copy stands in
    for host-to-device without a GPU), (3) one sample copied into every slot, (4) the
    encoded bytes of a few batches cached in memory, and (5) the full pipeline. For a
    ``stoker.VideoClips`` loader, (4) holds the decoded clips and (5) adds the
    decode-video stage (demux, seek, decode, conversion, the clip's transforms): a
    bottleneck there is "decode-video", with its split, the frames decoded per frame
    delivered, and workers x codec_threads set against the cores.

    Returns a dict: ``state`` ("fed", "marginal", "data-bound" or "undecided"),
    ``decided``, ``data_bound``, ``wait_fraction`` (median of the agreeing rounds),
    ``round_waits``, ``cpu`` (cores, machine_busy, process_busy, step_alone,
    others_busy, saturated, contended, summary), ``causes`` ("cpu-contention" and/or
    the stage), ``modes`` (mode, images_per_sec, ratio_to_previous), ``stages`` (busy
    seconds of the full pipeline), ``bottleneck`` ("read", "decode", "augment",
    "fields", "decode-video", "copy", "collate" or ""), ``cost_factor``, ``verdict`` (one line) and ``table``
    (all of it as text).

    ``report="diagnosis.html"`` also writes one self-contained HTML page (inline SVG and
    CSS; it loads nothing): the verdict, a bar chart of the stage times, a timeline excerpt
    of the loader's trace (recorded during the diagnosis unless a ``loader.trace()`` is
    already on), the tuning curve when ``tune`` is given, and the monitor's histograms when
    the loader has a ``monitor=`` (docs/diagnosis.md, "The HTML report"). ``tune``: a
    ``stoker tune --json`` result (a dict, its JSON text or a file), or True to run a short
    sweep of threads (1, 2, 4, ... cores) and prefetch (1, 2, 4) first, 1 s each. The
    result then holds ``report`` (the path) and, with a sweep, ``tune``.
    """
    for name, value, low in (("batches", batches, 1), ("agree", agree, 1),
                             ("max_rounds", max_rounds, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"diagnose: {name} must be an int >= {low}, got {value!r}")
    if agree > max_rounds:
        raise ValueError(f"diagnose: agree ({agree}) must be <= max_rounds ({max_rounds})")
    if tune is not None and tune is not False and report is None:
        raise ValueError("diagnose: tune= goes with report= (it draws the tuning curve)")
    if tune is False:
        tune = None
    if tune is not True:
        tune = _report.load_tune(tune)
    if loader._impl is None:
        raise RuntimeError("the loader is closed")
    if loader.collate == "list":
        raise ValueError("diagnose needs collate='batch' (fixed-size batches): diagnose a loader "
                         "with the same source and a pipeline that ends in a fixed size")
    loader._finish_current("diagnose() ran on the loader while this epoch was iterated")
    step = None
    if step_fn is not None:
        def step(arrays):
            batch = loader._convert(arrays)
            if isinstance(batch, dict):
                step_fn(batch)
            elif isinstance(batch[0], dict):
                step_fn(batch[0])
            else:
                step_fn(batch[0], batch[1])
    if report is None:
        return _C.diagnose(loader._impl, step, batches, agree, max_rounds)
    report = os.fspath(report)
    tune_result = None
    if tune is True:
        from stoker._user_pipeline import default_threads
        tune_result = json.loads(_C.tune(loader._impl, default_threads(), [1, 2, 4], [], 1.0,
                                         0.0, False)["json"])
    tracer = loader._impl.tracer
    session = None if tracer.on else loader.trace()
    try:
        result = _C.diagnose(loader._impl, step, batches, agree, max_rounds)
    finally:
        if session is not None:
            session.stop()
    events = json.loads(tracer.events_json())
    monitor = loader._monitor.stats() if loader._monitor is not None else None
    _report.write(report, result, events=events, tune=tune_result or tune, monitor=monitor,
                  title=f"stoker diagnose: {loader.source!r}")
    result["report"] = report
    if tune_result is not None:
        result["tune"] = tune_result
    return result
