"""``stoker diagnose`` and ``stoker tune`` on the user's own pipeline.

The C++ CLI runs the built-in 224-pixel pipelines itself; given ``--loader``,
``--step`` or ``--transforms`` it runs this module with the same interpreter
(``python -m stoker._user_pipeline diagnose|tune ...``), because the user's Loader
is Python: its transforms may hold Python callables (``stoker.Lambda``), its
sampler and source are built by the user's code.

    --loader SPEC      a function that returns a stoker.Loader: "pkg.module:func" or
                       "path/to/file.py:func" (":func" left out: make_loader)
    --step SPEC        the training step, step(images, labels), found the same way
                       (default: a sleep of --step-ms)
    --transforms TEXT  with DATA (an image folder): a list of stoker transforms as
                       Python expressions, e.g. "RandomResizedCrop(64), Normalize()"
    --report FILE      (diagnose) also write the HTML report (stoker._report); the C++
                       verb hands DATA over with its --pipeline spelled as --transforms
    --tune, --tune-json FILE   (diagnose, with --report) the tuning curve: a short sweep
                       first, or a `stoker tune --json` output
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import time
from pathlib import Path


def load_callable(spec: str, what: str, default: str):
    """The function a SPEC names ("module:func", "file.py:func", or either without
    ":func" for `default`). Raises ValueError naming `what` and the spec."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"{what}: expected 'module:function' or 'file.py:function', got {spec!r}")
    target, _, name = spec.rpartition(":") if ":" in spec else (spec, "", default)
    name = name or default
    if target.endswith(".py") or os.sep in target:
        path = Path(target)
        if not path.is_file():
            raise ValueError(f"{what}: no such file {target!r} (from {spec!r})")
        mod_name = f"_stoker_user_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.path.insert(0, str(path.resolve().parent))  # its own imports, as `python file.py`
        sys.modules[mod_name] = module
        module_spec.loader.exec_module(module)
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())  # a module beside the user, as `python -m`
        try:
            module = importlib.import_module(target)
        except ImportError as e:
            raise ValueError(f"{what}: cannot import module {target!r} (from {spec!r}): {e}") from e
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ValueError(f"{what}: {target!r} has no function {name!r} (from {spec!r})")
    return fn


def transforms_from_text(text: str) -> list:
    """stoker transforms from "Name(args), Name(args)": evaluated with only stoker's
    names in scope (no builtins)."""
    import stoker

    names = {n: getattr(stoker, n) for n in dir(stoker) if not n.startswith("_")}
    try:
        value = eval(f"[{text}]", {"__builtins__": {}}, names)  # noqa: S307 (the user's own CLI text)
    except Exception as e:
        raise ValueError(f"--transforms: cannot read {text!r}: {type(e).__name__}: {e}") from e
    return value


def build_loader(args):
    import stoker

    if args.loader:
        loader = load_callable(args.loader, "--loader", "make_loader")()
        if not isinstance(loader, stoker.Loader):
            raise ValueError(f"--loader: {args.loader!r} returned {type(loader).__name__}, "
                             "not a stoker.Loader")
        return loader
    if not args.data:
        raise ValueError("give DATA (an image folder) with --transforms, or --loader SPEC")
    transforms = transforms_from_text(args.transforms) if args.transforms else None
    kwargs = {"batch_size": args.batch_size, "shuffle": True}
    if args.threads:
        kwargs["threads"] = args.threads
    if args.prefetch:
        kwargs["prefetch"] = args.prefetch
    if args.dtype:
        kwargs["dtype"] = args.dtype
    return stoker.Loader(stoker.ImageFolder(args.data), transforms=transforms, **kwargs)


def build_step(args):
    if args.step:
        return load_callable(args.step, "--step", "step")
    if args.step_ms > 0:
        seconds = args.step_ms / 1000.0
        return lambda images, labels: time.sleep(seconds)
    return None


def int_list(text: str) -> list:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected integers >= 1, got {text!r}")
    return values


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stoker", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = p.add_subparsers(dest="verb", required=True)
    for verb in ("diagnose", "tune"):
        v = verbs.add_parser(verb)
        v.add_argument("data", nargs="?", help="image folder (with --transforms)")
        v.add_argument("--loader", help="function returning a stoker.Loader: module:func or file.py:func")
        v.add_argument("--transforms", help="stoker transforms, e.g. 'CenterCrop(64), Normalize()'")
        if verb == "diagnose":
            v.add_argument("--batch-size", type=int, default=64)
        else:
            v.add_argument("--batch-size", type=int_list, default=None,
                           help="batch sizes to sweep (default: the loader's; 64 with DATA)")
        v.add_argument("--dtype", default=None)
        v.add_argument("--step-ms", type=float, default=0.0)
        v.add_argument("--json", action="store_true")
        if verb == "diagnose":
            v.add_argument("--step", help="the training step, step(images, labels): module:func or file.py:func")
            v.add_argument("--threads", type=int, default=0)
            v.add_argument("--prefetch", type=int, default=0)
            v.add_argument("--batches", type=int, default=30)
            v.add_argument("--agree", type=int, default=3)
            v.add_argument("--max-rounds", type=int, default=7)
            v.add_argument("--report", help="write the diagnosis as one HTML page")
            v.add_argument("--tune", action="store_true",
                           help="with --report: run a short tune sweep, draw its curve")
            v.add_argument("--tune-json", help="with --report: a `stoker tune --json` output")
        else:
            v.add_argument("--threads", type=int_list, default=None)
            v.add_argument("--prefetch", type=int_list, default=[1, 2, 4, 8])
            v.add_argument("--seconds", type=float, default=2.0)
            v.add_argument("--no-auto", action="store_true")
            v.add_argument("--codec-threads", type=int_list, default=None,
                           help="a stoker.VideoClips loader: FFmpeg threads per clip to sweep "
                                "too (default: the source's own)")
    return p


def default_threads() -> list:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    out, t = [], 1
    while t < cores:
        out.append(t)
        t *= 2
    return out + [cores]


def run(argv) -> int:
    args = parser().parse_args(argv)
    import stoker

    if args.verb == "tune":
        threads, args.threads = args.threads, 0  # build_loader's scalar: the sweep sets it
        prefetch, args.prefetch = args.prefetch, 0
        sizes = args.batch_size or []
        args.batch_size = sizes[0] if sizes else 64
        loader = build_loader(args)
        r = stoker._C.tune(loader._impl, threads or default_threads(), prefetch,
                           sizes, args.seconds, args.step_ms,
                           not args.no_auto, args.codec_threads or [])
        print(r["json"] if args.json else r["table"], end="" if not args.json else "\n")
        return 0
    loader = build_loader(args)
    tune = True if args.tune else args.tune_json
    r = stoker.diagnose(loader, build_step(args), batches=args.batches, agree=args.agree,
                        max_rounds=args.max_rounds, report=args.report, tune=tune)
    if args.report:
        print(f"stoker diagnose: report written to {args.report}", file=sys.stderr)
    if args.json:
        out = {k: v for k, v in r.items() if k not in ("table", "tune")}
        out["tool"] = "diagnose"
        print(json.dumps(out))
    else:
        source = args.loader or args.data
        print(f"stoker diagnose  {source}  batch={loader.batch_size} "
              f"threads={loader.stats()['threads']} step="
              f"{args.step or f'{args.step_ms:.1f} ms'}")
        print(r["table"], end="")
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        return run(argv)
    except (ValueError, TypeError, RuntimeError) as e:
        verb = argv[0] if argv else "diagnose"
        if "--json" in argv:
            print(json.dumps({"tool": verb, "error": str(e), "code": type(e).__name__}))
        print(f"stoker {verb}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
