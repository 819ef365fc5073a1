"""stoker.Shards: tar shards in the WebDataset convention, local, over HTTP(S) or from S3."""

from __future__ import annotations

import os
from typing import Mapping, Optional, Sequence, Union

import inspect

from stoker import _C
from stoker._args import INT64_MAX, int_arg
from stoker._sources import refuse_misplaced


IMAGE_EXTENSIONS = "jpg;png;jpeg;webp;tif;tiff;bmp;ppm;pgm;pbm"


def Shards(urls: Union[str, Sequence[str]], *, image: str = IMAGE_EXTENSIONS, label: str = "cls",
           mode: str = "auto", shuffle_buffer: int = 1000, concurrent_shards: int = 4,
           cache_dir: Optional[str] = None, cache_bytes: int = 0, retries: int = 5,
           backoff_ms: int = 100, verify: bool = True, ca_file: Optional[str] = None,
           endpoint_url: Optional[str] = None, length: Optional[int] = None,
           fields: Optional[Mapping[str, Union[str, Sequence[str], Mapping[str, object]]]] = None):
    """A source over tar shards (``key.jpg``, ``key.cls``, ... grouped by key).

    Args:
      urls: one pattern or a list: local paths, ``http://``/``https://`` URLs,
        ``s3://bucket/key`` objects, brace ranges with zero padding
        (``"train-{000000..000146}.tar"``), brace lists (``"{a,b}"``) and, for local paths
        and ``s3://`` URLs, glob wildcards (S3: listed with ListObjectsV2; a trailing ``/``
        takes every object under the prefix). Nothing matching is an error. S3 credentials
        and region come from ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
        ``AWS_SESSION_TOKEN``/``AWS_REGION`` or the ``AWS_PROFILE`` profile in
        ``~/.aws/credentials`` and ``~/.aws/config``.
      image: the image member's extensions, in order of preference (default: every format
        stoker decodes, in the order ``"jpg;png;jpeg;webp;tif;tiff;bmp;ppm;pgm;pbm"``).
      label: the extension of the member holding the integer label as text ("" for none:
        labels are -1).
      mode: ``"indexed"`` (local uncompressed ``.tar``: indexed once, index cached beside
        the shard or in ``cache_dir``; the global shuffle, exactly-once and ``on_error="skip"``
        behave as for folders), ``"stream"`` (sequential reads: shard order shuffled by
        (seed, epoch) plus a shuffle buffer; for ``.tar.gz``/``.tgz``/``.tar.zst`` and URLs)
        or ``"auto"`` (indexed when every shard is a local ``.tar``).
      shuffle_buffer: stream mode, samples held for shuffling.
      concurrent_shards: stream mode, shards interleaved when shuffling.
      cache_dir: a cache of remote shards shared by every process on the node: each shard
        is downloaded whole once (file locks keep concurrent fills apart) and read from
        there; also holds indexes of read-only local shards. Every open checks the cached
        copy: its size against what was downloaded, and with a HEAD request whether the
        server still has the same object (ETag, Last-Modified, size); a changed or cut
        copy is downloaded again, and an unreachable server leaves the copy in use.
      cache_bytes: bound on the bytes under ``cache_dir`` (0: none); the least recently
        used shards are removed first.
      retries: attempts per remote shard (connection errors, 5xx, dropped connections;
        each retry resumes where the last one stopped).
      backoff_ms: the first wait between attempts; doubled each time.
      verify: check the TLS certificate of https:// servers (default True).
      ca_file: a PEM file of CAs to trust instead of the system's.
      endpoint_url: an S3-compatible endpoint (``http://host:port``, addressed path-style);
        default ``AWS_ENDPOINT_URL``, else AWS.
      length: stream mode, the number of samples per epoch, declared (an int >= 1; None,
        the default, leaves it unknown; 0 or less is a ValueError). Gives the Loader a
        ``len()``, and is required with several ranks (``world_size > 1``): whole shards are
        dealt to ranks and every rank yields exactly its share of ``length`` samples (a rank
        whose shards run short reads them again; samples past its share wait for the next
        epoch). Exactly once per epoch when the shards hold equal counts and their number
        divides by the world size; use ``mode="indexed"`` for exactness in every case.
        A shard cut at a member boundary (no end-of-archive blocks) is then an error, as in
        indexed mode; without ``length`` it is read as it is and counted in the Loader's
        ``stats()["truncated_shards"]``.

      fields: records (docs/records.md): field name -> the member extensions that
        hold it, ``"jpg;png"`` or ``["jpg", "png"]`` (the first present wins), e.g.
        ``{"image": "jpg;png", "caption": "txt", "meta": "json", "emb": "npy"}``. As in
        webdataset, a member ``dir/abc.x.jpg`` has the key ``dir/abc`` and the extension
        ``x.jpg``; extensions match case-insensitively. The last part of a field's extension
        gives its kind: ``jpg``/``jpeg``/``png``/``webp``/``tif``/``tiff``/``bmp``/``ppm``/
        ``pgm``/``pbm`` an image: the primary one (the field ``"image"``, else the first
        image field whose mode is not ``"native"``) decoded to RGB and transformed; every other image field decoded
        natively, untransformed: an HWC array with the channels the file holds (grey 1,
        grey+alpha 2, RGB 3, RGBA 4; palette PNGs RGB, or RGBA with transparency; BMP and
        PNM RGB) and its bit depth (16-bit PNG and TIFF uint16, else uint8), a list of
        per-sample tensors per batch unless declared. ``{"ext": "png", "mode": "rgb"}``
        decodes a field to 8-bit RGB instead (untransformed), ``"mode": "native"`` makes
        even the field ``"image"`` native (every image field native: no RGB image, so no
        transforms);
        ``{"ext": "png", "dtype": "uint16", "shape": (64, 64, 1)}`` declares what every
        member decodes to (stacked into one tensor; another size, channel count or depth
        is an error of its sample naming the field), ``txt``/``text``/``caption`` a
        ``str`` (UTF-8), ``json`` the parsed object (``json.loads`` of a strict JSON document, at most 256
        levels deep, checked per sample: ``NaN`` and ``Infinity`` are refused), ``npy`` an array
        of the member's dtype and shape (a tensor; numpy for dtypes torch lacks), ``cls``/``cls2``/``class``/``count``/``index``/
        ``inx``/``id``/``label`` an int, anything else ``bytes``. A ``.npy`` field given as
        ``{"ext": "npy", "dtype": "float32", "shape": (512,)}`` declares what every member
        holds: it is then stacked into one tensor per batch, and a member of another dtype
        or shape is an error of its sample naming the field. A dimension given as ``None``
        (or -1) varies from member to member: the field is then a list per batch (padded
        under ``Loader(collate="pad")``), its dtype and number of dimensions still checked
        per sample. Any other member (one that would be ``bytes``) declared so, e.g.
        ``{"ext": "emb.f32", "dtype": "float32", "shape": (512,)}``, is raw elements in C
        order (``numpy.frombuffer``): an array field whose member must hold exactly dtype x
        shape bytes (one dimension ``None``/-1: a multiple, that dimension then follows from
        the size), else an error of its sample naming the field and both sizes (a skip under
        ``on_error="skip"``); little-endian, or big-endian with a ``">f4"``-style dtype
        (swapped as read). Targets that follow the image (docs/targets.md)
        are declared with ``"target"``: ``{"ext": "mask.png", "target": "mask"}`` (an
        image decoded as stored to one channel, palette PNGs to their indices; or a
        ``.npy`` label map; ``"ignore_index"``: its padding value, 255),
        ``{"ext": "boxes.npy", "target": "boxes", "format": "xywh"}`` (float32 [N, 4],
        ``"format"`` xyxy (default), xywh or cxcywh; a ``.json`` member holding a list of
        4-number lists is read as float32 too), ``{"ext": "labels.npy", "target":
        "per_box"}`` (rows that follow the boxes field, ``"follows"``: its name, default
        ``"boxes"``), ``"keypoints"``; checked as ``Loader(targets=)`` checks a
        declaration (the same parser and messages; the format case-insensitive).
        ``stoker convert --masks`` / ``--coco`` writes such shards. A Loader then yields
        dict batches: ``batch["image"]`` the usual image tensor,
        ``batch["label"]`` (a label field named so, else the first) an int64 tensor, other
        label fields int64 tensors, and text, json, bytes and undeclared ``.npy`` fields
        lists of per-sample values. A sample missing a field's member is an error naming the sample
        and the field (a skip under ``on_error="skip"``). ``image=``/``label=`` are the
        shorthand for ``fields={"image": image, "label": label}`` with tuple batches and
        cannot be combined with ``fields``.

    ``classes`` holds the class names (by label) when the shards' directory has the
    ``classes.json`` that ``stoker convert`` writes beside them, else ``[]``.

    In stream mode without ``length`` the length is unknown: ``len()`` of the source or of a Loader over it
    raises TypeError, and iteration ends when the shards do.
    """
    patterns = [urls] if isinstance(urls, (str, bytes, os.PathLike)) else list(urls)
    if not patterns:
        raise ValueError("Shards: no shard given")
    # None is "unknown"; a declared length is a positive count (0 used to mean unknown).
    if length is not None:
        length = int_arg("length", length, 1, INT64_MAX)
    field_list = _field_list(fields, image, label)
    return _C.open_shards([os.fsencode(p) for p in patterns], image, label, mode,
                          int(shuffle_buffer), int(concurrent_shards), cache_dir or "",
                          int(retries), int(backoff_ms), int(cache_bytes), bool(verify),
                          os.fspath(ca_file) if ca_file else "", endpoint_url or "",
                          int(length or 0), field_list)


def _field_list(fields, image, label):
    """Shards(fields=) as [(name, "ext;ext", dtype, shape, mode, {target keys})], checked
    (the target keys by the C++ side);
    [] without fields."""
    if fields is None:
        return []
    if image != IMAGE_EXTENSIONS or label != "cls":
        raise ValueError("Shards: give either fields= or image=/label= (their shorthand), "
                         "not both")
    if not isinstance(fields, Mapping) or not fields:
        raise TypeError(f"Shards: fields must be a non-empty dict of field name -> member "
                        f"extensions, got {fields!r}")
    out = []
    for name, exts in fields.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"Shards: fields: a field name must be a non-empty str, got {name!r}")
        dtype, shape, mode, target = "", [], "", {}
        if isinstance(exts, Mapping):  # {"ext": "npy", "dtype": "float32", "shape": (512,)}
            unknown = set(exts) - {"ext", "dtype", "shape", "mode", *_TARGET_KEYS}
            if unknown or "ext" not in exts or ("dtype" in exts) != ("shape" in exts):
                raise ValueError(f"Shards: fields[{name!r}] as a dict takes \"ext\" and, for "
                                 f".npy, image and raw members, both \"dtype\" and \"shape\", "
                                 f"for image members \"mode\", for targets \"target\", "
                                 f"\"format\", \"follows\", \"ignore_index\"; got {exts!r}")
            target = _target_options(exts)
            if "mode" in exts:
                mode = exts["mode"]
                if mode not in ("native", "rgb"):
                    raise ValueError(f"Shards: fields[{name!r}]: mode must be \"native\" or "
                                     f"\"rgb\", got {mode!r}")
            if "dtype" in exts:
                import numpy as np
                try:
                    dt = np.dtype(exts["dtype"])
                    # ">": big-endian elements (raw members only; the C++ side checks).
                    dtype = (">" if dt.byteorder == ">" else "") + dt.name
                except TypeError as e:
                    raise ValueError(f"Shards: fields[{name!r}]: dtype {exts['dtype']!r} is "
                                     f"not a numpy dtype") from e
                try:
                    shape = [-1 if d is None else int(d) for d in exts["shape"]]
                except TypeError as e:
                    raise TypeError(f"Shards: fields[{name!r}]: shape must be a sequence of "
                                    f"ints (None or -1 where it varies), got "
                                    f"{exts['shape']!r}") from e
                if any(d < -1 for d in shape):
                    raise ValueError(f"Shards: fields[{name!r}]: shape {exts['shape']!r} has a "
                                     f"negative dimension (None or -1 marks one that varies)")
            exts = exts["ext"]
        if isinstance(exts, str):
            parts = [e for e in exts.split(";") if e]
        elif isinstance(exts, (list, tuple)) and all(isinstance(e, str) for e in exts):
            parts = [e for e in exts if e]
        else:
            raise TypeError(f"Shards: fields[{name!r}] must be extensions as \"jpg;png\" or a "
                            f"list of str, got {exts!r}")
        if not parts or any(";" in e for e in parts):
            raise ValueError(f"Shards: fields[{name!r}] names no member extension: {exts!r}")
        out.append((name, ";".join(parts), dtype, shape, mode, target))
    return out


_TARGET_KEYS = ("target", "format", "follows", "ignore_index")


def _target_options(spec):
    """fields[name]'s target keys, as given: the C++ side parses them as Loader(targets=)
    parses a declaration (python/src/target_args.h), its errors naming the field."""
    return {k: spec[k] for k in _TARGET_KEYS if k in spec}


Shards = refuse_misplaced("Shards", tuple(inspect.signature(Shards).parameters), Shards,
                          max_positional=1)
