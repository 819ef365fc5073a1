"""stoker: keeps accelerators fed.

A C++ input-pipeline engine for deep-learning training: image folders to
batched tensors on native threads, with the GIL released, each sample written
straight into its slot of a pooled batch buffer.

    import stoker
    loader = stoker.Loader(
        stoker.ImageFolder("data/train"), batch_size=256, shuffle=True,
        transforms=[stoker.RandomResizedCrop(224), stoker.RandomHorizontalFlip(),
                    stoker.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])
    for epoch in range(90):
        loader.set_epoch(epoch)
        for images, labels in loader:
            ...
"""

from stoker import _C, _abi
_abi.check(_C)
from stoker._C import (Coco, HDF5, ImageFolder, Mix, Npy, SegmentationFolder, StokerError,
                       VideoClips)
from stoker import _sources
_sources.guard_class(ImageFolder, ("root",))
_sources.guard_class(Npy, ("images", "labels", "layout"))
_sources.guard_class(HDF5, ("path", "images", "labels", "fields", "max_sample_bytes"))
_sources.guard_class(SegmentationFolder, ("images_dir", "masks_dir", "image_suffix",
                                          "mask_suffix", "mask_dtype", "split"), max_positional=2)
_sources.guard_class(Coco, ("images_dir", "annotations", "drop_empty", "masks", "ignore_index",
                           "labels", "crowd", "max_polygon_points"),
                     max_positional=2)
_sources.guard_class(Mix, ("sources", "weights", "stop", "num_samples", "replacement",
                           "labels"), max_positional=2)
_sources.guard_class(VideoClips, tuple(_sources.keyword_names(VideoClips)), max_positional=1)
from stoker._device import DeviceAugment
from stoker._loader import Loader
from stoker._diagnose import diagnose
from stoker._monitor import DriftWarning, Monitor
from stoker._sampler import ClassBalanced, Subset, WeightedSampler
from stoker._shards import Shards
from stoker._sampler import MigrationWarning
from stoker._batch import CutMix, MixUp, RandomChoice, detection_targets
# One class per declared transform (src/ops/*_transforms.cc), plus Compose and Lambda.
from stoker._transforms import *  # noqa: F401,F403
from stoker import _transforms
# Submodules (not in __all__): stoker.metrics (Prometheus, callbacks), stoker.profiler.
from stoker import metrics, profiler  # noqa: F401

__all__ = [
    "CutMix",
    "MixUp",
    "RandomChoice",
    "ClassBalanced",
    "Coco",
    "DeviceAugment",
    "DriftWarning",
    "HDF5",
    "ImageFolder",
    "Loader",
    "MigrationWarning",
    "Mix",
    "Monitor",
    "diagnose",
    "detection_targets",
    "Npy",
    "SegmentationFolder",
    "Shards",
    "StokerError",
    "Subset",
    "VideoClips",
    "WeightedSampler",
] + _transforms.__all__
from stoker._version import __version__  # generated from include/stoker/version.h
