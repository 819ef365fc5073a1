"""stoker.diagnose: is the training step waiting for data, and which stage is to blame."""

from __future__ import annotations

import json
import os

from stoker import _C, _report


def diagnose(loader, step_fn=None, batches: int = 30, agree: int = 3,
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
