"""Transforms naming the image fields they touch: `fields=`.

A record with three RGB image fields ("image", "image2", "image3") of one size, a
caption and a label, in tar shards written here. Geometric transforms naming several
fields apply the primary image's one draw to each; photometric ones run on the fields
they name only; a field no transform names is delivered as decoded (Pillow's pixels).
"The same draw" is checked by swapping the two images' contents between two loaders:
the second field of one must be, bit for bit, the primary image of the other, whose
pixels are torchvision's (test_torchvision_parity.py); fixed transforms are compared
with torchvision's functional ops directly.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import torchvision.transforms.functional as F
from PIL import Image

import stoker
from conftest import photo, write_shards

N = 12
H, W = 40, 52
FIELDS = {"image": "a.png", "image2": {"ext": "b.png", "mode": "rgb"},
          "image3": {"ext": "c.png", "mode": "rgb"}, "caption": "txt", "label": "cls"}


def _png(a) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="PNG")
    return buf.getvalue()


def pixels(i: int, which: str, size=(H, W)) -> np.ndarray:
    return photo(size[1], size[0], {"a": 100, "b": 200, "c": 300}[which] + i)


def write(d, *, swap=False, odd=None):
    """Two shards; `swap` exchanges the contents of a.png and b.png; sample `odd` gets a
    b.png of another size."""
    def members(i):
        a, b = ("b", "a") if swap else ("a", "b")
        second = pixels(i, b, (H + 2, W) if i == odd else (H, W))
        return [(f"s/{i:05d}.a.png", _png(pixels(i, a))), (f"s/{i:05d}.b.png", _png(second)),
                (f"s/{i:05d}.c.png", _png(pixels(i, "c"))),
                (f"s/{i:05d}.txt", f"caption {i}".encode()),
                (f"s/{i:05d}.cls", str(i).encode())]
    return write_shards(str(d), 2, N // 2, members)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    return (write(tmp_path_factory.mktemp("fields")),
            write(tmp_path_factory.mktemp("swapped"), swap=True))


def run(pattern, transforms, threads=2, **kw):
    """label -> {field: numpy} for one epoch."""
    loader = stoker.Loader(stoker.Shards(pattern, fields=FIELDS, shuffle_buffer=0),
                           batch_size=4, transforms=transforms, dtype="uint8", layout="NHWC",
                           threads=threads, seed=7, dct_scaling=False, **kw)
    out = {}
    for b in loader:
        for k, lab in enumerate(b["label"].tolist()):
            out[lab] = {name: (v[k].numpy().copy() if hasattr(v[k], "numpy") else v[k])
                        for name, v in b.items()}
    assert sorted(out) == list(range(N))
    return out


BOTH = ["image", "image2"]


def random_transforms(jitter_on):
    return [stoker.RandomResizedCrop(24, scale=(0.2, 1.0), fields=BOTH),
            stoker.RandomHorizontalFlip(fields=BOTH),
            stoker.ColorJitter(0.5, 0.5, 0.5, 0.1, fields=[jitter_on]),
            stoker.RandomRotation(20, fields=BOTH)]


def test_second_field_takes_the_primary_draw(shards):
    plain, swapped = shards
    a = run(plain, random_transforms("image"))
    # The contents swapped and the jitter moved to the other field: each field of one
    # loader is the other field of the other, bit for bit.
    b = run(swapped, random_transforms("image2"))
    # The jitter draws without applying on the field it does not name (the same
    # contents and draws, no jitter): it did change the image it names.
    c = run(plain, random_transforms("image2"))
    changed = 0
    for i in range(N):
        assert a[i]["image2"].shape == (24, 24, 3) and a[i]["image2"].dtype == np.uint8
        assert a[i]["image2"].tobytes() == b[i]["image"].tobytes(), i
        assert a[i]["image"].tobytes() == b[i]["image2"].tobytes(), i
        changed += a[i]["image"].tobytes() != c[i]["image"].tobytes()
        # untouched: the third image as Pillow decodes it, the caption as written
        assert a[i]["image3"].tobytes() == pixels(i, "c").tobytes()
        assert a[i]["caption"] == f"caption {i}"
    assert changed >= N - 1


def test_a_photometric_op_another_field_skips_still_draws(shards):
    # RandomInvert(p=1) draws one number and is undone by 255 - x; RandomRotation
    # (NEAREST) after it copies pixels or fills 0: the second field inverted or not
    # must show the same rotation, so the skipped invert drew as the applied one.
    plain, _ = shards

    def ts(on):
        return [stoker.RandomResizedCrop(24, scale=(0.2, 1.0), fields=BOTH),
                stoker.RandomInvert(1.0, fields=on), stoker.RandomRotation(30, fields=BOTH)]
    skipped = run(plain, ts(["image"]))
    applied = run(plain, ts(BOTH))
    for i in range(N):
        assert skipped[i]["image"].tobytes() == applied[i]["image"].tobytes()
        k = skipped[i]["image2"].astype(int)
        k2 = applied[i]["image2"].astype(int)
        assert ((k + k2 == 255) | ((k == 0) & (k2 == 0))).all(), i
        assert (k2 == 255 - k).mean() > 0.5, i


def test_fixed_transforms_equal_torchvision_on_the_second_field(shards):
    plain, _ = shards
    ts = [stoker.Resize((30, 40), fields=BOTH), stoker.CenterCrop(24, fields=BOTH),
          stoker.RandomHorizontalFlip(1.0, fields=BOTH),
          stoker.RandomPosterize(3, p=1.0, fields=["image2"])]
    out = run(plain, ts)
    for i in range(N):
        for name, which, post in (("image", "a", False), ("image2", "b", True)):
            img = Image.fromarray(pixels(i, which))
            ref = F.hflip(F.center_crop(F.resize(img, [30, 40]), [24, 24]))
            if post:
                ref = F.posterize(ref, 3)
            assert out[i][name].tobytes() == np.asarray(ref).tobytes(), (i, name)


def test_one_and_three_threads_agree(shards):
    plain, _ = shards
    one = run(plain, random_transforms("image2"), threads=1)
    three = run(plain, random_transforms("image2"), threads=3)
    for i in range(N):
        for k in ("image", "image2", "image3"):
            assert one[i][k].tobytes() == three[i][k].tobytes(), (i, k)


def test_default_fields_leave_other_images_untouched(shards):
    plain, _ = shards
    out = run(plain, [stoker.RandomResizedCrop(24), stoker.ColorJitter(0.5)])
    for i in range(N):
        assert out[i]["image"].shape == (24, 24, 3)
        assert out[i]["image2"].tobytes() == pixels(i, "b").tobytes()
    assert repr(stoker.Resize(3)) == repr(stoker.Resize(3, fields=None))
    assert "fields=['image', 'image2']" in repr(stoker.Resize(3, fields=BOTH))


def test_errors(shards, tmp_path):
    plain, _ = shards
    src = lambda **kw: stoker.Shards(plain, fields=dict(FIELDS, **kw), shuffle_buffer=0)

    def make(ts, source=None):
        return stoker.Loader(source or src(), batch_size=4, transforms=ts, dtype="uint8")

    with pytest.raises(ValueError, match="'nope' is not a field of the record"):
        make([stoker.Resize(24, fields=["image", "nope"])])
    with pytest.raises(ValueError, match="'caption' is a text field, not an image"):
        make([stoker.ColorJitter(0.2, fields=["caption"])])
    with pytest.raises(ValueError, match="'image2' is a native-mode image"):
        make([stoker.ColorJitter(0.2, fields=["image2"])], src(image2="b.png"))
    with pytest.raises(ValueError, match="every geometric transform names the same fields"):
        make([stoker.Resize(30, fields=BOTH), stoker.CenterCrop(24)])
    with pytest.raises(ValueError, match="must name the primary image 'image'"):
        make([stoker.Resize(24, fields=["image2"])])
    with pytest.raises(ValueError, match="does not name it"):
        make([stoker.Resize((24, 24)), stoker.ColorJitter(0.2, fields=["image2"])])
    with pytest.raises(TypeError, match="fields must be None or a list"):
        stoker.Resize(24, fields=[3])
    with pytest.raises(ValueError, match="named twice"):
        stoker.Resize(24, fields=["image", "image"])
    # Another size than the primary image: the sample and both fields named.
    odd = write(tmp_path / "odd", odd=5)
    loader = make([stoker.Resize((24, 24), fields=BOTH)],
                  stoker.Shards(odd, fields=FIELDS, shuffle_buffer=0))
    with pytest.raises(stoker.StokerError, match=r"00005.*field 'image2'.*primary image"):
        list(loader)
    # on_error="skip" skips that sample only
    loader = stoker.Loader(stoker.Shards(odd, fields=FIELDS, shuffle_buffer=0), batch_size=4,
                           transforms=[stoker.Resize((24, 24), fields=BOTH)], dtype="uint8",
                           on_error="skip")
    assert sum(len(b["label"]) for b in loader) == N - 1


def test_the_decoded_cache_keeps_the_draw(shards):
    # The decoded cache serves the primary image as raw pixels and the second field as its
    # cached encoded bytes: the second epoch equals an uncached loader's second epoch.
    plain, _ = shards

    def epochs(**kw):
        loader = stoker.Loader(stoker.Shards(plain, fields=FIELDS, shuffle_buffer=0),
                               batch_size=4, transforms=random_transforms("image2"),
                               dtype="uint8", layout="NHWC", seed=3, threads=2,
                               dct_scaling=False, **kw)
        out = []
        for epoch in range(2):
            loader.set_epoch(epoch)
            out.append([(b["image"].numpy().tobytes(), b["image2"].numpy().tobytes())
                        for b in loader])
        return out, loader
    cached, loader = epochs(cache="decoded", cache_bytes=64 << 20)
    plain_runs, _ = epochs()
    assert cached == plain_runs
    assert loader.stats()["cache"]["hits"] > 0


def test_collate_list_gives_each_field_the_primary_size(shards):
    plain, _ = shards
    loader = stoker.Loader(stoker.Shards(plain, fields=FIELDS, shuffle_buffer=0), batch_size=4,
                           transforms=[stoker.Resize(20, fields=BOTH)], dtype="uint8",
                           layout="NHWC", collate="list", dct_scaling=False)
    seen = 0
    for b in loader:
        for k, i in enumerate(b["label"].tolist()):
            want = np.asarray(F.resize(Image.fromarray(pixels(i, "b")), 20))
            assert b["image"][k].shape == want.shape == (20, 26, 3)
            assert b["image2"][k].numpy().tobytes() == want.tobytes(), i
            seen += 1
    assert seen == N


def test_a_second_field_replays_random_iou_crop_with_the_same_boxes(tmp_path):
    """RandomIoUCrop draws from the sample's boxes: a second image field named with it gets
    the same crop (the draw is replayed with those boxes), so identical contents stay
    identical, and the crop did happen (the output is not the resized whole image)."""
    from conftest import npy_bytes

    def members(i):
        boxes = np.array([[4, 6, 30, 34], [20, 2, 50, 22]], np.float32) + i % 3
        return [(f"s/{i:05d}.a.png", _png(pixels(i, "a"))),
                (f"s/{i:05d}.b.png", _png(pixels(i, "a"))),
                (f"s/{i:05d}.boxes.npy", npy_bytes(boxes)), (f"s/{i:05d}.cls", str(i).encode())]
    pattern = write_shards(str(tmp_path), 2, N // 2, members)
    fields = {"image": "a.png", "image2": {"ext": "b.png", "mode": "rgb"},
              "boxes": "boxes.npy", "label": "cls"}
    loader = stoker.Loader(
        stoker.Shards(pattern, fields=fields, shuffle_buffer=0), batch_size=4, threads=2,
        seed=5, dtype="uint8", layout="NHWC", dct_scaling=False,
        targets={"boxes": {"target": "boxes", "format": "xyxy"}},
        transforms=[stoker.RandomIoUCrop(fields=BOTH), stoker.Resize((20, 24), fields=BOTH)])
    cropped = 0
    for b in loader:
        for k, lab in enumerate(b["label"].tolist()):
            one, two = b["image"][k].numpy(), b["image2"][k].numpy()
            assert one.tobytes() == two.tobytes(), lab
            whole = np.asarray(F.resize(Image.fromarray(pixels(lab, "a")), [20, 24]))
            cropped += int(one.tobytes() != whole.tobytes())
    assert cropped > 0
