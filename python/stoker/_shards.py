"""stoker.Shards: tar shards in the WebDataset convention, local or over HTTP."""

from __future__ import annotations

import os
from typing import Optional, Sequence, Union

from stoker import _C


def Shards(urls: Union[str, Sequence[str]], *, image: str = "jpg;png;jpeg", label: str = "cls",
           mode: str = "auto", shuffle_buffer: int = 1000, concurrent_shards: int = 4,
           cache_dir: Optional[str] = None, retries: int = 5, backoff_ms: int = 100,
           length: Optional[int] = None):
    """A source over tar shards (``key.jpg``, ``key.cls``, ... grouped by key).

    Args:
      urls: one pattern or a list: local paths, ``http://``/``https://`` URLs, brace
        ranges with zero padding (``"train-{000000..000146}.tar"``), brace lists
        (``"{a,b}"``) and, for local paths, glob wildcards. Nothing matching is an error.
      image: the image member's extensions, in order of preference (``"jpg;png;jpeg"``).
      label: the extension of the member holding the integer label as text ("" for none:
        labels are -1).
      mode: ``"indexed"`` (local uncompressed ``.tar``: indexed once, index cached beside
        the shard or in ``cache_dir``; the global shuffle, exactly-once and ``on_error="skip"``
        behave as for folders), ``"stream"`` (sequential reads: shard order shuffled by
        (seed, epoch) plus a shuffle buffer; for ``.tar.gz``/``.tgz``/``.tar.zst`` and URLs)
        or ``"auto"`` (indexed when every shard is a local ``.tar``).
      shuffle_buffer: stream mode, samples held for shuffling.
      concurrent_shards: stream mode, shards interleaved when shuffling.
      cache_dir: keeps remote shards read to the end, and indexes of read-only shards.
      retries: attempts per remote shard (connection errors, 5xx, dropped connections;
        each retry resumes where the last one stopped).
      backoff_ms: the first wait between attempts; doubled each time.
      length: stream mode, the number of samples per epoch, declared. Gives the Loader a
        ``len()``, and is required with several ranks (``world_size > 1``): whole shards are
        dealt to ranks and every rank yields exactly its share of ``length`` samples (a rank
        whose shards run short reads them again; samples past its share wait for the next
        epoch). Exactly once per epoch when the shards hold equal counts and their number
        divides by the world size; use ``mode="indexed"`` for exactness in every case.

    In stream mode the length is unknown: ``len()`` of the source or of a Loader over it
    raises TypeError, and iteration ends when the shards do.
    """
    patterns = [urls] if isinstance(urls, (str, os.PathLike)) else list(urls)
    if not patterns:
        raise ValueError("Shards: no shard given")
    return _C.open_shards([os.fspath(p) for p in patterns], image, label, mode,
                          int(shuffle_buffer), int(concurrent_shards), cache_dir or "",
                          int(retries), int(backoff_ms), int(length or 0))
