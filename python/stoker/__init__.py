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

from stoker._C import HDF5, ImageFolder, Npy, StokerError
from stoker._device import DeviceAugment
from stoker._loader import Loader, diagnose
from stoker._sampler import ClassBalanced, Subset, WeightedSampler
from stoker._shards import Shards
from stoker._batch import CutMix, MixUp
from stoker._transforms import (
    AutoAugment,
    CenterCrop,
    ColorJitter,
    Compose,
    GaussianBlur,
    Grayscale,
    Lambda,
    Normalize,
    RandomAdjustSharpness,
    RandomAffine,
    RandomAutocontrast,
    RandomCrop,
    RandomEqualize,
    RandomErasing,
    RandomGrayscale,
    RandomHorizontalFlip,
    RandomPerspective,
    RandomPosterize,
    RandomResizedCrop,
    RandomRotation,
    RandomSolarize,
    RandomVerticalFlip,
    RandAugment,
    Resize,
    TrivialAugmentWide,
)

__all__ = [
    "CutMix",
    "MixUp",
    "AutoAugment",
    "CenterCrop",
    "ColorJitter",
    "Compose",
    "GaussianBlur",
    "Grayscale",
    "Lambda",
    "RandomAdjustSharpness",
    "RandomAffine",
    "RandomAutocontrast",
    "RandomCrop",
    "RandomEqualize",
    "RandomErasing",
    "RandomGrayscale",
    "RandomPerspective",
    "RandomPosterize",
    "RandomRotation",
    "RandomSolarize",
    "RandomVerticalFlip",
    "RandAugment",
    "TrivialAugmentWide",
    "ClassBalanced",
    "DeviceAugment",
    "HDF5",
    "ImageFolder",
    "Loader",
    "diagnose",
    "Normalize",
    "Npy",
    "RandomHorizontalFlip",
    "RandomResizedCrop",
    "Resize",
    "Shards",
    "StokerError",
    "Subset",
    "WeightedSampler",
]
from stoker._version import __version__  # generated from include/stoker/version.h
