"""stoker.Loader: the Python face of the C++ engine, which checks the options and the
checkpoint; this module maps Python's arguments onto them (DataLoader's names, torch samplers,
ranks: _migration, _ranks), converts batches (_convert) and runs the epoch (_epoch)."""

from __future__ import annotations

import threading
import weakref
from typing import Dict, Optional, Union

from stoker import _C, _convert, _device, _exit, _migration, _monitor, _ranks, _sampler
from stoker import _state, _trace
from stoker._args import bool_arg as _bool_arg
from stoker._args import int_arg as _int_arg
from stoker._epoch import SUPERSEDED as _SUPERSEDED
from stoker._epoch import EpochIterator as _EpochIterator
from stoker._transforms import _transform_list

try:  # torch is optional: without it batches are numpy arrays.
    import torch
except ImportError:  # pragma: no cover - exercised only without torch
    torch = None

_INT_MAX = 2**31 - 1


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
      max_padded_bytes: the most bytes a batch's padded fields take together (default 1 GiB;
        (1, 12000) and (12000, 1) pad to [B, 12000, 12000]): past it a StokerError, before
        any allocation, names the field and the sample setting each dimension.
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
                 max_padded_bytes: int = 1 << 30, monitor=None, targets=None,
                 **dataloader_only):
        _migration.refuse_dataloader_only(dataloader_only)
        if not isinstance(source, _C.Source):
            hint = (f": did you mean stoker.ImageFolder({source!r})?"
                    if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__") else "")
            raise TypeError(
                f"source: {type(source).__name__} is not a stoker source: use stoker.ImageFolder, "
                "stoker.Shards, stoker.Npy or stoker.HDF5 (a torch Dataset runs Python code per "
                f"sample, which the native pipeline cannot call){hint}")
        # Every option is checked by name in _C.LoaderOptions and in combination by the
        # engine (Loader::Create): one validator, one message.
        return_indices = _bool_arg("return_indices", return_indices)
        threads, prefetch, allocator = _migration.map_dataloader_args(
            threads, prefetch, num_workers, pin_memory, prefetch_factor)
        transforms = _transform_list(transforms)
        # Lambda(fn, fields=...): steps on record fields, apart from the image transforms.
        field_steps = [t for t in transforms if isinstance(t, _C.FieldStep)]
        transforms = [t for t in transforms if not isinstance(t, _C.FieldStep)]
        if target_transform is not None and not callable(target_transform):
            raise TypeError(f"target_transform must be callable, got {target_transform!r}")
        self._sampler = sampler
        self._torch_sampler = None
        if _sampler.is_torch_sampler(sampler):
            (sampler, shuffle, rank, world_size, rank_tail, seed,
             self._torch_sampler) = _migration.map_torch_sampler(
                sampler, source, shuffle, rank, world_size, rank_tail, seed)
        shuffle = False if shuffle is None else shuffle
        rank, world_size, local_world_size = _ranks.distributed_ranks(rank, world_size)
        self._seed_from_torch = seed is None and world_size == 1 and torch is not None
        if seed is None:
            seed = _ranks.default_seed(world_size)
        field_collate = collate if isinstance(collate, dict) else None
        if field_collate is not None:
            collate = "batch"
        options = _C.LoaderOptions(
            batch_size=batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last,
            transforms=transforms, threads=threads, prefetch=prefetch, dtype=dtype,
            layout=layout, on_error=on_error, dct_scaling=dct_scaling, max_pixels=max_pixels,
            max_threads=max_threads, max_prefetch=max_prefetch,
            sampler=_sampler.as_spec(sampler), cache=cache, cache_bytes=cache_bytes, rank=rank,
            world_size=world_size, local_world_size=local_world_size, collate=collate,
            field_collate=field_collate, rank_tail=rank_tail, allocator=allocator,
            cache_validate=cache_validate, pad_value=pad_value, field_steps=field_steps,
            targets=targets, max_padded_bytes=max_padded_bytes)
        self._records = bool(source.records)
        if self._records and target_transform is not None:
            raise ValueError(f"target_transform applies to the labels of (images, labels) "
                             f"batches; {source!r} yields records (dicts of fields): transform "
                             f"the fields in your training step")
        if batch_transform is not None:
            if not callable(batch_transform):
                raise TypeError(f"batch_transform must be stoker.MixUp, stoker.CutMix, "
                                f"stoker.RandomChoice or a callable, got {batch_transform!r}")
            if dtype == "uint8" or collate == "list":
                raise ValueError("batch_transform mixes float batches: it needs "
                                 "dtype='float32' (or float16/bfloat16) and collate='batch'")
        if monitor is not None and not isinstance(monitor, _monitor.Monitor):
            raise TypeError(f"monitor must be a stoker.Monitor, got {type(monitor).__name__}")
        self._batch_transform = batch_transform
        self._batch_transform_resume = None  # its state_dict() part, until the epoch runs
        self._rank, self._world_size = rank, world_size
        self._rank_tail = rank_tail if rank_tail is not None else (
            "drop" if drop_last else "pad")
        self._drop_last = drop_last
        self._batch_size = batch_size
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
        self._collate = collate
        self._batch_hooks = []  # stoker.metrics.every
        self._monitor = monitor
        self._shard_cache_warned = False  # _epoch.warn_shard_cache: once per loader
        self._batches_delivered = 0
        # The primary image (as the engine picks it): "image", else the first RGB image field.
        rgb = [n for n, d in source.fields.items() if d.startswith(f"{n}: image RGB")]
        self._convert = _convert.Converter(
            dtype, return_indices, target_transform,
            frozenset(k for k, m in (field_collate or {}).items() if m == "list"),
            "image" if "image" in rgb else (rgb[0] if rgb else None))
        # A DeviceLoader (C++) owns the host Loader (self._impl) and feeds the device.
        self._feeder = _device.make_feeder(source, options, device, dtype, device_augment,
                                           collate)
        self._impl = _C.Loader(source, options) if self._feeder is None else self._feeder.loader
        if monitor is not None:
            monitor._attach(self, transforms, dtype, layout)
        if field_steps or any(t.name == "Lambda" for t in transforms):
            _exit.WITH_CALLABLES.add(self)
        if self._torch_sampler is not None and hasattr(self._torch_sampler, "set_epoch"):
            # The training loop's sampler.set_epoch(epoch) sets the loader's epoch.
            _migration.forward_set_epoch(self._torch_sampler, self)

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
        return _state.to_dict((self._feeder or self._live()).state(), self._batch_transform)

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
        st = _state.from_dict(state)
        with self._control:
            self._finish_current("the loader's state was replaced (load_state_dict()) while "
                                 "this epoch was iterated")
            _state.resume(impl, st, self._seed_from_torch)
        self._batch_transform_resume = state.get("batch_transform")

    @property
    def source(self):
        """The source the loader reads."""
        return self._source

    def stats(self) -> dict:
        """Counters, as a dict: images, batches, seconds, images_per_sec, skipped and
        skipped_files (``on_error="skip"``), per-stage busy seconds (read_s, decode_s,
        augment_s, callback_s), worker_wait_s, consumer_wait_s, padded_samples,
        boxes_removed, threads and prefetch in use (with "auto", the tuner's last decision
        under "tuning"), and "cache", "shard_cache", "monitor" and "video" where they apply;
        totals over the loader's life at the top, the current (or last) epoch's under
        "epoch". Each key: docs/diagnosis.md, "The counters"."""
        s = self._live().stats()
        if self._monitor is not None:
            s["monitor"] = self._monitor.stats()
        return s

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
        _exit.park_if_exiting()
        with self._control:
            return self._iter_locked()

    def _iter_locked(self):
        impl = self._live()
        self._finish_current(_SUPERSEDED)
        self._generation += 1
        (self._feeder or self._impl).start()
        if self._batch_transform is not None:
            _state.start_batch_transform(self._batch_transform, int(impl.epoch),
                                         self._batch_transform_resume)
            self._batch_transform_resume = None
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
        """Whether JPEG DCT-domain downscaling is on (``"auto"`` resolved by the engine)."""
        return self._live().dct_scaling

    @property
    def collate(self) -> str:
        """"batch" or "list" (see the class docstring)."""
        return self._collate
