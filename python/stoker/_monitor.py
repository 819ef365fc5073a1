"""stoker.Monitor: watches what a Loader delivers and warns when it drifts from a reference.

The reference is a ``stoker stats DATA --json`` report. The monitor keeps running
statistics of the batches the loader hands out and, each epoch or every N batches,
compares the window since the last check with the reference using the tests of
``stoker stats --against`` (the engine's own, through ``_C.compare_stats``):

- the class histogram of the labels delivered (chi-square against the reference's class
  proportions, with its effect-size floor);
- the per-channel mean and std of a few sampled images per batch ("colour mean", "colour
  std": the largest per-channel difference, pixels in [0, 1]). The values compared are the
  pixels as ``stoker stats`` measures them: uint8 outputs divided by 255, float outputs
  with the loader's Normalize undone (``x * std + mean``), float outputs without Normalize
  as they are (already ``x / 255``). The reference averages whole images (brought to its
  ``resolution``); the monitor averages what the transforms output (crops, flips, colour
  augmentation), so a pipeline whose augmentation shifts colours on average (ColorJitter
  with an asymmetric range, RandomErasing, Solarize) differs from its reference by that
  much: raise ``colour_threshold`` in ``thresholds`` for it;
- decode failures and skipped samples (``loader.stats()["skipped"]``) are counted, with the
  reference's unreadable fraction beside them; the drift tests do not include them
  (``stats --against`` has no test for them either);
- image sizes, aspect ratios and the format mix are not monitored: the engine does not
  hand the sources' sizes or formats to the consumer, so those items are reported as
  "skipped" (no data on the monitor's side).

A drifted item warns once (``DriftWarning``, a ``UserWarning``) with the test's numbers;
every check that finds it shifted counts one event in ``loader.stats()["monitor"]`` and
in ``stoker.metrics`` (``drift_events``). ``strict=True`` raises the ``DriftWarning`` from
the iterator's ``next()`` instead.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Optional

import numpy as np

from stoker import _C

try:
    import torch
except ImportError:  # pragma: no cover - exercised only without torch
    torch = None

# The tests' thresholds (DriftOptions), by their keyword in _C.compare_stats.
_THRESHOLDS = ("class_alpha", "class_min_shift", "ks_alpha", "ks_min_d", "colour_threshold",
               "format_threshold")


class DriftWarning(UserWarning):
    """What a Loader delivers has drifted from its Monitor's reference (the message says
    which item, the test and its numbers). Raised instead of warned with
    ``Monitor(strict=True)``."""


class Monitor:
    """Running statistics of what a Loader delivers, compared with a reference.

    Args:
      reference: the path of a ``stoker stats DATA --json`` report (the data the model is
        meant to see: the training set, or a known-good drop of it).
      every: ``"epoch"`` (default): compare at each epoch's end; or an int N: compare every
        N batches (the window of N batches since the last check; with ``shuffle=False`` a
        window holds the dataset's order, e.g. one class of an ImageFolder, and the class
        test would see drift that is only order: use "epoch" there).
      strict: raise the DriftWarning (from ``next()``) instead of warning.
      samples_per_batch: images per batch whose pixels feed the colour statistics, spread
        over the batch (default 2).
      pixel_step: of each sampled image, every ``pixel_step``-th row and column is counted
        (default 4: a 16th of the pixels; 1: all of them).
      min_sampled: the colour tests run on a window only when it sampled at least this
        many images (default 64), else they say "skipped": the test compares the sampled
        mean with a fixed threshold (0.02), and the mean of a few photos differs from the
        dataset's by more than that (per-image means spread ~0.1: the mean of k images is
        off by ~0.1 / sqrt(k)).
      thresholds: the tests' thresholds, as ``stoker stats --against`` takes them:
        ``class_alpha``, ``class_min_shift``, ``ks_alpha``, ``ks_min_d``,
        ``colour_threshold``, ``format_threshold`` (defaults: the CLI's).

    A monitor watches one loader: ``stoker.Loader(..., monitor=stoker.Monitor(...))``.
    Its state is ``loader.stats()["monitor"]`` (also ``monitor.stats()``).
    """

    def __init__(self, reference, *, every="epoch", strict: bool = False,
                 samples_per_batch: int = 2, pixel_step: int = 4, min_sampled: int = 64,
                 thresholds: Optional[dict] = None):
        if not isinstance(reference, (str, bytes)) and not hasattr(reference, "__fspath__"):
            raise TypeError(f"reference must be the path of a `stoker stats --json` report, "
                            f"got {type(reference).__name__} {reference!r}")
        self._path = os.fsdecode(os.fspath(reference))
        try:
            with open(self._path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise ValueError(f"reference: cannot read {self._path!r}: {e}") from None
        self._thresholds = {}
        for key, value in (thresholds or {}).items():
            if key not in _THRESHOLDS:
                raise ValueError(f"thresholds: unknown key {key!r} (known: "
                                 f"{', '.join(_THRESHOLDS)})")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"thresholds[{key!r}] must be a number >= 0, got {value!r}")
            self._thresholds[key] = float(value)
        try:  # the engine's reader checks the report (and the thresholds' types)
            _C.compare_stats(text, text, **self._thresholds)
        except ValueError as e:
            raise ValueError(f"reference {self._path!r}: {e}") from None
        self._reference_text = text
        self._reference = json.loads(text)
        if not (every == "epoch" or (isinstance(every, int) and not isinstance(every, bool)
                                     and every >= 1)):
            raise ValueError(f"every must be 'epoch' or a positive int (batches), got {every!r}")
        self._every = every
        if not isinstance(strict, (bool, np.bool_)):
            raise TypeError(f"strict must be True or False, got {strict!r}")
        self._strict = bool(strict)
        if (isinstance(samples_per_batch, bool) or not isinstance(samples_per_batch, int)
                or samples_per_batch < 0):
            raise ValueError(f"samples_per_batch must be an int >= 0, got "
                             f"{samples_per_batch!r}")
        self._samples_per_batch = samples_per_batch
        if isinstance(min_sampled, bool) or not isinstance(min_sampled, int) or min_sampled < 1:
            raise ValueError(f"min_sampled must be an int >= 1, got {min_sampled!r}")
        self._min_sampled = min_sampled
        if isinstance(pixel_step, bool) or not isinstance(pixel_step, int) or pixel_step < 1:
            raise ValueError(f"pixel_step must be an int >= 1, got {pixel_step!r}")
        self._step = pixel_step
        self._loader = None
        self._warned = set()
        self._events = {}
        self._checks = 0
        self._last = []
        self._batches = 0
        self._skipped_at_check = 0
        self._total = _Window()
        self._window = _Window()

    # ---- set-up by the Loader ---------------------------------------------------------

    def _attach(self, loader, transforms, dtype: str, layout: str) -> None:
        if self._loader is not None:
            raise ValueError("monitor: this Monitor already watches another Loader; make one "
                             "Monitor per Loader")
        if loader._records:
            raise ValueError("monitor= needs (images, labels) batches; this source yields "
                             "records (dicts of fields)")
        self._loader = loader
        self._names = list(getattr(loader.source, "classes", None) or [])
        self._channels_last = layout == "NHWC"
        # The affine map from the delivered values to pixels in [0, 1].
        scale, offset = np.ones(3), np.zeros(3)
        if dtype == "uint8":
            scale = np.full(3, 1 / 255)
        else:
            for t in transforms:
                norm = getattr(t, "normalize", None)
                if norm is not None:
                    offset, scale = np.asarray(norm[0], np.float64), np.asarray(norm[1],
                                                                               np.float64)
        self._scale, self._offset = scale, offset

    # ---- per batch --------------------------------------------------------------------

    def _observe(self, images, labels) -> None:
        """Counts one delivered batch: its labels, and the pixels of a few of its images.
        Raises DriftWarning (strict) when a check every N batches finds drift."""
        w = self._window
        if labels is not None:
            lab = labels.cpu().numpy() if torch is not None and isinstance(
                labels, torch.Tensor) else np.asarray(labels)
            lab = lab.reshape(-1).astype(np.int64, copy=False)
            known = lab[lab >= 0]
            w.unlabelled += int(lab.size - known.size)
            if known.size:
                counts = np.bincount(known)
                w.add_counts(counts)
            w.images += int(lab.size)
        n = len(images)
        if n and self._samples_per_batch:
            k = min(n, self._samples_per_batch)
            for i in sorted({int(round(j * (n - 1) / max(1, k - 1))) for j in range(k)}):
                self._sample(images[i], w)
        self._batches += 1
        if self._every != "epoch" and self._batches % self._every == 0:
            self._check(f"batches {self._batches - self._every + 1}-{self._batches}")

    def _sample(self, image, w) -> None:
        # Sums of the delivered values (exact float64 accumulation), mapped to [0, 1] pixels
        # afterwards: v = scale * x + offset, so sum v = scale sum x + offset n and
        # sum v^2 = scale^2 sum x^2 + 2 scale offset sum x + offset^2 n.
        k = self._step
        if k > 1:
            image = image[::k, ::k] if self._channels_last else image[:, ::k, ::k]
        if torch is not None and isinstance(image, torch.Tensor):
            if image.device.type != "cpu":  # a GPU batch: reduced there, 6 numbers back
                x = image.detach().to(torch.float64)
                x = x.reshape(-1, 3).T if self._channels_last else x.reshape(3, -1)
                s, q, n = x.sum(1).cpu().numpy(), (x * x).sum(1).cpu().numpy(), x.shape[1]
                self._add(w, s, q, n)
                return
            if image.dtype == torch.bfloat16:
                image = image.to(torch.float32)
            image = image.detach().numpy()  # a view: no copy
        x = np.asarray(image)
        if x.dtype == np.int16:  # bfloat16 travels as int16 without torch
            x = (x.astype(np.int32) << 16).view(np.float32)
        # One float64 copy of the (strided) pixels, channels first: small (a 16th of the
        # image by default) and summed exactly.
        x = x.reshape(-1, 3).T if self._channels_last else x.reshape(3, -1)
        x = np.array(x, dtype=np.float64, order="C")
        s, q = x.sum(1), np.einsum("ij,ij->i", x, x)
        self._add(w, s, q, x.shape[1])

    def _add(self, w, s, q, n: int) -> None:
        a, b = self._scale, self._offset
        w.sum += a * s + b * n
        w.sumsq += a * a * q + 2 * a * b * s + b * b * n
        w.pixels += int(n)
        w.sampled += 1

    def _end_epoch(self, epoch: int) -> None:
        if self._every == "epoch":
            self._check(f"epoch {epoch}")

    # ---- the comparison ---------------------------------------------------------------

    def _report(self, w) -> dict:
        """The window as a `stoker stats --json` report (what _C.compare_stats reads)."""
        classes = []
        for label, count in enumerate(w.counts.tolist()):
            if count:
                name = self._names[label] if label < len(self._names) else str(label)
                classes.append({"label": label, "name": name, "count": int(count)})
        mean, std = w.mean_std()
        few = w.sampled < self._min_sampled  # no colour verdict: "skipped"
        return {"stoker_stats": 1, "source": f"stoker.Monitor window ({self._loader_name()})",
                "resolution": int(self._reference.get("resolution", 0)),
                "samples": w.images, "images": w.images, "classes": classes,
                "unlabelled": w.unlabelled, "widths": [], "heights": [], "aspects_milli": [],
                "formats": {}, "modes": {}, "pixels": 0 if few else w.pixels,
                "mean": mean, "std": std,
                "errors": []}

    def _loader_name(self) -> str:
        return repr(self._loader.source) if self._loader is not None else "no loader"

    def check(self, what: str = "on request") -> list:
        """Compares the window since the last check with the reference now, warns (or
        raises) for newly drifted items, starts a new window. Returns the verdicts (dicts:
        item, verdict "same" / "shifted" / "skipped", statistic, threshold, detail)."""
        return self._check(what)

    def _check(self, what: str) -> list:
        w, self._window = self._window, _Window()
        if self._loader is not None and self._loader._impl is not None:
            skipped = int(self._loader._impl.stats()["skipped"])
            w.skipped = skipped - self._skipped_at_check
            self._skipped_at_check = skipped
        self._total.merge(w)
        if w.images == 0 and w.sampled == 0:
            return []
        verdicts = json.loads(_C.compare_stats(json.dumps(self._report(w)),
                                               self._reference_text, **self._thresholds))
        if w.sampled < self._min_sampled:
            for v in verdicts:
                if v["item"].startswith("colour"):
                    v["detail"] = (f"{w.sampled} images sampled, fewer than min_sampled "
                                   f"{self._min_sampled}")
        self._checks += 1
        self._last = verdicts
        fresh = []
        for v in verdicts:
            if v["verdict"] != "shifted":
                continue
            self._events[v["item"]] = self._events.get(v["item"], 0) + 1
            if v["item"] not in self._warned:
                self._warned.add(v["item"])
                fresh.append(v)
        for v in fresh:
            message = (f"stoker.Monitor: data drift in {v['item']} ({what}, {w.images} "
                       f"images, {w.sampled} sampled) against {self._path}: {v['detail']}")
            if self._strict:
                raise DriftWarning(message)
            warnings.warn(message, DriftWarning, stacklevel=5)  # the caller of next()
        return verdicts

    def stats(self) -> dict:
        """The monitor's state: checks run, drift events (in all and per item), the items
        warned about, the last verdicts, and the running totals since the loader started
        (images, sampled images, class counts, channel mean/std in [0, 1], skipped samples)
        with the reference's for comparison."""
        t = _Window()
        t.merge(self._total)
        t.merge(self._window)
        mean, std = t.mean_std()
        ref = self._reference
        samples = int(ref.get("samples", 0))
        return {
            "reference": self._path,
            "every": self._every,
            "strict": self._strict,
            "checks": self._checks,
            "drift_events": sum(self._events.values()),
            "events": dict(self._events),
            "warned": sorted(self._warned),
            "last": list(self._last),
            "images": t.images,
            "sampled_images": t.sampled,
            "classes": {(self._names[i] if i < len(self._names) else str(i)): int(c)
                        for i, c in enumerate(t.counts.tolist()) if c},
            "mean": mean,
            "std": std,
            "skipped": t.skipped,
            "reference_classes": {c["name"]: int(c["count"]) for c in ref.get("classes", [])},
            "reference_mean": list(ref.get("mean", [])),
            "reference_std": list(ref.get("std", [])),
            "reference_unreadable_fraction": (int(ref.get("unreadable", 0)) / samples
                                              if samples else 0.0),
        }

    def __repr__(self) -> str:
        return (f"Monitor(reference={self._path!r}, every={self._every!r}, "
                f"strict={self._strict})")


class _Window:
    """Counts and pixel sums of the batches since a check."""

    def __init__(self):
        self.counts = np.zeros(0, np.int64)
        self.images = 0
        self.unlabelled = 0
        self.sampled = 0
        self.pixels = 0
        self.skipped = 0
        self.sum = np.zeros(3)
        self.sumsq = np.zeros(3)

    def add_counts(self, counts: np.ndarray) -> None:
        if counts.size > self.counts.size:
            self.counts = np.pad(self.counts, (0, counts.size - self.counts.size))
        self.counts[:counts.size] += counts

    def merge(self, o: "_Window") -> None:
        self.add_counts(o.counts)
        self.images += o.images
        self.unlabelled += o.unlabelled
        self.sampled += o.sampled
        self.pixels += o.pixels
        self.skipped += o.skipped
        self.sum = self.sum + o.sum
        self.sumsq = self.sumsq + o.sumsq

    def mean_std(self):
        """Per-channel mean and population std of the sampled pixels, clipped to [0, 1]
        (what a stats report holds)."""
        if self.pixels == 0:
            return [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]
        mean = self.sum / self.pixels
        var = np.maximum(self.sumsq / self.pixels - mean * mean, 0.0)
        return ([float(v) for v in np.clip(mean, 0, 1)],
                [float(v) for v in np.clip(np.sqrt(var), 0, 1)])
