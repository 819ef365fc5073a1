"""stoker.Shards: tar shards in the WebDataset convention, local, over HTTP(S) or from S3."""

from __future__ import annotations

import os
from typing import Optional, Sequence, Union

import inspect

from stoker import _C
from stoker._args import INT64_MAX, int_arg
from stoker._sources import refuse_misplaced


IMAGE_EXTENSIONS = "jpg;png;jpeg;webp;tif;tiff;bmp;ppm;pgm;pbm"


def Shards(urls: Union[str, Sequence[str]], *, image: str = IMAGE_EXTENSIONS, label: str = "cls",
           mode: str = "auto", shuffle_buffer: int = 1000, concurrent_shards: int = 4,
           cache_dir: Optional[str] = None, cache_bytes: int = 0, retries: int = 5,
           backoff_ms: int = 100, verify: bool = True, ca_file: Optional[str] = None,
           endpoint_url: Optional[str] = None, length: Optional[int] = None):
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
    return _C.open_shards([os.fsencode(p) for p in patterns], image, label, mode,
                          int(shuffle_buffer), int(concurrent_shards), cache_dir or "",
                          int(retries), int(backoff_ms), int(cache_bytes), bool(verify),
                          os.fspath(ca_file) if ca_file else "", endpoint_url or "",
                          int(length or 0))


Shards = refuse_misplaced("Shards", tuple(inspect.signature(Shards).parameters), Shards,
                          max_positional=1)
