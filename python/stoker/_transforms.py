"""Transforms with torchvision's names, arguments and meaning.

Each function returns a plain description; the engine compiles the list into
one region decode and one fused resample/flip/normalise/convert pass per
sample. Resampling reproduces Pillow's antialiased bilinear filter, the one
torchvision uses on PIL images. Photometric transforms (ColorJitter,
RandomGrayscale, ...) run, with Pillow's arithmetic, on the output-size image:
after all crops and resizes, wherever they sit in the list.

``transforms=`` takes one transform, a list of them, ``stoker.Compose([...])``
or ``torchvision.transforms.Compose([...])`` holding stoker transforms. A
Python callable (or ``stoker.Lambda(fn)``) runs per sample on the uint8
output-size image, in list order with the photometric transforms, under the
GIL.
"""

from __future__ import annotations

import math
import numbers
from typing import List, Sequence, Tuple, Union

import numpy as np

from stoker import _C

Size = Union[int, Sequence[int]]


def _pair(size: Size, name: str) -> Tuple[int, int]:
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        return int(size), int(size)
    try:
        size = tuple(int(s) for s in size)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: size must be an int or (height, width), got {size!r}") from None
    if len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(f"{name}: size must be an int or (height, width), got {size!r}")
    return size


def _check_interpolation(interpolation, name: str) -> None:
    """Only bilinear (Pillow's antialiased filter) is implemented."""
    if interpolation is None:
        return
    value = getattr(interpolation, "value", interpolation)  # InterpolationMode / PIL enum
    if value in ("bilinear", 2) and not isinstance(value, bool):
        return
    raise ValueError(
        f"{name}: interpolation={interpolation!r} is not supported: stoker resamples with "
        "Pillow's antialiased bilinear filter only (InterpolationMode.BILINEAR, the default, "
        "also accepted as 'bilinear' or PIL.Image.BILINEAR); NEAREST, BICUBIC, BOX, HAMMING "
        "and LANCZOS are not implemented")


def _check_antialias(antialias, name: str) -> None:
    if antialias is None or antialias is True:
        return
    raise ValueError(
        f"{name}: antialias={antialias!r} is not supported: stoker always antialiases, as "
        "torchvision does on PIL images (antialias=True or None)")


def RandomResizedCrop(size: Size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                      interpolation=None, antialias=None):
    """Crop a random area (fraction `scale` of the image, aspect `ratio`) and resize it to `size`."""
    _check_interpolation(interpolation, "RandomResizedCrop")
    _check_antialias(antialias, "RandomResizedCrop")
    h, w = _pair(size, "RandomResizedCrop")
    lo_hi = []
    for name, v in (("scale", scale), ("ratio", ratio)):
        try:
            lo, hi = (float(x) for x in v)
        except (TypeError, ValueError):
            raise TypeError(f"RandomResizedCrop: {name} must be a pair of numbers, got {v!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi)):  # the order: checked by the Loader
            raise ValueError(f"RandomResizedCrop: {name} must be finite numbers, got {v!r}")
        lo_hi += [lo, hi]
    return _C.Transform.random_resized_crop(h, w, *lo_hi)


def Resize(size: Size, interpolation=None, max_size=None, antialias=None):
    """Resize: an int (or [int]) sets the shorter side, aspect kept, the longer side capped at
    `max_size` if given (torchvision's rule); (h, w) sets both."""
    _check_interpolation(interpolation, "Resize")
    _check_antialias(antialias, "Resize")
    shorter = None
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        shorter = int(size)
    elif isinstance(size, (list, tuple)) and len(size) == 1:
        shorter = int(size[0])
    if shorter is not None:
        if max_size is not None and int(max_size) <= shorter:
            raise ValueError(f"Resize: max_size = {max_size} must be strictly greater than the "
                             f"requested size for the smaller edge size = {shorter}")
        return _C.Transform.resize(shorter, int(max_size or 0))
    if max_size is not None:
        raise ValueError("Resize: max_size is only allowed when size is an int (the shorter "
                         f"side), as in torchvision; got size={size!r}")
    h, w = _pair(size, "Resize")
    return _C.Transform.resize_hw(h, w)


def CenterCrop(size: Size):
    """Crop the centre `size` (zero-padded when the image is smaller, as torchvision does)."""
    h, w = _pair(size, "CenterCrop")
    return _C.Transform.center_crop(h, w)


def RandomHorizontalFlip(p: float = 0.5):
    """Mirror the image left-right with probability `p`."""
    return _C.Transform.random_horizontal_flip(float(p))


def RandomVerticalFlip(p: float = 0.5):
    """Mirror the image top-bottom with probability `p`."""
    return _C.Transform.random_vertical_flip(float(p))


def Normalize(mean: Sequence[float], std: Sequence[float], inplace: bool = False):
    """(x / 255 - mean) / std per channel, exactly as ToTensor + Normalize compute it in float32.
    `inplace` is accepted and has no effect (stoker writes each value once)."""
    if len(mean) != 3 or len(std) != 3:
        raise ValueError("Normalize: mean and std need 3 values (RGB)")
    return _C.Transform.normalize([float(m) for m in mean], [float(s) for s in std])


def _jitter_range(value, name: str, center: float, bound: Tuple[float, float],
                  clip_first: bool = True) -> List[float]:
    """torchvision's ColorJitter._check_input."""
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"ColorJitter: if {name} is a single number, it must be "
                             f"non negative, got {value}")
        lo, hi = center - value, center + value
        if clip_first:
            lo = max(lo, 0.0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        lo, hi = float(value[0]), float(value[1])
        if not bound[0] <= lo <= hi <= bound[1]:
            raise ValueError(f"ColorJitter: {name} values should be between {bound}, "
                             f"got {value!r}")
    else:
        raise TypeError(f"ColorJitter: {name} should be a single number or a list/tuple with "
                        f"length 2, got {value!r}")
    return [float(lo), float(hi)]


def ColorJitter(brightness=0, contrast=0, saturation=0, hue=0):
    """torchvision's ColorJitter on the PIL image: the four adjustments in a random order, each
    factor uniform in its range (Pillow's ImageEnhance blends, and its HSV hue shift)."""
    inf = float("inf")
    b = _jitter_range(brightness, "brightness", 1.0, (0, inf))
    c = _jitter_range(contrast, "contrast", 1.0, (0, inf))
    s = _jitter_range(saturation, "saturation", 1.0, (0, inf))
    h = _jitter_range(hue, "hue", 0.0, (-0.5, 0.5), clip_first=False)
    if not -0.5 <= h[0] <= h[1] <= 0.5:
        raise ValueError(f"ColorJitter: hue values should be between (-0.5, 0.5), got {hue!r}")
    return _C.Transform.color_jitter(b, c, s, h)


def RandomGrayscale(p: float = 0.1):
    """With probability `p`, Pillow's convert("L") copied to the three channels."""
    return _C.Transform.random_grayscale(float(p))


def Grayscale(num_output_channels: int = 1):
    """Pillow's convert("L"), as three equal channels (stoker's batches are RGB)."""
    if num_output_channels != 3:
        raise ValueError(
            f"Grayscale: num_output_channels={num_output_channels} is not supported: stoker's "
            "batches have 3 channels; use Grayscale(num_output_channels=3) (three equal "
            "channels) and take one channel of the batch if you need one")
    return _C.Transform.random_grayscale(1.0)


def RandomAutocontrast(p: float = 0.5):
    """With probability `p`, ImageOps.autocontrast: each channel stretched to [0, 255]."""
    return _C.Transform.random_autocontrast(float(p))


def RandomEqualize(p: float = 0.5):
    """With probability `p`, ImageOps.equalize (per-channel histogram equalisation)."""
    return _C.Transform.random_equalize(float(p))


def RandomPosterize(bits: int, p: float = 0.5):
    """With probability `p`, keep the top `bits` bits of every channel."""
    return _C.Transform.random_posterize(int(bits), float(p))


def RandomSolarize(threshold: float, p: float = 0.5):
    """With probability `p`, invert every value >= `threshold`."""
    return _C.Transform.random_solarize(float(threshold), float(p))


def RandomAdjustSharpness(sharpness_factor: float, p: float = 0.5):
    """With probability `p`, ImageEnhance.Sharpness(sharpness_factor)."""
    return _C.Transform.random_adjust_sharpness(float(sharpness_factor), float(p))


def _policy_fill(fill, name: str) -> List[int]:
    if fill is None:
        return [0, 0, 0]
    if isinstance(fill, numbers.Number) and not isinstance(fill, bool):
        fill = [fill] * 3
    fill = [int(f) for f in fill]
    if len(fill) != 3 or not all(0 <= f <= 255 for f in fill):
        raise ValueError(f"{name}: fill must be a number or 3 numbers in [0, 255], got {fill!r}")
    return fill


def _check_nearest(interpolation, name: str) -> None:
    if interpolation is None:
        return
    value = getattr(interpolation, "value", interpolation)
    if value in ("nearest", 0) and not isinstance(value, bool):
        return
    raise ValueError(
        f"{name}: interpolation={interpolation!r} is not supported: stoker's policies use "
        "InterpolationMode.NEAREST (torchvision's default for them) with Pillow's arithmetic")


def TrivialAugmentWide(num_magnitude_bins: int = 31, interpolation=None, fill=None):
    """torchvision's TrivialAugmentWide: one op of 14, uniformly, at a uniform magnitude bin
    with a random sign; on the output-size image, with Pillow's arithmetic (NEAREST warps)."""
    _check_nearest(interpolation, "TrivialAugmentWide")
    return _C.Transform.trivial_augment_wide(int(num_magnitude_bins),
                                             _policy_fill(fill, "TrivialAugmentWide"))


def RandAugment(num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                interpolation=None, fill=None):
    """torchvision's RandAugment: `num_ops` ops drawn uniformly from 14, each at bin
    `magnitude` with a random sign; on the output-size image (NEAREST warps)."""
    _check_nearest(interpolation, "RandAugment")
    return _C.Transform.rand_augment(int(num_ops), int(magnitude), int(num_magnitude_bins),
                                     _policy_fill(fill, "RandAugment"))


def AutoAugment(policy=None, interpolation=None, fill=None):
    """torchvision's AutoAugment with the ImageNet policy (the default): one of its 25
    sub-policies uniformly, each of its two ops applied with its probability at its magnitude;
    on the output-size image (NEAREST warps). CIFAR10 and SVHN policies are not implemented."""
    name = getattr(policy, "value", policy)
    if name not in (None, "imagenet"):
        raise ValueError(f"AutoAugment: policy={policy!r} is not supported: stoker has the "
                         "ImageNet policy (AutoAugmentPolicy.IMAGENET, the default) only; use "
                         "stoker.RandAugment or stoker.TrivialAugmentWide otherwise")
    _check_nearest(interpolation, "AutoAugment")
    return _C.Transform.auto_augment(_policy_fill(fill, "AutoAugment"))


def RandomErasing(p: float = 0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0,
                  inplace: bool = False):
    """torchvision's RandomErasing on the output tensor (after Normalize and the dtype
    conversion), wherever it sits in the list: with probability `p`, a rectangle of area
    fraction `scale` and aspect `ratio` is set to 0. Only value=0 (the default) is
    implemented; `inplace` has no effect."""
    if isinstance(value, (tuple, list)) and all(v == 0 for v in value):
        value = 0
    if isinstance(value, str) or value != 0:
        raise ValueError(f"RandomErasing: value={value!r} is not supported: stoker erases "
                         "with 0 (the default) only")
    if not 0 <= p <= 1:
        raise ValueError(f"RandomErasing: p must be in [0, 1], got {p}")
    if scale[0] > scale[1] or ratio[0] > ratio[1]:
        raise ValueError("RandomErasing: scale and ratio should be of kind (min, max)")
    return _C.Transform.random_erasing(float(p), float(scale[0]), float(scale[1]),
                                       float(ratio[0]), float(ratio[1]))


_PADDING_MODES = {"constant": 0, "edge": 1, "reflect": 2, "symmetric": 3}


def RandomCrop(size: Size, padding=None, pad_if_needed: bool = False, fill=0,
               padding_mode: str = "constant"):
    """torchvision's RandomCrop: optional padding (an int, (left/right, top/bottom) or
    (left, top, right, bottom)), pad_if_needed, then a uniform crop of `size`. padding_mode
    'constant' (with `fill`: a number or 3 numbers in [0, 255]), 'edge', 'reflect' or
    'symmetric' (np.pad's, as torchvision pads a PIL image)."""
    h, w = _pair(size, "RandomCrop")
    if padding_mode not in _PADDING_MODES:
        raise ValueError(f"RandomCrop: padding_mode={padding_mode!r} is not supported: use "
                         "'constant', 'edge', 'reflect' or 'symmetric'")
    fill3 = _warp_fill(fill, "RandomCrop")
    if padding is None:
        pad = [0, 0, 0, 0]
    elif isinstance(padding, numbers.Integral):
        pad = [int(padding)] * 4
    elif len(padding) == 1:
        pad = [int(padding[0])] * 4
    elif len(padding) == 2:
        pad = [int(padding[0]), int(padding[1]), int(padding[0]), int(padding[1])]
    elif len(padding) == 4:
        pad = [int(p) for p in padding]
    else:
        raise ValueError("RandomCrop: padding must be an int or a 1, 2 or 4 element sequence, "
                         f"got {padding!r}")
    if any(p < 0 for p in pad):
        raise ValueError(f"RandomCrop: negative padding {padding!r} is not supported")
    return _C.Transform.random_crop(h, w, pad, bool(pad_if_needed), _PADDING_MODES[padding_mode],
                                    fill3)


def GaussianBlur(kernel_size, sigma=(0.1, 2.0)):
    """torchvision's GaussianBlur: sigma uniform in `sigma` (or fixed), an odd kernel; on the
    output-size image, within 1 level of torchvision (float32 rounding order)."""
    if isinstance(kernel_size, numbers.Integral):
        kernel_size = (int(kernel_size), int(kernel_size))
    kernel_size = tuple(int(k) for k in kernel_size)
    if len(kernel_size) != 2 or any(k <= 0 or k % 2 == 0 for k in kernel_size):
        raise ValueError("GaussianBlur: kernel size should be a tuple/list of two odd positive "
                         f"integers, got {kernel_size!r}")
    if isinstance(sigma, numbers.Number):
        if sigma <= 0:
            raise ValueError("GaussianBlur: if sigma is a single number, it must be positive.")
        sigma = (float(sigma), float(sigma))
    sigma = tuple(float(s) for s in sigma)
    if len(sigma) != 2 or not 0.0 < sigma[0] <= sigma[1]:
        raise ValueError("GaussianBlur: sigma values should be positive and of the form "
                         f"(min, max), got {sigma!r}")
    # torchvision's kernel_size is (width, height); ours is (height, width).
    return _C.Transform.gaussian_blur([kernel_size[1], kernel_size[0]], list(sigma))


def _warp_interpolation(interpolation, name: str, default: int) -> int:
    """Pillow's code for NEAREST (0), BILINEAR (2) or BICUBIC (3); others: ValueError."""
    if interpolation is None:
        return default
    value = getattr(interpolation, "value", interpolation)  # InterpolationMode / PIL enum
    if not isinstance(value, bool):
        if value in ("nearest", 0):
            return 0
        if value in ("bilinear", 2):
            return 2
        if value in ("bicubic", 3):
            return 3
    raise ValueError(
        f"{name}: interpolation={interpolation!r} is not supported: stoker implements "
        "InterpolationMode.NEAREST, BILINEAR and BICUBIC (also 'nearest'/'bilinear'/'bicubic' "
        "or the PIL.Image constants) for the warps, with Pillow's arithmetic; NEAREST_EXACT, "
        "BOX, HAMMING and LANCZOS are not implemented")


def _warp_fill(fill, name: str) -> List[int]:
    """torchvision's _parse_fill for a PIL RGB image: a number or 1 or 3 numbers, truncated to
    int (stoker's range check: 0..255)."""
    if fill is None:
        fill = 0
    if isinstance(fill, numbers.Number) and not isinstance(fill, bool):
        fill = [fill] * 3
    try:
        fill = [int(f) for f in fill]
    except (TypeError, ValueError):
        raise TypeError(f"{name}: fill must be a number or a sequence of 3 numbers, "
                        f"got {fill!r}") from None
    if len(fill) == 1:
        fill = fill * 3
    if len(fill) != 3:
        raise ValueError(f"{name}: the number of elements in fill ({len(fill)}) does not match "
                         "the number of channels of the image (3)")
    if not all(0 <= f <= 255 for f in fill):
        raise ValueError(f"{name}: fill values must be in [0, 255], got {fill!r}")
    return fill


def _setup_angle(x, name: str, req_sizes=(2,)) -> List[float]:
    """torchvision's _setup_angle: a number d >= 0 is (-d, d); else a sequence of req_sizes."""
    if isinstance(x, numbers.Number) and not isinstance(x, bool):
        if x < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        return [-float(x), float(x)]
    if not isinstance(x, (list, tuple)) or len(x) not in req_sizes:
        raise ValueError(f"If {name} is a sequence its length should be one of {req_sizes}.")
    return [float(d) for d in x]


def _center(center, name: str):
    if center is None:
        return False, [0.0, 0.0]
    if not isinstance(center, (list, tuple)) or len(center) != 2:
        raise ValueError(f"{name}: center should be a sequence of length 2, got {center!r}")
    return True, [float(c) for c in center]


def RandomRotation(degrees, interpolation=None, expand: bool = False, center=None, fill=0):
    """torchvision's RandomRotation on the PIL image (Image.rotate): an angle uniform in
    `degrees` ((-d, d) for a number d), counter-clockwise about `center` (default the image
    centre), pixels outside the source set to `fill`. NEAREST (the default), BILINEAR and
    BICUBIC, bit-identical to torchvision on PIL. Runs on the output-size image, so it must follow the
    crops, resizes and flips in the list. expand=True is not supported (one output size)."""
    if expand:
        raise ValueError(
            "RandomRotation: expand=True is not supported: it makes the output size depend on "
            "the angle, and stoker's batches have one size; use expand=False (the default), or "
            "rotate before a fixed-size crop on the batch")
    d = _setup_angle(degrees, "degrees")
    has_center, c = _center(center, "RandomRotation")
    return _C.Transform.random_rotation(d, _warp_interpolation(interpolation, "RandomRotation", 0),
                                        has_center, c, _warp_fill(fill, "RandomRotation"))


def RandomAffine(degrees, translate=None, scale=None, shear=None, interpolation=None, fill=0,
                 center=None):
    """torchvision's RandomAffine on the PIL image (F.affine): angle uniform in `degrees`,
    translation uniform in +-translate * (width, height) rounded to whole pixels, scale uniform
    in `scale`, shear uniform in `shear` (a number s: x in (-s, s); 2 values: x range; 4: x
    and y ranges). NEAREST (the default), BILINEAR and BICUBIC, bit-identical to torchvision
    on PIL. Runs on the output-size image, after the crops, resizes and flips."""
    name = "RandomAffine"
    d = _setup_angle(degrees, "degrees")
    t = [0.0, 0.0]
    if translate is not None:
        if not isinstance(translate, (list, tuple)) or len(translate) != 2:
            raise ValueError("translate should be a sequence of length 2.")
        t = [float(v) for v in translate]
        if not all(0.0 <= v <= 1.0 for v in t):
            raise ValueError("translation values should be between 0 and 1")
    sc = [1.0, 1.0]
    if scale is not None:
        if not isinstance(scale, (list, tuple)) or len(scale) != 2:
            raise ValueError("scale should be a sequence of length 2.")
        sc = [float(v) for v in scale]
        if not all(v > 0 for v in sc):
            raise ValueError("scale values should be positive")
    sh = [0.0, 0.0, 0.0, 0.0]
    if shear is not None:
        s = _setup_angle(shear, "shear", req_sizes=(2, 4))
        sh = s + [0.0, 0.0] if len(s) == 2 else s
    has_center, c = _center(center, name)
    return _C.Transform.random_affine(d, t, sc, sh, _warp_interpolation(interpolation, name, 0),
                                      has_center, c, _warp_fill(fill, name))


def RandomPerspective(distortion_scale: float = 0.5, p: float = 0.5, interpolation=None,
                      fill=0):
    """torchvision's RandomPerspective on the PIL image: with probability `p`, the corners move
    inwards by up to `distortion_scale` of half the size (get_params' integer draws), then
    Pillow's perspective transform (BILINEAR, the default, NEAREST or BICUBIC). The resampling is
    Pillow's, exactly; the 8 coefficients are solved in double and rounded to float32 (as
    torchvision >= 0.15 does), torchvision 0.14 solves in float32: a few pixels per image may
    differ from it. Runs on the output-size image, after the crops, resizes and flips."""
    if not 0.0 <= float(distortion_scale) <= 1.0:
        raise ValueError("RandomPerspective: distortion_scale must be in [0, 1], got "
                         f"{distortion_scale}")
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"RandomPerspective: p must be in [0, 1], got {p}")
    return _C.Transform.random_perspective(
        float(distortion_scale), float(p),
        _warp_interpolation(interpolation, "RandomPerspective", 2),
        _warp_fill(fill, "RandomPerspective"))


class Lambda:
    """A Python step per sample: ``fn(image)`` on the sample's uint8 ``[H, W, 3]`` numpy array
    of the output size (RGB), after all crops and resizes, in list order with the photometric
    transforms and before Normalize and the dtype conversion. ``fn`` returns a uint8 array of
    the same shape (or anything ``numpy.asarray`` turns into one, e.g. a CPU tensor), or None
    after changing ``image`` in place (it is the sample's own copy).

    It runs in the worker threads under the GIL, so Python steps do not run in parallel (numpy
    calls that release the GIL do); its time, GIL waits included, is ``stats()["callback_s"]``,
    summed over threads and part of ``augment_s``. A plain callable in ``transforms=`` is
    wrapped in a Lambda. An exception, or a result of another type, dtype or shape, fails the
    sample: StokerError naming the sample and the exception under ``on_error="raise"``, a
    skipped sample (left out, counted) under ``on_error="skip"``.

    Randomness: with ``rng=True`` it is called as ``fn(image, rng)``, ``rng`` a
    ``numpy.random.Generator`` seeded from ``(seed, epoch, sample, place in the list)``, so
    the output is the same for any thread count. ``fn``'s own random state (``np.random``,
    ``random``) is shared by the threads and makes the output depend on scheduling.
    ``torchvision.transforms.Lambda`` objects are refused: their function expects PIL images
    or tensors; wrap a function of numpy arrays as ``stoker.Lambda(fn)``."""

    def __init__(self, lambd, *, rng: bool = False):
        if not callable(lambd):
            raise TypeError(f"Lambda: {type(lambd).__name__} object is not callable")
        self.lambd = lambd
        self.rng = bool(rng)
        self.name = (getattr(lambd, "__qualname__", None) or getattr(lambd, "__name__", None)
                     or type(lambd).__name__)
        if self.rng:
            def run(image, seed, _fn=lambd):
                return _fn(image, np.random.default_rng(seed))
            self._native = _C.Transform.callback(run, self.name, True)
        else:
            self._native = _C.Transform.callback(lambd, self.name, False)

    def __repr__(self) -> str:
        return f"Lambda({self.name}{', rng=True' if self.rng else ''})"


class Compose:
    """A list of stoker transforms, as ``torchvision.transforms.Compose``."""

    def __init__(self, transforms: Sequence):
        self.transforms = list(transforms)

    def __repr__(self) -> str:
        inner = "".join(f"\n    {t!r}," for t in self.transforms)
        return f"Compose([{inner}\n])"


# What to use instead of torchvision transforms that stoker has no native form of.
_INSTEAD = {
    "ToTensor": "remove it: stoker always yields tensors, and dtype='float32' (the default) "
                "scales to [0, 1] as ToTensor does",
    "PILToTensor": "remove it and pass dtype='uint8' to the Loader",
    "ToPILImage": "remove it: stoker never makes PIL images",
    "ConvertImageDtype": "remove it and pass dtype= to the Loader",
    "Lambda": "its function expects a PIL image or a tensor; stoker.Lambda(fn) calls fn on the "
              "sample's uint8 [H, W, 3] numpy array (use stoker.Lambda(t.lambd) if the function "
              "works on numpy arrays)",
    "AugMix": "not implemented: apply it to the batch",
    "MixUp": "use stoker.MixUp(num_classes=...) on the batches in the training loop",
    "CutMix": "use stoker.CutMix(num_classes=...) on the batches in the training loop",
    "Pad": "not implemented: CenterCrop larger than the image pads with zeros",
    "FiveCrop": "not supported (one image per sample)",
    "TenCrop": "not supported (one image per sample)",
    "ElasticTransform": "not implemented: apply it to the batch, or in a stoker.Lambda",
    "RandomApply": "not implemented: a stoker.Lambda(fn, rng=True) can draw whether to apply "
                   "its step",
    "RandomChoice": "not implemented: a stoker.Lambda(fn, rng=True) can draw which step to "
                    "apply",
    "RandomOrder": "not implemented: list the transforms in one order",
    "RandomInvert": "not implemented: stoker.Lambda(lambda im: 255 - im) inverts; within "
                    "RandAugment/AutoAugment, Invert is one of the ops",
    "LinearTransformation": "not implemented: apply it to the batch (a matrix product on the "
                            "GPU)",
}


def _transform_list(transforms, path: str = "transforms") -> list:
    """Flattens one transform, a list/tuple, stoker.Compose or torchvision's Compose into a list
    of native transforms; anything else is a TypeError naming it and what to use instead."""
    if isinstance(transforms, _C.Transform):
        return [transforms]
    if isinstance(transforms, Lambda):
        return [transforms._native]
    if transforms is None:
        return []
    inner = getattr(transforms, "transforms", None)
    if isinstance(transforms, Compose) or (
            type(transforms).__name__ == "Compose" and isinstance(inner, (list, tuple))):
        transforms = inner
    if isinstance(transforms, (list, tuple)):
        out = []
        for i, t in enumerate(transforms):
            out.extend(_transform_list(t, f"{path}[{i}]"))
        return out
    if (callable(transforms) and not isinstance(transforms, type)
            and not (type(transforms).__module__ or "").startswith("torchvision")):
        return [Lambda(transforms)._native]
    raise TypeError(_unsupported(transforms, path))


def _unsupported(obj, path: str) -> str:
    cls = type(obj)
    name = cls.__name__
    module = cls.__module__ or ""
    what = f"{path}: {module + '.' if module != 'builtins' else ''}{name}"
    if module.startswith("torchvision"):
        import stoker
        if name in _INSTEAD:
            return f"{what} is not supported: {_INSTEAD[name]}"
        if hasattr(stoker, name):
            return (f"{what} is a torchvision transform: use stoker.{name} (same arguments), "
                    "which runs in the native pipeline")
        return (f"{what} is not supported by stoker; see the README's table of torchvision "
                "transforms for what to use instead")
    return (f"{what} is not a stoker transform: transforms= takes stoker transforms "
            "(stoker.RandomResizedCrop(224), ...), a list of them, or stoker.Compose / "
            "torchvision.transforms.Compose of them")
