"""Sources of targets: stoker.SegmentationFolder and stoker.Coco.

Without a geometric transform their target fields pass through the loader untouched, so
every field comes back bit for bit as PIL, numpy and json read the files: images and masks
(grey and palette PNGs: palette indices), COCO boxes, mapped labels, iscrowd, area, and
masks rasterised from polygons (pycocotools' rule: compared with pycocotools itself where
it is installed, and with Pillow's ImageDraw.polygon away from the outline) and from RLE (a list, or the compressed string of
an encoder written here from pycocotools' documented format). 1 and 3 threads agree, two
ranks split the epoch, and a resume continues it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

import stoker
from conftest import photo

W, H = 20, 14


def _png(path, array, mode=None, palette=False):
    img = Image.fromarray(array) if mode is None else Image.fromarray(array, mode)
    if palette:
        img = img.convert("P")
        img.putdata(array.reshape(-1).tolist())
    img.save(path)


@pytest.fixture(scope="module")
def seg(tmp_path_factory):
    root = tmp_path_factory.mktemp("seg")
    (root / "img" / "sub").mkdir(parents=True)
    (root / "ann" / "sub").mkdir(parents=True)
    keys = [f"k{i:02d}" for i in range(9)] + ["sub/deep"]
    rng = np.random.default_rng(26)
    for i, key in enumerate(keys):
        _png(root / "img" / f"{key}.png", photo(W, H, 100 + i))
        m = rng.integers(0, 21, (H, W), dtype=np.uint8)
        m[0, 0] = i  # the sample's number
        _png(root / "ann" / f"{key}.png", m, palette=(i % 2 == 1))
    return root, keys


def _run(loader, with_ids=True):
    got, ids = {}, []
    for batch, idx in loader:
        ids.extend(idx.numpy().tolist())
        for k, v in batch.items():
            v = list(v) if isinstance(v, list) else list(v.numpy())
            got.setdefault(k, []).extend(np.asarray(x) for x in v)
    return got, ids


def test_segmentation_folder_pairs_and_reads_bit_for_bit(seg):
    root, keys = seg
    src = stoker.SegmentationFolder(root / "img", str(root / "ann"))
    assert len(src) == len(keys)
    assert list(src.fields) == ["image", "mask"]
    assert src.targets == {"mask": {"target": "mask", "ignore_index": 255}}
    assert src.image_path(9).endswith("img/sub/deep.png")
    assert src.mask_path(9).endswith("ann/sub/deep.png")
    got, ids = _run(stoker.Loader(src, batch_size=3, shuffle=True, seed=1, dtype="uint8",
                                  transforms=[stoker.CenterCrop((H, W))], return_indices=True))
    assert sorted(ids) == list(range(len(keys)))
    for image, mask, i in zip(got["image"], got["mask"], ids):
        want = np.asarray(Image.open(root / "img" / f"{keys[i]}.png").convert("RGB"))
        assert image.transpose(1, 2, 0).tobytes() == want.tobytes()
        # np.asarray of a palette image is its indices, as the mask field's.
        m = np.asarray(Image.open(root / "ann" / f"{keys[i]}.png"))
        assert mask.dtype == np.uint8 and mask.shape == (H, W), mask.shape
        assert mask.tobytes() == m.tobytes(), keys[i]


def test_segmentation_folder_names_missing_stems(tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "ann").mkdir()
    for k in ("a", "b", "c"):
        _png(tmp_path / "img" / f"{k}.png", photo(W, H, 1))
    for k in ("a", "x"):
        _png(tmp_path / "ann" / f"{k}.png", np.zeros((H, W), np.uint8))
    with pytest.raises(ValueError, match=r"2 image\(s\) without a mask: 'b', 'c'; "
                                                 r"1 mask\(s\) without an image: 'x'"):
        stoker.SegmentationFolder(tmp_path / "img", tmp_path / "ann")
    with pytest.raises(TypeError, match="stoker.SegmentationFolder takes"):
        stoker.SegmentationFolder(tmp_path / "img", tmp_path / "ann", lambda x: x)


def test_a_voc_split_file_takes_its_keys_in_its_order(tmp_path):
    # VOC: JPEGImages holds every image, SegmentationClass the masks of some, and
    # ImageSets/Segmentation/train.txt one split's keys: without split= the folder pair was
    # refused (images without a mask), and users had to copy files into a folder per split.
    voc = tmp_path / "VOC2012"
    for d in ("JPEGImages", "SegmentationClass", "ImageSets/Segmentation"):
        (voc / d).mkdir(parents=True)
    for i, k in enumerate(["2007_000032", "2007_000039", "2007_000063", "2007_000068"]):
        _png(voc / "JPEGImages" / f"{k}.png", photo(W, H, 10 + i))
        if i != 3:
            m = np.full((H, W), i, np.uint8)
            _png(voc / "SegmentationClass" / f"{k}.png", m)
    (voc / "ImageSets/Segmentation/train.txt").write_text("2007_000063\n2007_000032\n")
    src = stoker.SegmentationFolder(voc / "JPEGImages", voc / "SegmentationClass",
                                    split=voc / "ImageSets/Segmentation/train.txt")
    assert len(src) == 2
    assert src.image_path(0).endswith("2007_000063.png")  # the file's order
    batch = next(iter(stoker.Loader(src, batch_size=2, transforms=[stoker.CenterCrop((H, W))])))
    assert batch["mask"][:, 0, 0].tolist() == [2, 0]
    (voc / "val.txt").write_text("2007_000039\n2007_000068\nnot_there\n")
    with pytest.raises(ValueError, match=r"val.txt lists 1 key\(s\) without an image: "
                                         r"'not_there'; 2 key\(s\) without a mask: "
                                         r"'2007_000068', 'not_there'"):
        stoker.SegmentationFolder(voc / "JPEGImages", voc / "SegmentationClass",
                                  split=str(voc / "val.txt"))
    with pytest.raises(FileNotFoundError, match="no_such.txt"):
        stoker.SegmentationFolder(voc / "JPEGImages", voc / "SegmentationClass",
                                  split=voc / "no_such.txt")


def test_rgb_mask_is_an_error_naming_the_file(tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "ann").mkdir()
    _png(tmp_path / "img" / "a.png", photo(W, H, 1))
    _png(tmp_path / "ann" / "a.png", photo(W, H, 2))  # RGB
    src = stoker.SegmentationFolder(tmp_path / "img", tmp_path / "ann")
    with pytest.raises(stoker.StokerError, match=r"ann/a.png.*one channel.*3 \(RGB\)"):
        list(stoker.Loader(src, batch_size=1, transforms=[stoker.CenterCrop((H, W))]))



def test_segmentation_masks_stack_by_their_declared_dtype(tmp_path):
    """mask_dtype="uint8" (default) / "uint16" stack masks of a fixed output size into one
    [B, H, W] tensor; a mask of the other depth fails its sample naming both; None gives a
    list of masks as each file holds."""
    (tmp_path / "img").mkdir()
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann16").mkdir()
    rng = np.random.default_rng(7)
    for k in range(4):
        _png(tmp_path / "img" / f"{k}.png", photo(W, H, k))
        m8 = rng.integers(0, 21, (H, W), dtype=np.uint8)
        _png(tmp_path / "ann" / f"{k}.png", m8)
        m16 = rng.integers(0, 40000, (H, W)).astype(np.uint16)
        Image.fromarray(m16).save(tmp_path / "ann16" / f"{k}.png")  # 16-bit grey PNG
        assert np.asarray(Image.open(tmp_path / "ann16" / f"{k}.png")).max() > 255
    crop = [stoker.CenterCrop((H - 2, W - 4))]

    def masks(src):
        (batch,) = list(stoker.Loader(src, batch_size=4, transforms=crop))
        return batch["mask"]

    stacked = masks(stoker.SegmentationFolder(tmp_path / "img", tmp_path / "ann"))
    assert isinstance(stacked, torch.Tensor), type(stacked)
    assert stacked.dtype == torch.uint8 and stacked.shape == (4, H - 2, W - 4)
    want = [np.asarray(Image.open(tmp_path / "ann" / f"{k}.png"))[1:-1, 2:-2] for k in range(4)]
    assert stacked.numpy().tobytes() == np.stack(want).tobytes()

    deep = masks(stoker.SegmentationFolder(tmp_path / "img", tmp_path / "ann16",
                                           mask_dtype="uint16"))
    # torch 1.13 has no uint16: the stacked block comes as a numpy array (README, Records)
    deep = deep if isinstance(deep, np.ndarray) else deep.numpy()
    assert deep.dtype == np.uint16 and deep.shape == (4, H - 2, W - 4)
    want16 = [np.asarray(Image.open(tmp_path / "ann16" / f"{k}.png")).astype(np.uint16)[1:-1, 2:-2]
              for k in range(4)]
    assert deep.tobytes() == np.stack(want16).tobytes()

    listed = masks(stoker.SegmentationFolder(tmp_path / "img", tmp_path / "ann16",
                                             mask_dtype=None))
    assert isinstance(listed, list) and len(listed) == 4
    assert np.asarray(listed[0]).astype(np.uint16).tobytes() == want16[0].tobytes()

    with pytest.raises(stoker.StokerError, match=r"mask.*uint16.*uint8"):
        masks(stoker.SegmentationFolder(tmp_path / "img", tmp_path / "ann16"))
    with pytest.raises(ValueError, match="mask_dtype 'float32'"):
        stoker.SegmentationFolder(tmp_path / "img", tmp_path / "ann", mask_dtype="float32")


# ---- COCO ----

def _rle_string(counts):
    """pycocotools' rleToString, from its documented format: each count (from the fourth
    on, minus the count two before) as 5-bit groups, low first, 48 + group (| 0x20 when
    more follow); the last group's 0x10 bit is the sign."""
    out = []
    for i, x in enumerate(counts):
        if i > 2:
            x -= counts[i - 2]
        more = True
        while more:
            c = x & 0x1F
            x >>= 5
            more = (x != -1) if (c & 0x10) else (x != 0)
            if more:
                c |= 0x20
            out.append(chr(c + 48))
    return "".join(out)


def _rle_counts(mask):
    """Column-major run lengths of a 0/1 mask, starting with a run of 0s."""
    flat = mask.T.reshape(-1)
    counts, cur, run = [], 0, 0
    for v in flat:
        if v != cur:
            counts.append(run)
            cur, run = v, 0
        run += 1
    counts.append(run)
    return counts


SIZES = [(32, 24), (20, 14), (28, 30), (16, 16), (24, 20), (30, 18)]  # (w, h) per image


def _blob(h, w, seed):
    rng = np.random.default_rng(seed)
    m = np.zeros((h, w), np.uint8)
    y0, x0 = rng.integers(0, h // 2), rng.integers(0, w // 2)
    m[y0:y0 + h // 3, x0:x0 + w // 3] = 1
    m[rng.integers(0, h), rng.integers(0, w)] = 1
    return m


@pytest.fixture(scope="module")
def coco(tmp_path_factory):
    root = tmp_path_factory.mktemp("coco")
    (root / "images").mkdir()
    images, anns = [], []
    aid = 1000
    for k, (w, h) in enumerate(SIZES):
        image_id = 50 - 7 * k  # ids not in file order
        name = f"im{k}.png"
        _png(root / "images" / name, photo(w, h, 200 + k))
        images.append({"id": image_id, "file_name": name, "height": h, "width": w})
        if k == 3:
            continue  # an image without annotations
        for j in range(k % 3 + 1):
            cat = [17, 3, 90][(k + j) % 3]
            x, y = 1.5 + j * 3, 2.0 + k
            poly = [x, y, x + 9.25, y, x + 6, y + 7.5, x - 0.5, y + 6]
            anns.append({"id": aid, "image_id": image_id, "category_id": cat, "iscrowd": 0,
                         "bbox": [x - 0.5, y, 9.75, 7.5], "area": 50.5 + j,
                         "segmentation": [poly]})
            aid += 1
        if k in (1, 4):  # a crowd, compressed RLE; and an uncompressed RLE instance
            blob = _blob(h, w, k)
            anns.append({"id": aid, "image_id": image_id, "category_id": 3, "iscrowd": 1,
                         "bbox": [0, 0, 5, 5], "area": float(blob.sum()),
                         "segmentation": {"size": [h, w], "counts": _rle_string(_rle_counts(blob))}})
            aid += 1
            blob2 = _blob(h, w, 10 + k)
            anns.append({"id": aid, "image_id": image_id, "category_id": 90, "iscrowd": 0,
                         "bbox": [1, 1, 2, 2], "area": float(blob2.sum()),
                         "segmentation": {"size": [h, w], "counts": _rle_counts(blob2)}})
            aid += 1
    doc = {"images": images, "annotations": anns,
           "categories": [{"id": 90, "name": "kite"}, {"id": 3, "name": "car"},
                          {"id": 17, "name": "cat"}]}
    path = root / "instances.json"
    path.write_text(json.dumps(doc))
    return root, doc


def _expected(doc):
    """Per sample (images in id order): its image entry and annotations, as json reads."""
    by_id = sorted(doc["images"], key=lambda im: im["id"])
    return [(im, [a for a in doc["annotations"] if a["image_id"] == im["id"]]) for im in by_id]


def _instance_mask(a, h, w):
    seg = a["segmentation"]
    if isinstance(seg, dict):
        counts = seg["counts"]
        if isinstance(counts, str):  # decode with the test's own view of the format
            raise AssertionError("compressed: compare via the uncompressed twin")
        flat = np.zeros(h * w, np.uint8)
        pos = 0
        for r, c in enumerate(counts):
            if r % 2:
                flat[pos:pos + c] = 1
            pos += c
        return flat.reshape(w, h).T
    return None


# Default: torchvision's detection references' conventions: labels are
# the category ids as written (label 0 is the models' background) and crowds are left out
# (ConvertCocoPolysToMask); the contiguous labels and the crowds are options.
LABELS = {"category_id": {3: 3, 17: 17, 90: 90}, "1..K": {3: 1, 17: 2, 90: 3},
          "0..K-1": {3: 0, 17: 1, 90: 2}}


@pytest.mark.parametrize("labels,crowd", [(None, None), ("1..K", "keep"), ("0..K-1", "keep"),
                                          ("0..K-1", "drop")])
def test_coco_fields_bit_for_bit_as_json_reads_them(coco, labels, crowd):
    root, doc = coco
    kw = {} if labels is None else {"labels": labels, "crowd": crowd}
    src = stoker.Coco(root / "images", root / "instances.json", **kw)
    label = LABELS[labels or "category_id"]
    keep_crowds = crowd == "keep"
    assert list(src.fields) == ["image", "boxes", "labels", "iscrowd", "area"]
    assert src.targets == {"boxes": {"target": "boxes", "format": "xywh"},
                           "labels": {"target": "per_box", "follows": "boxes"},
                           "iscrowd": {"target": "per_box", "follows": "boxes"},
                           "area": {"target": "per_box", "follows": "boxes"}}
    assert src.category_ids == [3, 17, 90]
    assert src.classes == ["car", "cat", "kite"]
    assert src.categories == {label[3]: (3, "car"), label[17]: (17, "cat"),
                              label[90]: (90, "kite")}
    assert src.category_labels == [label[3], label[17], label[90]]
    assert src.num_classes == {"category_id": 91, "1..K": 4, "0..K-1": 3}[labels or
                                                                          "category_id"]
    expected = _expected(doc)
    assert src.image_ids == [im["id"] for im, _ in expected]
    crowds = 0
    got, ids = _run(stoker.Loader(src, batch_size=4, shuffle=True, seed=2, threads=2,
                                  dtype="uint8", collate="list", return_indices=True))
    assert sorted(ids) == list(range(len(SIZES)))
    for n, i in enumerate(ids):
        im, anns = expected[i]
        crowds += sum(1 for a in anns if a["iscrowd"])
        anns = [a for a in anns if keep_crowds or not a["iscrowd"]]
        want = np.asarray(Image.open(root / "images" / im["file_name"]).convert("RGB"))
        assert got["image"][n].transpose(1, 2, 0).tobytes() == want.tobytes()
        boxes = np.array([a["bbox"] for a in anns], np.float32).reshape(-1, 4)
        boxes[:, 2:] += boxes[:, :2]  # delivered xyxy whatever the source's format
        assert got["boxes"][n].dtype == np.float32
        assert got["boxes"][n].tobytes() == boxes.tobytes()
        assert got["labels"][n].tolist() == [label[a["category_id"]] for a in anns]
        assert got["iscrowd"][n].tolist() == [a["iscrowd"] for a in anns]
        assert got["area"][n].tobytes() == np.array([a["area"] for a in anns], np.float32).tobytes()
    assert any(len(got["labels"][n]) == 0 for n in range(len(ids)))  # the empty image
    assert crowds > 0  # the fixture has crowds, left out or kept


def test_coco_a_category_id_zero_is_refused_as_a_label(coco, tmp_path):
    root, doc = coco
    zero = json.loads(json.dumps(doc).replace('"category_id": 3,', '"category_id": 0,'))
    for c in zero["categories"]:
        c["id"] = 0 if c["id"] == 3 else c["id"]
    (tmp_path / "zero.json").write_text(json.dumps(zero))
    with pytest.raises(ValueError, match=r'category id 0 \("car"\) as a label would be the '
                                         r'background.*labels="1\.\.K"'):
        stoker.Coco(root / "images", tmp_path / "zero.json")
    src = stoker.Coco(root / "images", tmp_path / "zero.json", labels="1..K")
    assert src.categories == {1: (0, "car"), 2: (17, "cat"), 3: (90, "kite")}
    with pytest.raises(ValueError, match="labels='1..k'"):
        stoker.Coco(root / "images", tmp_path / "zero.json", labels="1..k")
    with pytest.raises(ValueError, match="crowd='ignore'"):
        stoker.Coco(root / "images", tmp_path / "zero.json", crowd="ignore")


def test_coco_drop_empty_and_errors(coco, tmp_path):
    root, doc = coco
    assert len(stoker.Coco(root / "images", root / "instances.json", drop_empty=True)) == \
        len(SIZES) - 1
    bad = dict(doc, annotations=doc["annotations"] + [
        {"id": 7, "image_id": 999, "category_id": 3, "bbox": [0, 0, 1, 1]}])
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match=r"annotation id 7 is of image id 999"):
        stoker.Coco(root / "images", tmp_path / "bad.json")
    with pytest.raises(ValueError, match="masks='polygons'"):
        stoker.Coco(root / "images", root / "instances.json", masks="polygons")


def _erode(m, times):
    for _ in range(times):
        m = m & np.roll(m, 1, 0) & np.roll(m, -1, 0) & np.roll(m, 1, 1) & np.roll(m, -1, 1)
    return m


def test_coco_semantic_mask(coco):
    root, doc = coco
    src = stoker.Coco(root / "images", root / "instances.json", masks="semantic")
    assert src.targets["mask"] == {"target": "mask", "ignore_index": 255}
    got, ids = _run(stoker.Loader(src, batch_size=2, dtype="uint8", collate="list",
                                  return_indices=True))
    label = {3: 2, 17: 16, 90: 89}  # the mask's value is label + 1 = the category id
    checked = 0
    for mask, i in zip(got["mask"], ids):
        im, anns = _expected(doc)[i]
        h, w = im["height"], im["width"]
        assert mask.dtype == np.uint8 and mask.shape == (h, w)
        if not anns:
            assert not mask.any()
            continue
        # Each instance as a 0/1 mask: RLE lists decoded here; polygons by Pillow, which
        # fills the outline too, so it agrees with the pixel-centre rule away from it:
        # a polygon's core (Pillow's fill eroded twice) is inside, and what lies a pixel
        # beyond Pillow's fill is outside.
        cover = np.zeros((h, w), np.int32)
        core_of, outside = [], np.ones((h, w), bool)
        crowd = np.zeros((h, w), bool)
        for a in anns:
            seg = a["segmentation"]
            if isinstance(seg, list):
                img = Image.new("L", (w, h))
                ImageDraw.Draw(img).polygon(seg[0], fill=1)
                pil = np.asarray(img).astype(bool)
                core_of.append((_erode(pil, 2), label[a["category_id"]] + 1))
                cover += pil
                outside &= _erode(~pil, 1)
            elif isinstance(seg["counts"], list):
                m = _instance_mask(a, h, w).astype(bool)
                core_of.append((m, label[a["category_id"]] + 1))
                cover += m
                outside &= ~m
            else:
                crowd |= _blob(h, w, [1, 4][[1, 4].index(SIZES.index((w, h)))]).astype(bool)
                outside &= ~crowd
        assert (mask[outside] == 0).all(), i
        assert (mask[crowd] == 255).all(), i
        for core, value in core_of:
            alone = core & (cover == 1) & ~crowd
            assert (mask[alone] == value).all(), i
            checked += int(alone.sum())
        assert (mask[(cover >= 2) & _erode(cover >= 2, 1)] == 255).all(), i
    assert checked > 50


def _semantic_of(instances, labels, iscrowd, ignore=255):
    """The semantic rule written out on the instance planes, for labels "0..K-1": label + 1
    where exactly one non-crowd instance covers a pixel, ignore where two or more do or a
    crowd does."""
    h, w = instances.shape[1:]
    out = np.zeros((h, w), np.uint8)
    plain = instances[iscrowd == 0].astype(bool)
    cover = plain.sum(axis=0)
    for m, lab in zip(plain, labels[iscrowd == 0]):
        out[m & (cover == 1)] = lab + 1
    out[cover >= 2] = ignore
    for m in instances[iscrowd == 1].astype(bool):
        out[m] = ignore
    return out


def test_coco_semantic_mask_is_the_rule_on_the_instance_planes(coco, tmp_path):
    # The semantic mask is painted from each annotation's extent only: it equals the rule
    # applied to the full instance planes, on the fixture and on many overlapping polygons
    # (several parts, some past the image's edge), RLE blobs and crowds.
    root, doc = coco
    rng = np.random.default_rng(7)
    big = dict(doc, images=list(doc["images"]), annotations=list(doc["annotations"]))
    w, h = 40, 30
    _png(root / "images" / "big.png", photo(w, h, 5))
    big["images"].append({"id": 999, "file_name": "big.png", "height": h, "width": w})
    for j in range(14):
        parts = []
        for _ in range(1 + j % 2):
            cx, cy = rng.uniform(-5, w + 5), rng.uniform(-5, h + 5)
            ang = np.sort(rng.uniform(0, 2 * np.pi, 5))
            r = rng.uniform(2, 12, 5)
            parts.append([float(v) for a, d in zip(ang, r)
                          for v in (cx + d * np.cos(a), cy + d * np.sin(a))])
        seg = parts if j % 4 else {"size": [h, w], "counts": _rle_counts(_blob(h, w, 40 + j))}
        big["annotations"].append({"id": 5000 + j, "image_id": 999,
                                   "category_id": [3, 17, 90][j % 3], "bbox": [0, 0, 1, 1],
                                   "iscrowd": int(j % 5 == 4), "segmentation": seg})
    (tmp_path / "big.json").write_text(json.dumps(big))
    runs = {}
    for masks in ("semantic", "instances"):
        src = stoker.Coco(root / "images", tmp_path / "big.json", masks=masks,
                          labels="0..K-1", crowd="keep")
        runs[masks] = _run(stoker.Loader(src, batch_size=3, collate="list",
                                         return_indices=True))
    (sem, ids), (inst, ids2) = runs["semantic"], runs["instances"]
    assert ids == ids2
    checked = 0
    for i in range(len(ids)):
        planes = inst["masks"][i]
        want = _semantic_of(planes, inst["labels"][i], inst["iscrowd"][i])
        np.testing.assert_array_equal(sem["mask"][i], want, err_msg=str(ids[i]))
        checked += len(planes)
    assert checked >= 14 + len(doc["annotations"])


def test_coco_compressed_rle_equals_uncompressed(coco, tmp_path):
    root, doc = coco
    # The same blobs as crowd annotations once compressed, once as lists.
    h, w = 24, 32
    blob = _blob(h, w, 77)
    counts = _rle_counts(blob)
    for form, name in ((_rle_string(counts), "c.json"), (counts, "u.json")):
        d = {"images": [{"id": 1, "file_name": "im0.png", "height": h, "width": w}],
             "categories": [{"id": 5}],
             "annotations": [{"id": 1, "image_id": 1, "category_id": 5, "bbox": [0, 0, 1, 1],
                              "segmentation": {"size": [h, w], "counts": form}}]}
        (tmp_path / name).write_text(json.dumps(d))
    masks = []
    for name in ("c.json", "u.json"):
        src = stoker.Coco(root / "images", tmp_path / name, masks="instances")
        batch = next(iter(stoker.Loader(src, batch_size=1, collate="list")))
        masks.append(np.asarray(batch["masks"][0]))
    assert masks[0].shape == (1, h, w)
    assert masks[0].tobytes() == masks[1].tobytes() == blob[None].tobytes()


@pytest.mark.parametrize("kind", ["coco", "segmentation"])
def test_threads_ranks_and_resume(coco, seg, kind):
    if kind == "coco":
        root, _ = coco
        src = stoker.Coco(root / "images", root / "instances.json", masks="semantic")
        key = "boxes"
    else:
        root, _ = seg
        src = stoker.SegmentationFolder(root / "img", root / "ann")
        key = "mask"

    def run(**kw):
        got, ids = _run(stoker.Loader(src, batch_size=2, shuffle=True, seed=4, dtype="uint8",
                                      collate="list", return_indices=True, **kw))
        return ids, {k: [v.tobytes() for v in vs] for k, vs in got.items()}

    one, three = run(threads=1), run(threads=3)
    assert one == three
    ranks = [run(rank=r, world_size=2) for r in range(2)]
    assert len(src) % 2 == 0  # no rank padding: the two ranks are the epoch exactly
    assert sorted(ranks[0][0] + ranks[1][0]) == list(range(len(src)))
    by_id = dict(zip(one[0], one[1][key]))
    for ids, fields in ranks:
        for i, b in zip(ids, fields[key]):
            assert b == by_id[i]
    loader = stoker.Loader(src, batch_size=2, shuffle=True, seed=4, dtype="uint8",
                           collate="list", return_indices=True)
    it = iter(loader)
    first = next(it)
    state = loader.state_dict()
    del it
    again = stoker.Loader(src, batch_size=2, shuffle=True, seed=4, dtype="uint8",
                          collate="list", return_indices=True)
    again.load_state_dict(state)
    rest = [i for _, idx in again for i in idx.tolist()]
    assert first[1].tolist() + rest == one[0]


def test_coco_instance_masks_follow_geometric_transforms(coco):
    # Instance masks ([N, H, W], per-box rows of rank 3) move like masks (nearest, padding
    # 0): each plane equals the untransformed plane through torchvision's functional ops
    # with NEAREST; under a random crop the planes stay one per kept box.
    import torchvision.transforms.functional as F
    from torchvision.transforms import InterpolationMode
    root, _ = coco
    src = stoker.Coco(root / "images", root / "instances.json", masks="instances")
    plain, ids = _run(stoker.Loader(src, batch_size=2, collate="list", return_indices=True))
    by_id = {i: m for i, m in zip(ids, plain["masks"])}
    transforms = [stoker.Resize((17, 23)), stoker.RandomHorizontalFlip(1.0),
                  stoker.Pad((2, 1, 3, 4))]
    got, ids = _run(stoker.Loader(src, batch_size=2, collate="list", return_indices=True,
                                  transforms=transforms))
    planes = 0
    for masks, i in zip(got["masks"], ids):
        assert masks.shape == (len(by_id[i]), 22, 28)
        for m, orig in zip(masks, by_id[i]):
            pil = F.resize(Image.fromarray(orig), [17, 23], InterpolationMode.NEAREST)
            want = np.asarray(F.pad(F.hflip(pil), [2, 1, 3, 4], fill=0))
            np.testing.assert_array_equal(m, want)
            planes += 1
    assert planes > 0
    got, _ = _run(stoker.Loader(src, batch_size=2, collate="list", seed=3, return_indices=True,
                                transforms=[stoker.RandomResizedCrop(16, scale=(0.1, 0.3))]))
    for masks, boxes, labels in zip(got["masks"], got["boxes"], got["labels"]):
        assert masks.shape == (len(boxes), 16, 16) and len(labels) == len(boxes)


def test_coco_polygon_masks_are_pycocotools_own(tmp_path):
    # The rule stoker follows is pycocotools' (its rleFrPoly: vertices scaled by 5 and
    # rounded, each edge walked at that resolution); not a "pixel centre inside" rule, from
    # which it differs along slanted edges. Compared with pycocotools itself (the torch 2
    # lane installs it) on random polygons inside, across and far outside small images,
    # with repeated vertices and half-pixel coordinates.
    mask_api = pytest.importorskip("pycocotools.mask")
    import json
    from PIL import Image
    rng = np.random.default_rng(46)
    (tmp_path / "img").mkdir()
    images, annotations, polys = [], [], {}
    for i in range(60):
        h, w = int(rng.integers(5, 40)), int(rng.integers(5, 40))
        Image.fromarray(np.zeros((h, w, 3), np.uint8)).save(tmp_path / "img" / f"{i}.png")
        images.append({"id": i + 1, "file_name": f"{i}.png", "height": h, "width": w})
        for k in range(int(rng.integers(1, 3))):
            n = int(rng.integers(3, 12))
            spread = float(rng.choice([1.0, 1.5, 20.0]))
            xs = rng.uniform(-0.5 * spread * w, spread * w, n)
            ys = rng.uniform(-0.5 * spread * h, spread * h, n)
            if k == 1:
                xs, ys = np.round(xs * 2) / 2, np.round(ys * 2) / 2  # half pixels
            pts = np.stack([xs, ys], 1)
            if n > 4:
                pts[2] = pts[1]  # a repeated vertex
            poly = [round(float(v), 3) for v in pts.ravel()]
            ann_id = len(annotations) + 1
            annotations.append({"id": ann_id, "image_id": i + 1, "category_id": 1,
                                "bbox": [0, 0, 1, 1], "iscrowd": 0, "segmentation": [poly]})
            polys.setdefault(i + 1, []).append((ann_id, poly, h, w))
    (tmp_path / "a.json").write_text(json.dumps({
        "images": images, "annotations": annotations,
        "categories": [{"id": 1, "name": "x"}]}))
    src = stoker.Coco(str(tmp_path / "img"), str(tmp_path / "a.json"), masks="instances")
    loader = stoker.Loader(src, batch_size=1, threads=2, collate="list")
    compared = 0
    for image_id, batch in enumerate(loader, start=1):
        got = batch["masks"][0].numpy()
        want = [mask_api.decode(mask_api.merge(mask_api.frPyObjects([p], h, w)))
                for _, p, h, w in polys[image_id]]
        assert got.shape == (len(want),) + want[0].shape, (image_id, got.shape)
        for k, m in enumerate(want):
            assert (got[k] == m).all(), (image_id, k, int((got[k] != m).sum()))
            compared += 1
    assert compared == len(annotations)


@pytest.mark.parametrize("labels", [None, "1..K", "0..K-1"])
def test_the_docs_cocoeval_recipe_scores_the_ground_truth_as_perfect(coco, labels):
    # docs/targets.md's COCOeval recipe: image ids from src.image_ids[index] (the batch's
    # indices from return_indices=True, a (fields, indices) pair for records), category ids
    # from src.categories[label][0], xyxy boxes back to COCO's xywh. The ground truth itself
    # given as detections must score AP 1.0 for every label numbering.
    coco_api = pytest.importorskip("pycocotools.coco")
    cocoeval = pytest.importorskip("pycocotools.cocoeval")
    import contextlib
    import io
    root, _ = coco
    ann = str(root / "instances.json")
    src = stoker.Coco(root / "images", ann, **({"labels": labels} if labels else {}))
    results = []
    loader = stoker.Loader(src, batch_size=2, collate="list", return_indices=True)
    for batch, indices in loader:
        for k, boxes, labels_ in zip(indices.tolist(), batch["boxes"], batch["labels"]):
            for (x0, y0, x1, y1), label in zip(boxes.tolist(), labels_.tolist()):
                results.append({"image_id": src.image_ids[k],
                                "category_id": src.categories[label][0],
                                "bbox": [x0, y0, x1 - x0, y1 - y0], "score": 1.0})
    with contextlib.redirect_stdout(io.StringIO()):
        gt = coco_api.COCO(ann)
        e = cocoeval.COCOeval(gt, gt.loadRes(results), "bbox")
        e.evaluate()
        e.accumulate()
        e.summarize()
    assert e.stats[0] == pytest.approx(1.0), e.stats  # AP at IoU 0.50:0.95
