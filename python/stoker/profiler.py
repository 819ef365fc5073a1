"""stoker in torch.profiler traces.

While a ``torch.profiler.profile`` records, each batch the consumer takes is a
``stoker.next`` range. ``attach(prof, loader)`` (inside the ``with`` block) makes the
profiler's exported trace hold stoker's own spans too: every worker thread's read, decode,
transform and cache spans and the consumer's wait and hand-off, on the profiler's clock.
``merge(path, loader)`` adds them to a trace exported some other way (an ``on_trace_ready``
handler). See docs/profiling.md.
"""

from stoker._trace import attach, merge

__all__ = ["attach", "merge"]
