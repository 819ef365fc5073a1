#!/usr/bin/env python3
"""stoker's benchmark: stoker and its peers side by side, in one run, as ratios.

On one image folder, in one run, this measures
  * torch.utils.data.DataLoader + torchvision + PIL (bench/torch_baseline.py),
    best of num_workers 0, 1, 2, 4 (persistent workers, prefetch 2 and 4);
  * the full-decode ceiling: every file fully decoded by libjpeg-turbo, one
    thread per core, nothing else (`stoker decode`);
  * stoker's engine through the CLI (`stoker bench --json`) at 1 and 2 threads
    for the train and val pipelines, and for uint8 / float32 / float16 / bfloat16;
  * stoker from Python with torch imported (bench/stoker_python.py): peak RSS,
    time to first batch, CPU per 1,000 images including the imports;
  * optionally (--large N) the same train comparison on N generated 2000x1500 JPEGs,
    where DCT-domain scaling should widen stoker's lead;
and prints the measurements, then the ratios against the project's targets.
The machines are shared and noisy: compare ratios from one run, not absolute
numbers across runs.

    /usr/bin/python3 bench/run_bench.py DATA [--epochs 3] [--large 64] [--quick] [--json FILE]

With --baseline OTHER_CLI it compares two builds of the engine instead (a
restructuring that must not change speed): the stoker CLI runs above (train
and val, 1 and 2 threads), this build's and OTHER_CLI's alternating, --rounds
rounds, and prints each side's median and the ratio.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable  # the interpreter the CLI chose (STOKER_PYTHON or /usr/bin/python3)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_json(cmd: list[str]) -> dict:
    log("  $ " + " ".join(cmd))
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def stoker_cli(args, data, pipeline, threads, dtype="float32") -> dict:
    return run_json([args.stoker, "bench", str(data), "--pipeline", pipeline, "--threads",
                     str(threads), "--dtype", dtype, "--epochs", str(args.epochs),
                     "--batch-size", str(args.batch_size), "--json"])


def torch_best(args, data, pipeline) -> dict:
    cmd = [PY, str(ROOT / "bench/torch_baseline.py"), str(data), "--pipeline", pipeline,
           "--epochs", str(args.epochs), "--batch-size", str(args.batch_size), "--json",
           "--quiet"]
    if args.quick:
        cmd += ["--workers", "0,2", "--prefetch", "2"]
    return run_json(cmd)


def ceiling(args, data) -> dict:
    return run_json([args.stoker, "decode", str(data), "--threads", "2", "--epochs",
                     str(args.epochs), "--json"])


def stoker_python(args, data, pipeline, dtype="float32") -> dict:
    return run_json([PY, str(ROOT / "bench/stoker_python.py"), str(data), "--pipeline", pipeline,
                     "--threads", "2", "--epochs", str(args.epochs), "--batch-size",
                     str(args.batch_size), "--dtype", dtype, "--prefetch", "2"])


def repeated_folder(src: Path, repeat: int, dest: Path) -> Path:
    """An ImageFolder of symlinks naming every image of `src` `repeat` times."""
    for cls in sorted(p for p in src.iterdir() if p.is_dir()):
        (dest / cls.name).mkdir(parents=True)
        for f in sorted(cls.iterdir()):
            for k in range(repeat):
                (dest / cls.name / f"{f.stem}_r{k}{f.suffix}").symlink_to(f.resolve())
    return dest


def cpu_incl_import(r: dict, images_per_epoch: int, epochs: int) -> float:
    """CPU-s per 1,000 images with the import cost spread over the timed images."""
    return r["cpu_s_per_1000"] + r["import_cpu_s"] / (images_per_epoch * epochs) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path, help="ImageFolder root")
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs per measurement")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--large", type=int, default=0, metavar="N",
                        help="also compare on N generated 2000x1500 JPEGs (0: skip)")
    parser.add_argument("--quick", action="store_true",
                        help="DataLoader over workers 0 and 2 only (faster, for demos)")
    parser.add_argument("--stoker", default=str(ROOT / "build/stoker"), help="the CLI binary")
    parser.add_argument("--json", type=Path, help="also write all results to this file")
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved repetitions of the stoker CLI runs (median kept)")
    parser.add_argument("--baseline", metavar="CLI",
                        help="compare this build's engine with another build's CLI, side by "
                             "side (nothing else is measured)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="name every image N times (symlinks), e.g. 5 to turn 200 photos "
                             "into a 1,000-image folder that still fits the page cache")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stoker_bench_") as tmp:
        if args.repeat > 1:
            args.data = repeated_folder(args.data, args.repeat, Path(tmp) / "data")
        return compare_builds(args) if args.baseline else run(args)


def compare_builds(args) -> int:
    """This build's engine against args.baseline's, alternating runs: images/s and
    CPU-s per 1,000 images (the steadier figure on a shared machine)."""
    configs = [(p, t) for p in ("train", "val") for t in (1, 2)]
    builds = {"this": args.stoker, "baseline": args.baseline}
    runs: dict = {(b, p, t): [] for b in builds for p, t in configs}
    for rnd in range(args.rounds):
        log(f"round {rnd + 1}/{args.rounds}")
        for p, t in configs:
            for b in (list(builds) if rnd % 2 == 0 else list(reversed(builds))):
                cli = args.stoker
                args.stoker = builds[b]
                runs[(b, p, t)].append(stoker_cli(args, args.data, p, t))
                args.stoker = cli

    def median(b, p, t, key):
        values = sorted(m[key] for m in runs[(b, p, t)])
        return values[len(values) // 2]

    out = {}
    print(f"{'pipeline':8} {'thr':>3} {'img/s this':>10} {'baseline':>9} {'ratio':>6}   "
          f"{'CPU-s/1k this':>13} {'baseline':>9} {'ratio':>6}  rounds")
    for p, t in configs:
        ips = {b: median(b, p, t, "images_per_sec") for b in builds}
        cpu = {b: median(b, p, t, "cpu_s_per_1000") for b in builds}
        out[f"{p}_t{t}"] = {
            b: {"images_per_sec": [m["images_per_sec"] for m in runs[(b, p, t)]],
                "cpu_s_per_1000": [m["cpu_s_per_1000"] for m in runs[(b, p, t)]]}
            for b in builds}
        out[f"{p}_t{t}"]["ratio_images_per_sec"] = ips["this"] / ips["baseline"]
        out[f"{p}_t{t}"]["ratio_cpu_s_per_1000"] = cpu["this"] / cpu["baseline"]
        print(f"{p:8} {t:3d} {ips['this']:10.1f} {ips['baseline']:9.1f} "
              f"{ips['this'] / ips['baseline']:6.3f}   {cpu['this']:13.3f} {cpu['baseline']:9.3f} "
              f"{cpu['this'] / cpu['baseline']:6.3f}  {args.rounds}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


def run(args) -> int:
    r: dict = {"data": str(args.data), "epochs": args.epochs, "batch_size": args.batch_size}
    log("DataLoader baselines")
    r["torch_train"] = torch_best(args, args.data, "train")
    r["torch_val"] = torch_best(args, args.data, "val")
    log(f"full-decode ceiling and stoker (CLI), {args.rounds} interleaved rounds, "
        "median per configuration")
    configs = [(f"stoker_{p}_t{t}", p, t, "float32") for p in ("train", "val") for t in (1, 2)]
    configs += [(f"stoker_train_{d}", "train", 2, d) for d in ("uint8", "float16", "bfloat16")]
    runs: dict = {key: [] for key, *_ in configs}
    runs["ceiling"] = []
    for _ in range(args.rounds):
        runs["ceiling"].append(ceiling(args, args.data))  # the full-decode ceiling, same rounds
        for key, pipeline, threads, dtype in configs:
            runs[key].append(stoker_cli(args, args.data, pipeline, threads, dtype))
    for key, results in runs.items():
        results.sort(key=lambda m: m["images_per_sec"])
        r[key] = results[len(results) // 2]
        r[key]["rounds_images_per_sec"] = [m["images_per_sec"] for m in results]
    log("stoker (Python, torch imported)")
    r["py_train"] = stoker_python(args, args.data, "train")
    r["py_val"] = stoker_python(args, args.data, "val")
    r["torch_import_rss_mib"] = float(subprocess.run(
        [PY, "-c", "import resource, torch, torchvision; "
                   "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"],
        check=True, stdout=subprocess.PIPE, text=True).stdout)
    log("memory at uint8 (DataLoader: PILToTensor, 2 workers, prefetch 2)")
    r["torch_train_uint8"] = run_json([PY, str(ROOT / "bench/torch_baseline.py"), str(args.data),
                                       "--pipeline", "train", "--dtype", "uint8", "--workers", "2",
                                       "--prefetch", "2", "--epochs", str(args.epochs),
                                       "--batch-size", str(args.batch_size), "--json", "--quiet"])
    r["py_train_uint8"] = stoker_python(args, args.data, "train", "uint8")

    if args.large:
        with tempfile.TemporaryDirectory(prefix="stoker_large_") as tmp:
            log(f"generating {args.large} 2000x1500 JPEGs")
            subprocess.run([args.stoker, "synth", tmp, "--classes", "4", "--per-class",
                            str(max(1, args.large // 4)), "--width", "2000", "--height", "1500"],
                           check=True)
            r["large_torch_train"] = torch_best(args, tmp, "train")
            r["large_ceiling"] = ceiling(args, tmp)
            r["large_stoker_train"] = stoker_cli(args, tmp, "train", 2)

    n = r["stoker_train_t2"]["images"]
    ratios = [
        ("train vs DataLoader (best)", r["stoker_train_t2"]["images_per_sec"]
         / r["torch_train"]["best"]["images_per_sec"], ">= 2.3"),
        ("train vs full-decode ceiling", r["stoker_train_t2"]["images_per_sec"]
         / r["ceiling"]["images_per_sec"], ">= 1.1"),
        ("val vs DataLoader (best)", r["stoker_val_t2"]["images_per_sec"]
         / r["torch_val"]["best"]["images_per_sec"], ">= 2.8"),
        ("train CPU-s/1000 vs DataLoader, import excluded", r["py_train"]["cpu_s_per_1000"]
         / r["torch_train"]["best"]["cpu_s_per_1000"], "<= 0.45"),
        ("train CPU-s/1000 vs DataLoader, import included",
         cpu_incl_import(r["py_train"], n, args.epochs)
         / cpu_incl_import({**r["torch_train"]["best"],
                            "import_cpu_s": r["torch_train"]["import_cpu_s"]}, n, args.epochs),
         "<= 0.45"),
        ("Python peak RSS vs DataLoader summed PSS, float32", r["py_train"]["peak_rss_mib"]
         / r["torch_train"]["best"]["pss_mib"], "<= 0.5"),
        ("Python peak RSS vs DataLoader summed PSS, uint8", r["py_train_uint8"]["peak_rss_mib"]
         / r["torch_train_uint8"]["best"]["pss_mib"], "<= 0.5"),
        ("  the same beyond `import torch` (RSS), float32",
         (r["py_train"]["peak_rss_mib"] - r["torch_import_rss_mib"])
         / (r["torch_train"]["best"]["pss_mib"] - r["torch_import_rss_mib"]), ""),
        ("  the same beyond `import torch` (RSS), uint8",
         (r["py_train_uint8"]["peak_rss_mib"] - r["torch_import_rss_mib"])
         / (r["torch_train_uint8"]["best"]["pss_mib"] - r["torch_import_rss_mib"]), ""),
        ("engine memory beyond batch buffers (MiB)", r["stoker_train_t2"]["engine_mib"], "<= 64"),
        ("first batch from Python (ms)", r["py_train"]["first_batch_ms"], "<= 100"),
        ("train 2 threads vs 1 thread", r["stoker_train_t2"]["images_per_sec"]
         / r["stoker_train_t1"]["images_per_sec"], ">= 1.9"),
        ("train uint8 vs float32", r["stoker_train_uint8"]["images_per_sec"]
         / r["stoker_train_t2"]["images_per_sec"], ">= 1.0"),
        ("train float16 vs float32", r["stoker_train_float16"]["images_per_sec"]
         / r["stoker_train_t2"]["images_per_sec"], ">= 1.0 (no slower)"),
        ("train bfloat16 vs float32", r["stoker_train_bfloat16"]["images_per_sec"]
         / r["stoker_train_t2"]["images_per_sec"], ">= 1.0 (no slower)"),
    ]
    if args.large:
        ratios.append(("large train vs DataLoader (best)",
                       r["large_stoker_train"]["images_per_sec"]
                       / r["large_torch_train"]["best"]["images_per_sec"], "grows"))
        ratios.append(("large train vs full-decode ceiling",
                       r["large_stoker_train"]["images_per_sec"]
                       / r["large_ceiling"]["images_per_sec"], ""))
    r["ratios"] = {name: value for name, value, _ in ratios}

    rows = [
        ("DataLoader train (best)", r["torch_train"]["best"]),
        ("DataLoader val (best)", r["torch_val"]["best"]),
        ("full decode, 2 threads", r["ceiling"]),
        ("stoker train, 1 thread", r["stoker_train_t1"]),
        ("stoker train, 2 threads", r["stoker_train_t2"]),
        ("stoker val, 1 thread", r["stoker_val_t1"]),
        ("stoker val, 2 threads", r["stoker_val_t2"]),
        ("stoker train uint8", r["stoker_train_uint8"]),
        ("stoker train float16", r["stoker_train_float16"]),
        ("stoker train bfloat16", r["stoker_train_bfloat16"]),
        ("stoker train (Python)", r["py_train"]),
        ("stoker val (Python)", r["py_val"]),
        ("DataLoader train uint8 (2 workers)", r["torch_train_uint8"]["best"]),
        ("stoker train uint8 (Python)", r["py_train_uint8"]),
    ]
    if args.large:
        rows += [("large: DataLoader train", r["large_torch_train"]["best"]),
                 ("large: full decode", r["large_ceiling"]),
                 ("large: stoker train", r["large_stoker_train"])]
    print(f"{'measurement':32} {'img/s':>9} {'CPU-s/1k':>9} {'mem MiB':>9} {'1st ms':>8}")
    for name, m in rows:
        mem = m.get("pss_mib", m.get("peak_rss_mib", float("nan")))
        first = m.get("first_batch_ms") or float("nan")
        print(f"{name:32} {m['images_per_sec']:9.1f} {m.get('cpu_s_per_1000', float('nan')):9.3f} "
              f"{mem:9.1f} {first:8.1f}")
    print()
    print(f"{'ratio':50} {'value':>8}  target")
    for name, value, target in ratios:
        print(f"{name:50} {value:8.2f}  {target}")
    if args.json:
        args.json.write_text(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
