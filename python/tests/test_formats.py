"""BMP, WebP, TIFF and PNM (PPM/PGM/PBM): files written by Pillow (or by hand
where Pillow cannot write the variant) decode to exactly the pixels Pillow's
Image.open(f).convert("RGB") gives, which is what torchvision's ImageFolder
loader returns; truncated and corrupt files give errors naming the format."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import stoker
from stoker import _C
from conftest import photo


def pillow_rgb(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def encode(img: Image.Image, fmt: str, **kwargs) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kwargs)
    return buf.getvalue()


def rgb(w=67, h=45, seed=0) -> Image.Image:
    return Image.fromarray(photo(w, h, seed))


def rgba(w=67, h=45, seed=0) -> Image.Image:
    alpha = np.random.default_rng(seed + 100).integers(0, 256, size=(h, w), dtype=np.uint8)
    return Image.fromarray(np.dstack([photo(w, h, seed), alpha]), "RGBA")


def grey16(w=67, h=45, seed=0) -> Image.Image:
    # Values over the whole 16-bit range, many above 255.
    v = np.random.default_rng(seed).integers(0, 65536, size=(h, w)).astype(np.int32)
    v[0, :10] = np.arange(10)  # some small ones too
    return Image.fromarray(v, "I")


def assert_same_as_pillow(data: bytes):
    want = pillow_rgb(data)
    got = _C._decode(data)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- BMP ----

BMP_CASES = {
    "rgb24": lambda: encode(rgb(), "BMP"),
    "rgb24_odd_width": lambda: encode(rgb(w=13, h=7), "BMP"),
    "rgba32": lambda: encode(rgba(), "BMP"),
    "grey8": lambda: encode(rgb().convert("L"), "BMP"),
    "palette8": lambda: encode(rgb().quantize(colors=100), "BMP"),
    "bilevel1": lambda: encode(rgb(w=29).convert("1"), "BMP"),
}


def bmp_top_down(data: bytes) -> bytes:
    """A 24-bit bottom-up BMP rewritten top-down (negative height)."""
    offset = int.from_bytes(data[10:14], "little")
    w = int.from_bytes(data[18:22], "little", signed=True)
    h = int.from_bytes(data[22:26], "little", signed=True)
    stride = (w * 3 + 3) & ~3
    rows = [data[offset + r * stride:offset + (r + 1) * stride] for r in range(h)]
    head = bytearray(data[:offset])
    head[22:26] = (-h).to_bytes(4, "little", signed=True)
    return bytes(head) + b"".join(reversed(rows))


def bmp_rle8(w=9, h=4) -> bytes:
    """An 8-bit RLE BMP (Pillow cannot write one): runs, an absolute run, end of
    line and end of bitmap."""
    palette = b"".join(bytes([i * 3 % 256, i * 7 % 256, i * 11 % 256, 0]) for i in range(16))
    rle = b""
    for r in range(h):
        rle += bytes([4, r + 1])                 # encoded run of 4
        rle += bytes([0, 4, 5, 6, 7, 8])         # absolute run of 4
        rle += bytes([0, 0])                     # end of line (pads the 9th pixel with 0)
    rle += bytes([0, 1])
    offset = 14 + 40 + len(palette)
    info = (40).to_bytes(4, "little") + w.to_bytes(4, "little") + h.to_bytes(4, "little")
    info += (1).to_bytes(2, "little") + (8).to_bytes(2, "little") + (1).to_bytes(4, "little")
    info += len(rle).to_bytes(4, "little") + bytes(8) + (16).to_bytes(4, "little") + bytes(4)
    head = b"BM" + (offset + len(rle)).to_bytes(4, "little") + bytes(4) + offset.to_bytes(4, "little")
    return head + info + palette + rle


@pytest.mark.parametrize("case", sorted(BMP_CASES))
def test_bmp_matches_pillow(case):
    assert_same_as_pillow(BMP_CASES[case]())


def test_bmp_top_down_and_rle8_match_pillow():
    top_down = bmp_top_down(encode(rgb(w=21, h=11), "BMP"))
    assert_same_as_pillow(top_down)
    np.testing.assert_array_equal(_C._decode(top_down), np.asarray(rgb(w=21, h=11)))
    assert_same_as_pillow(bmp_rle8())


# ---------------------------------------------------------------- PNM ----

def plain_pnm(magic: str, w: int, h: int, maxval: int | None, samples) -> bytes:
    head = f"{magic}\n# a comment\n{w} {h}\n" + ("" if maxval is None else f"{maxval}\n")
    body = "\n".join(" ".join(str(int(v)) for v in samples[i:i + 17])
                     for i in range(0, len(samples), 17))
    return (head + body + "\n").encode()


def raw_pnm(magic: str, w: int, h: int, maxval: int, samples: np.ndarray) -> bytes:
    dtype = ">u2" if maxval > 255 else "u1"
    return f"{magic}\n{w} {h}\n{maxval}\n".encode() + samples.astype(dtype).tobytes()


def pnm_cases():
    rng = np.random.default_rng(3)
    w, h = 23, 9
    return {
        "ppm_p6": encode(rgb(), "PPM"),
        "pgm_p5": encode(rgb().convert("L"), "PPM"),
        "pbm_p4": encode(rgb(w=21).convert("1"), "PPM"),
        "pgm_p5_16bit": encode(grey16(), "PPM"),
        "ppm_p6_maxval100": raw_pnm("P6", w, h, 100, rng.integers(0, 101, size=w * h * 3)),
        "ppm_p6_16bit": raw_pnm("P6", w, h, 1000, rng.integers(0, 1001, size=w * h * 3)),
        "pgm_p5_maxval300": raw_pnm("P5", w, h, 300, rng.integers(0, 301, size=w * h)),
        "pbm_p1": plain_pnm("P1", w, h, None, rng.integers(0, 2, size=w * h)),
        "pgm_p2": plain_pnm("P2", w, h, 200, rng.integers(0, 201, size=w * h)),
        "ppm_p3": plain_pnm("P3", w, h, 255, rng.integers(0, 256, size=w * h * 3)),
    }


@pytest.mark.parametrize("case", sorted(pnm_cases()))
def test_pnm_matches_pillow(case):
    assert_same_as_pillow(pnm_cases()[case])


# --------------------------------------------------------------- TIFF ----

TIFF_CASES = {
    "rgb_raw": lambda: encode(rgb(), "TIFF"),
    "rgb_lzw": lambda: encode(rgb(), "TIFF", compression="tiff_lzw"),
    "rgb_deflate": lambda: encode(rgb(), "TIFF", compression="tiff_adobe_deflate"),
    "rgb_packbits": lambda: encode(rgb(), "TIFF", compression="packbits"),
    "rgb_jpeg": lambda: encode(rgb(w=64, h=48), "TIFF", compression="jpeg"),
    "rgba_lzw": lambda: encode(rgba(), "TIFF", compression="tiff_lzw"),
    "grey8": lambda: encode(rgb().convert("L"), "TIFF"),
    "grey_alpha": lambda: encode(rgba().convert("LA"), "TIFF"),
    "bilevel": lambda: encode(rgb(w=29).convert("1"), "TIFF"),
    "bilevel_g4": lambda: encode(rgb(w=29).convert("1"), "TIFF", compression="group4"),
    "palette": lambda: encode(rgb().quantize(colors=60), "TIFF"),
    "cmyk": lambda: encode(rgb().convert("CMYK"), "TIFF"),
    "grey16": lambda: encode(grey16().convert("I;16"), "TIFF"),
    "rgb_strips": lambda: encode(rgb(w=40, h=50), "TIFF", compression="tiff_lzw",
                                 tiffinfo={278: 7}),
}


@pytest.mark.parametrize("case", sorted(TIFF_CASES))
def test_tiff_matches_pillow(case):
    assert_same_as_pillow(TIFF_CASES[case]())


# --------------------------------------------------------------- WebP ----

def animated_webp() -> bytes:
    frames = [rgb(seed=s) for s in (1, 2, 3)]
    return encode(frames[0], "WEBP", save_all=True, append_images=frames[1:], lossless=True,
                  duration=100)


WEBP_CASES = {
    "lossless_rgb": lambda: encode(rgb(), "WEBP", lossless=True),
    "lossless_rgba": lambda: encode(rgba(), "WEBP", lossless=True),
    "lossy_rgb": lambda: encode(rgb(), "WEBP", quality=80),
    "lossy_rgba": lambda: encode(rgba(), "WEBP", quality=80),
    "animated": animated_webp,
}


@pytest.mark.parametrize("case", sorted(WEBP_CASES))
def test_webp_matches_pillow(case):
    assert_same_as_pillow(WEBP_CASES[case]())


def test_lossless_formats_are_exact_to_the_source_pixels():
    src = np.asarray(rgb())
    for data in (encode(rgb(), "BMP"), encode(rgb(), "PPM"), encode(rgb(), "TIFF"),
                 encode(rgb(), "WEBP", lossless=True)):
        np.testing.assert_array_equal(_C._decode(data), src)


# -------------------------------------------------------- broken files ----

GOOD = {
    "BMP": lambda: encode(rgb(), "BMP"),
    "PNM": lambda: encode(rgb(), "PPM"),
    "TIFF": lambda: encode(rgb(), "TIFF"),
    "WebP": lambda: encode(rgb(), "WEBP", quality=80),
}


@pytest.mark.parametrize("fmt", sorted(GOOD))
@pytest.mark.parametrize("keep", [0.5, 0.9])
def test_truncated_files_raise_an_error_naming_the_format(fmt, keep):
    data = GOOD[fmt]()
    cut = data[:int(len(data) * keep)]
    with pytest.raises(stoker.StokerError, match=fmt):
        _C._decode(cut)


@pytest.mark.parametrize("fmt", sorted(GOOD))
def test_header_only_files_raise(fmt):
    data = GOOD[fmt]()
    for n in (4, 16, 30):
        with pytest.raises((stoker.StokerError, ValueError)):
            _C._decode(data[:n])


def test_corrupt_headers_raise_named_errors():
    bmp = bytearray(encode(rgb(), "BMP"))
    bmp[28:30] = (7).to_bytes(2, "little")  # 7 bits per pixel
    with pytest.raises(stoker.StokerError, match="BMP: unsupported pixel depth 7"):
        _C._decode(bytes(bmp))
    with pytest.raises(stoker.StokerError, match="PNM: maxval 0"):
        _C._decode(b"P5\n4 4\n0\n" + bytes(16))
    with pytest.raises(stoker.StokerError, match="PNM: width 'x4' is not a number"):
        _C._decode(b"P6\nx4 4\n255\n" + bytes(48))
    with pytest.raises(stoker.StokerError, match="PNM: sample 300 is above maxval 255"):
        _C._decode(b"P2\n2 1\n255\n1 300\n")
    webp = bytearray(encode(rgb(), "WEBP", quality=80))
    assert webp[12:16] == b"VP8 " and webp[23:26] == b"\x9d\x01\x2a"
    webp[23:26] = b"\x00\x00\x00"  # the key frame's start code
    with pytest.raises(stoker.StokerError, match="WebP"):
        _C._decode(bytes(webp))
    tif = bytearray(encode(rgb(), "TIFF"))
    ifd = int.from_bytes(tif[4:8], "little")
    tif[4:8] = (len(tif) + 100).to_bytes(4, "little")  # first IFD past the end
    with pytest.raises(stoker.StokerError, match="TIFF"):
        _C._decode(bytes(tif))
    assert ifd > 0


def test_pixel_limit_applies_to_every_format():
    for data in (GOOD["BMP"](), GOOD["PNM"](), GOOD["TIFF"](), GOOD["WebP"]()):
        with pytest.raises(stoker.StokerError, match="above the limit"):
            _C._decode(data, max_pixels=100)


# ------------------------------------------- ImageFolder over every format ----

def write_mixed_folder(root):
    """Classes: bmp_only (only .bmp files, once a ValueError) and mixed (one file per
    extension torchvision accepts, plus files it skips). All 32 x 24."""
    import pathlib
    root = pathlib.Path(root)
    (root / "bmp_only").mkdir(parents=True)
    (root / "mixed").mkdir()
    rgb(32, 24, 1).save(root / "bmp_only" / "a.bmp")
    rgb(32, 24, 2).convert("P").save(root / "bmp_only" / "b.BMP")
    files = {
        "c.jpg": lambda p: rgb(32, 24, 3).save(p, quality=95),
        "d.png": lambda p: rgba(32, 24, 4).save(p),
        "e.ppm": lambda p: rgb(32, 24, 5).save(p),
        "f.pgm": lambda p: rgb(32, 24, 6).convert("L").save(p),
        "g.tif": lambda p: rgb(32, 24, 7).save(p, compression="tiff_lzw"),
        "h.TIFF": lambda p: rgb(32, 24, 8).convert("CMYK").save(p, format="TIFF"),
        "i.webp": lambda p: rgb(32, 24, 9).save(p, lossless=True),
        "j.webp": lambda p: rgba(32, 24, 10).save(p, quality=70),
    }
    for name, write in files.items():
        write(root / "mixed" / name)
    (root / "mixed" / "k.gif").write_bytes(b"GIF89a")      # torchvision skips these
    (root / "mixed" / "l.txt").write_bytes(b"not an image")
    return root


def test_image_folder_has_torchvision_surface(tmp_path):
    import torchvision.datasets as tvd
    root = write_mixed_folder(tmp_path / "data")
    tv = tvd.ImageFolder(str(root))
    ds = stoker.ImageFolder(str(root))
    assert len(ds) == len(tv) == 10
    assert ds.classes == tv.classes
    assert ds.class_to_idx == tv.class_to_idx
    assert ds.samples == tv.samples
    assert ds.imgs == tv.imgs
    assert ds.targets == tv.targets
    for i in (0, 3, 9, -1, -10):
        data, label = ds[i]
        path, target = tv.samples[i]
        assert label == target
        with open(path, "rb") as f:
            assert data == f.read()
        np.testing.assert_array_equal(_C._decode(data), np.asarray(tv[i][0]))
    for bad in (10, -11):
        with pytest.raises(IndexError):
            ds[bad]


def test_loader_over_every_format_gives_torchvision_pixels(tmp_path):
    import torchvision.datasets as tvd
    root = write_mixed_folder(tmp_path / "data")
    tv = tvd.ImageFolder(str(root))
    loader = stoker.Loader(stoker.ImageFolder(str(root)), batch_size=4, shuffle=False,
                           transforms=[stoker.CenterCrop((24, 32))], threads=2, dtype="uint8")
    seen = 0
    for batch in loader:
        images, labels = batch[0], batch[1]
        for j in range(images.shape[0]):
            img, target = tv[seen]
            assert int(labels[j]) == target
            np.testing.assert_array_equal(images[j].permute(1, 2, 0).numpy(), np.asarray(img))
            seen += 1
    assert seen == len(tv)


def test_convert_keeps_every_format_and_the_class_names(tmp_path):
    import os
    import subprocess
    import tarfile
    from pathlib import Path
    cli = os.environ.get("STOKER_CLI") or str(Path(__file__).resolve().parents[2] / "build" / "stoker")
    if not os.access(cli, os.X_OK):
        pytest.skip("the stoker CLI is not built (set STOKER_CLI)")
    root = write_mixed_folder(tmp_path / "data")
    out = tmp_path / "out"
    r = subprocess.run([cli, "convert", str(root), str(out)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    import json
    assert json.loads((out / "classes.json").read_text()) == ["bmp_only", "mixed"]
    with tarfile.open(out / "shard-000000.tar") as tf:
        exts = [m.name.split(".", 1)[1] for m in tf.getmembers() if not m.name.endswith(".cls")]
    assert exts == ["bmp", "bmp", "jpg", "png", "ppm", "pgm", "tif", "tif", "webp", "webp"]
    shards = stoker.Shards(str(out / "shard-*.tar"))
    assert shards.classes == ["bmp_only", "mixed"]
    assert len(shards) == 10
    folder = stoker.ImageFolder(str(root))
    loader = stoker.Loader(shards, batch_size=10, shuffle=False,
                           transforms=[stoker.CenterCrop((24, 32))], threads=2, dtype="uint8")
    images, labels = next(iter(loader))[:2]
    assert labels.tolist() == folder.targets
    for j in range(10):
        np.testing.assert_array_equal(images[j].permute(1, 2, 0).numpy(),
                                      _C._decode(folder[j][0]))
    # Another split with other classes into the same directory is refused.
    other = tmp_path / "other"
    (other / "zebra").mkdir(parents=True)
    rgb(32, 24, 1).save(other / "zebra" / "z.bmp")
    r = subprocess.run([cli, "convert", str(other), str(out), "--prefix", "val"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "classes.json exists and names other classes" in r.stderr
