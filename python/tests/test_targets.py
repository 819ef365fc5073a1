"""Targets that follow the image: masks, boxes and keypoints through every
geometric transform with the image's random draw.

References:
- masks: torchvision 0.14's functional ops with InterpolationMode.NEAREST on a PIL image
  (mode "L"), as torchvision's segmentation references transform their PIL masks:
  F.crop / F.pad(fill=255) / F.resize / F.hflip / F.vflip / F.rotate / F.affine, and
  Pillow's Image.transform(PERSPECTIVE, NEAREST) with the coefficients solved in float64 and
  rounded to float32 (F.perspective's PIL path in torchvision >= 0.15; 0.14 solves in
  float32). Exactly equal. Where torchvision pads with 0 (CenterCrop larger than the image,
  RandomCrop's padding) stoker pads a mask with its ignore_index (255): the reference pads
  with 255.
- boxes and keypoints: torchvision v2's box maths (crop: shift then clamp; resize: scale;
  flips: mirror; rotate/affine: _get_inverse_affine_matrix(..., inverted=False) on the four
  corners, min/max, clamp; perspective: the inverse coefficients on the corners), written
  out here (torchvision 0.14 has no v2). Within 1e-4 px.
The random draw comes from _C._follow_targets (the engine's PlanGeometry and warp draws
for one seed, the same code a sample's image goes through); the loader tests below check
that a loader's targets follow its images.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torchvision.transforms.functional as F
from PIL import Image
from torchvision.transforms import InterpolationMode

import stoker
from conftest import coeffs_f64
from stoker import _C

NEAREST = InterpolationMode.NEAREST
W, H = 64, 48


def affine_forward(center, angle, translate, scale, shear):
    """torchvision's _get_inverse_affine_matrix(..., inverted=False): the forward map."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    m = [x * scale for x in (a, b, 0.0, c, d, 0.0)]
    m[2] += m[0] * (-cx) + m[1] * (-cy)
    m[5] += m[3] * (-cx) + m[4] * (-cy)
    m[2] += cx + tx
    m[5] += cy + ty
    return lambda x, y: (m[0] * x + m[1] * y + m[2], m[3] * x + m[4] * y + m[5])


def perspective_forward(c):
    """v2's perspective_bounding_boxes: the inverse of the image's coefficients."""
    denom = c[0] * c[4] - c[1] * c[3]
    i = [(c[4] - c[5] * c[7]) / denom, (-c[1] + c[2] * c[7]) / denom,
         (c[1] * c[5] - c[2] * c[4]) / denom, (-c[3] + c[5] * c[6]) / denom,
         (c[0] - c[2] * c[6]) / denom, (-c[0] * c[5] + c[2] * c[3]) / denom,
         (-c[4] * c[6] + c[3] * c[7]) / denom, (-c[0] * c[7] + c[1] * c[6]) / denom]

    def f(x, y):
        q = i[6] * x + i[7] * y + 1.0
        return (i[0] * x + i[1] * y + i[2]) / q, (i[3] * x + i[4] * y + i[5]) / q
    return f


def reference(transforms, steps, mask, boxes, keypoints, min_size=1.0, min_area_fraction=0.0,
              fill=255):
    """Replays the drawn steps with torchvision's functional ops and v2's box maths."""
    pil = Image.fromarray(mask) if mask is not None else None
    b = boxes.astype(np.float64).copy()
    u = b.copy()  # never clamped
    kp = keypoints.astype(np.float64).copy()
    vis = np.ones(len(kp)) if kp.shape[1] == 2 else kp[:, 2].copy()
    kp = kp[:, :2]
    warps = [t for t in transforms if t.name in ("RandomRotation", "RandomAffine",
                                                  "RandomPerspective")]

    def clamp(a, w, h):
        a[:, 0::2] = a[:, 0::2].clip(0, w)
        a[:, 1::2] = a[:, 1::2].clip(0, h)

    def corners_map(a, f):
        out = np.empty_like(a)
        for r, (x1, y1, x2, y2) in enumerate(a):
            pts = [f(x, y) for x, y in ((x1, y1), (x2, y1), (x2, y2), (x1, y2))]
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            out[r] = (min(xs), min(ys), max(xs), max(ys))
        return out

    def outside(w, h):
        return ~((kp[:, 0] >= 0) & (kp[:, 0] <= w) & (kp[:, 1] >= 0) & (kp[:, 1] <= h))

    for s in steps:
        kind, in_w, in_h, out_w, out_h, x, y, cw, ch, mode = (int(v) for v in s[:10])
        pad1 = [int(v) for v in s[10:14]]
        params = s[14:23]
        if kind == 0:  # crop
            if pil is not None:
                if mode == 0:
                    pl, pt = max(0, -x), max(0, -y)
                    pr, pb = max(0, x + cw - in_w), max(0, y + ch - in_h)
                    padded = F.pad(pil, [pl, pt, pr, pb], fill=fill) if pl + pt + pr + pb else pil
                    pil = F.crop(padded, y + pt, x + pl, ch, cw)
                else:
                    modes = {1: "edge", 2: "reflect", 3: "symmetric"}
                    padded = F.pad(pil, pad1, padding_mode=modes[mode])
                    pil = F.crop(padded, y + pad1[1], x + pad1[0], ch, cw)
            for a, do_clamp in ((b, True), (u, False)):
                a -= [x, y, x, y]
                if do_clamp:
                    clamp(a, cw, ch)
            kp -= [x, y]
            vis[outside(cw, ch)] = 0
        elif kind == 1:  # resize
            if pil is not None:
                pil = F.resize(pil, [out_h, out_w], NEAREST)
            sx, sy = out_w / in_w, out_h / in_h
            for a in (b, u):
                a *= [sx, sy, sx, sy]
            kp *= [sx, sy]
        elif kind == 2:
            if pil is not None:
                pil = F.hflip(pil)
            for a in (b, u):
                a[:, [0, 2]] = in_w - a[:, [2, 0]]
            kp[:, 0] = in_w - kp[:, 0]
        elif kind == 3:
            if pil is not None:
                pil = F.vflip(pil)
            for a in (b, u):
                a[:, [1, 3]] = in_h - a[:, [3, 1]]
            kp[:, 1] = in_h - kp[:, 1]
        else:
            t = warps.pop(0)
            w, h = in_w, in_h
            centre = [w * 0.5, h * 0.5]
            if t.name == "RandomRotation":
                angle = params[0]
                if pil is not None:
                    pil = F.rotate(pil, angle, NEAREST, fill=fill)
                f = affine_forward(centre, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
            elif t.name == "RandomAffine":
                angle, tx, ty, scale, shx, shy = params[:6]
                if pil is not None:
                    pil = F.affine(pil, angle, [int(tx), int(ty)], scale, [shx, shy], NEAREST,
                                   fill=fill)
                f = affine_forward(centre, angle, [tx, ty], scale, [shx, shy])
            else:
                if params[0] == 0:
                    continue
                sp = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
                ep = [[int(params[1 + 2 * k]), int(params[2 + 2 * k])] for k in range(4)]
                c = coeffs_f64(sp, ep)
                if pil is not None:
                    pil = pil.transform((w, h), Image.PERSPECTIVE, c, Image.NEAREST,
                                        fillcolor=fill)
                f = perspective_forward(c)
            b = corners_map(b, f)
            clamp(b, w, h)
            u = corners_map(u, f)
            kp = np.array([f(px, py) for px, py in kp]).reshape(-1, 2)
            vis[outside(w, h)] = 0
    out_w, out_h = (int(steps[-1][3]), int(steps[-1][4])) if len(steps) else (W, H)
    clamp(b, out_w, out_h)
    vis[outside(out_w, out_h)] = 0
    bw, bh = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    keep = (bw > 0) & (bh > 0) & (bw >= min_size) & (bh >= min_size)
    if min_area_fraction > 0:
        full = (u[:, 2] - u[:, 0]) * (u[:, 3] - u[:, 1])
        keep &= (full > 0) & (bw * bh >= min_area_fraction * full)
    ref_mask = None if pil is None else np.asarray(pil)
    return ref_mask, b[keep], keep, np.column_stack([kp, vis])


def sample_targets(seed):
    rng = np.random.default_rng(seed)
    mask = rng.integers(0, 21, (H, W)).astype(np.uint8)
    x1 = rng.uniform(-4, W - 6, 12)
    y1 = rng.uniform(-4, H - 6, 12)
    boxes = np.column_stack([x1, y1, x1 + rng.uniform(0.5, 30, 12),
                             y1 + rng.uniform(0.5, 24, 12)])
    kps = np.column_stack([rng.uniform(0, W, 9), rng.uniform(0, H, 9)])
    return mask, boxes, kps


CASES = {
    "Resize": [stoker.Resize((30, 40))],
    "ResizeShorter": [stoker.Resize(24)],
    "RandomResizedCrop": [stoker.RandomResizedCrop(32, scale=(0.2, 1.0))],
    "CenterCrop": [stoker.CenterCrop(40)],
    "CenterCropPads": [stoker.CenterCrop((56, 60))],
    "RandomCropPadding": [stoker.RandomCrop(40, padding=6)],
    "RandomCropFill": [stoker.RandomCrop(40, padding=6, fill=7)],
    "RandomCropPadIfNeeded": [stoker.RandomCrop(56, pad_if_needed=True)],
    "RandomCropReflect": [stoker.RandomCrop(40, padding=4, padding_mode="reflect")],
    "Pad": [stoker.Pad((3, 4, 5, 6))],
    "HorizontalFlip": [stoker.RandomHorizontalFlip(1.0)],
    "VerticalFlip": [stoker.RandomVerticalFlip(1.0)],
    "CropFlip": [stoker.RandomResizedCrop(32), stoker.RandomHorizontalFlip(),
                 stoker.RandomVerticalFlip()],
    "ResizeThenFlip": [stoker.Resize((20, 27)), stoker.RandomHorizontalFlip(1.0)],
    "RandomRotation": [stoker.RandomRotation(40)],
    "RandomRotationSquare": [stoker.Resize((40, 40)), stoker.RandomRotation((90, 90))],
    "RandomAffine": [stoker.RandomAffine(20, translate=(0.1, 0.1), scale=(0.8, 1.2),
                                         shear=(-10, 10, -5, 5))],
    "RandomPerspective": [stoker.RandomPerspective(0.5, p=1.0)],
    "Chain": [stoker.Resize(40), stoker.RandomCrop(32), stoker.RandomHorizontalFlip(),
              stoker.RandomRotation(15)],
}


def check_against_the_references(name, transforms, seeds=range(6)):
    """The engine's mask, boxes and keypoints for each seed equal reference()'s."""
    for seed in seeds:
        mask, boxes, kps = sample_targets(seed)
        steps, got_mask, got_boxes, got_keep, got_kps = _C._follow_targets(
            transforms, W, H, seed, mask=mask, boxes=boxes, keypoints=kps)
        ref_mask, ref_boxes, ref_keep, ref_kps = reference(transforms, steps, mask, boxes, kps)
        assert got_mask.shape == ref_mask.shape, (name, seed)
        np.testing.assert_array_equal(got_mask, ref_mask, err_msg=f"{name} seed {seed}")
        np.testing.assert_array_equal(got_keep.astype(bool), ref_keep, err_msg=f"{name} {seed}")
        np.testing.assert_allclose(got_boxes, ref_boxes, atol=1e-4, rtol=0,
                                   err_msg=f"{name} seed {seed}")
        np.testing.assert_allclose(got_kps[:, :2], ref_kps[:, :2], atol=1e-4, rtol=0)
        np.testing.assert_array_equal(got_kps[:, 2], ref_kps[:, 2])


def instance_planes(boxes, seed):
    """A 0/1 plane per box: random pixels inside the box (rounded outwards), 0 outside."""
    rng = np.random.default_rng(100 + seed)
    planes = np.zeros((len(boxes), H, W), np.uint8)
    for j, (x1, y1, x2, y2) in enumerate(boxes):
        xa, ya = max(0, int(math.floor(x1))), max(0, int(math.floor(y1)))
        xb, yb = min(W, max(xa, int(math.ceil(x2)))), min(H, max(ya, int(math.ceil(y2))))
        planes[j, ya:yb, xa:xb] = rng.integers(0, 2, (yb - ya, xb - xa))
    return planes


@pytest.mark.parametrize("name", list(CASES))
def test_instance_masks_match_the_references(name):
    """Each kept box's plane is the plane through torchvision's functional ops with NEAREST,
    padded with 0 (outside the instance); removed boxes take their planes with them."""
    transforms = CASES[name]
    removed = 0
    for seed in range(6):
        _, boxes, _ = sample_targets(seed)
        planes = instance_planes(boxes, seed)
        steps, _, _, keep, _, got = _C._follow_targets(transforms, W, H, seed, boxes=boxes,
                                                       min_size=2.0, instances=planes)
        _, _, ref_keep, _ = reference(transforms, steps, None, boxes, boxes[:, :2], 2.0)
        np.testing.assert_array_equal(keep.astype(bool), ref_keep)
        removed += int((~ref_keep).sum())
        want = [reference(transforms, steps, p, boxes, boxes[:, :2], fill=0)[0]
                for p in planes[ref_keep]]
        assert got.shape[0] == len(want), (name, seed)
        for j, w in enumerate(want):
            np.testing.assert_array_equal(got[j], w, err_msg=f"{name} seed {seed} plane {j}")
    if name in ("RandomResizedCrop", "CenterCrop", "Chain"):
        assert removed > 0, name  # the removal path ran

@pytest.mark.parametrize("name", list(CASES))
def test_targets_match_the_references(name):
    check_against_the_references(name, CASES[name])


def test_box_formats_and_sanitising():
    mask, boxes, kps = sample_targets(3)
    t = [stoker.RandomResizedCrop(24, scale=(0.1, 0.3))]
    xywh = np.column_stack([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]])
    cxcywh = np.column_stack([(boxes[:, :2] + boxes[:, 2:]) / 2, boxes[:, 2:] - boxes[:, :2]])
    for seed in range(5):
        base = _C._follow_targets(t, W, H, seed, boxes=boxes)
        for fmt, b in (("xywh", xywh), ("cxcywh", cxcywh)):
            other = _C._follow_targets(t, W, H, seed, boxes=b, box_format=fmt)
            np.testing.assert_array_equal(other[3], base[3])
            np.testing.assert_allclose(other[2], base[2], atol=1e-4)
        for min_size, frac in ((4.0, 0.0), (1.0, 0.5)):
            steps, _, got, keep, _ = _C._follow_targets(t, W, H, seed, boxes=boxes,
                                                       min_size=min_size,
                                                       min_area_fraction=frac)
            _, ref, ref_keep, _ = reference(t, steps, None, boxes, kps, min_size, frac)
            np.testing.assert_array_equal(keep.astype(bool), ref_keep)
            np.testing.assert_allclose(got, ref, atol=1e-4)
    # Some boxes are removed by the crop (the test would not test removal otherwise).
    assert not _C._follow_targets(t, W, H, 0, boxes=boxes)[3].all()


# ------------------------------------------------------------------------- the loader --

N = 10


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """Blocky masks whose image shows the label (grey = 10 * label)."""
    d = tmp_path_factory.mktemp("targets")
    rng = np.random.default_rng(1)
    blocks = rng.integers(0, 20, (N, H // 8, W // 8)).astype(np.uint8)
    masks = blocks.repeat(8, axis=1).repeat(8, axis=2)
    images = np.repeat((masks * 10)[..., None], 3, axis=3).astype(np.uint8)
    boxes = np.zeros((N, 4, 4), np.float32)
    for i in range(N):  # xywh: whole 8x8 blocks
        for j in range(4):
            bx, by = rng.integers(0, W // 8 - 1), rng.integers(0, H // 8 - 1)
            boxes[i, j] = (bx * 8, by * 8, 16, 16)
    boxes[:, 3] = (W - 2, H - 2, 2, 2)  # a small box in the corner, easily cropped away
    labels = np.arange(N * 4, dtype=np.int64).reshape(N, 4)
    kps = rng.uniform(0, 40, (N, 5, 2)).astype(np.float32)
    arrays = {"image": images, "mask": masks, "boxes": boxes, "labels": labels,
              "keypoints": kps}
    from conftest import save_npy_fields
    paths = save_npy_fields(d, arrays)
    return d, arrays, paths


TARGETS = {"mask": "mask", "boxes": {"target": "boxes", "format": "xywh"},
           "labels": "per_box", "keypoints": "keypoints"}


def _run(paths, transforms, **kw):
    out = []
    loader = stoker.Loader(stoker.Npy(paths), batch_size=4, transforms=transforms,
                           targets=TARGETS, dtype="uint8", layout="NHWC", return_indices=True,
                           **kw)
    for batch, ids in loader:
        out.append((ids.numpy().copy(), {k: (v.numpy().copy() if isinstance(v, torch.Tensor)
                                             else [x.numpy().copy() for x in v])
                                         for k, v in batch.items()}))
    return out, loader


def test_loader_targets_follow_the_image_and_threads_agree(records):
    _, arrays, paths = records
    transforms = [stoker.RandomResizedCrop(32, scale=(0.3, 1.0)), stoker.RandomHorizontalFlip(),
                  stoker.ColorJitter(0.2)]
    one, _ = _run(paths, transforms, threads=1, shuffle=True, seed=4)
    three, loader = _run(paths, transforms, threads=3, shuffle=True, seed=4)
    removed = 0
    for (ids1, b1), (ids3, b3) in zip(one, three):
        np.testing.assert_array_equal(ids1, ids3)
        assert b1["mask"].tobytes() == b3["mask"].tobytes()
        for k in ("boxes", "labels", "keypoints"):
            assert [x.tobytes() for x in b1[k]] == [x.tobytes() for x in b3[k]]
        assert b1["mask"].shape == (len(ids1), 32, 32) and b1["mask"].dtype == np.uint8
        # The image (grey = 10 * label, resampled bilinearly; ColorJitter's brightness
        # scales it) and the mask (nearest) show the same blocks: away from block edges
        # the image's darkest-to-brightest order matches the labels'.
        for i, sid in enumerate(ids1):
            img = b1["image"][i, ..., 0].astype(int)
            m = b1["mask"][i].astype(int)
            # the same draw: labels agree with the image wherever the image is uniform
            same = np.corrcoef(img.ravel(), m.ravel())[0, 1]
            assert same > 0.9, (sid, same)
            assert b1["boxes"][i].dtype == np.float32 and b1["boxes"][i].shape[1] == 4
            n = len(b1["boxes"][i])
            removed += 4 - n
            labels = b1["labels"][i]
            assert len(labels) == n and set(labels) <= set(arrays["labels"][sid])
            assert b1["keypoints"][i].shape == (5, 3)
            # a kept box covers mask blocks: the mask inside it is mostly its blocks' labels
            for (x1, y1, x2, y2), lab in zip(b1["boxes"][i], labels):
                assert 0 <= x1 < x2 <= 32 and 0 <= y1 < y2 <= 32
    assert loader.stats()["boxes_removed"] == removed > 0


INSTANCE_CASES = ["RandomResizedCrop", "CenterCropPads", "RandomCropPadding",
                  "RandomCropReflect", "CropFlip", "RandomRotation", "RandomAffine",
                  "RandomPerspective", "Chain"]


@pytest.mark.parametrize("name", INSTANCE_CASES)
def test_loader_instance_masks_follow_their_boxes(records, tmp_path, name):
    """Instance masks [N, H, W] (target per_box of rank 3) through the loader: plane j of a
    sample is (semantic mask == class j), so after any geometry the delivered plane of each
    kept box equals (delivered semantic mask == that box's class): nearest sampling commutes
    with the comparison, and both pads fall outside every class (255 and 0). Removed boxes
    take their planes and classes with them; 1 and 3 threads agree byte for byte."""
    _, arrays, paths = records
    cls = np.stack([arrays["mask"][i][(arrays["boxes"][i][:, 1] + 1).astype(int),
                                      (arrays["boxes"][i][:, 0] + 1).astype(int)]
                    for i in range(N)]).astype(np.int64)
    planes = (arrays["mask"][:, None] == cls[:, :, None, None]).astype(np.uint8)
    np.save(tmp_path / "masks.npy", planes)
    np.save(tmp_path / "cls.npy", cls)
    p = dict(paths, masks=str(tmp_path / "masks.npy"), cls=str(tmp_path / "cls.npy"))
    targets = dict(TARGETS, masks="per_box", cls="per_box")
    transforms = CASES[name]

    def run(threads):
        loader = stoker.Loader(stoker.Npy(p), batch_size=4, transforms=transforms,
                               targets=targets, dtype="uint8", layout="NHWC", shuffle=True,
                               seed=5, threads=threads, collate="list", return_indices=True)
        return [(ids.numpy().copy(), {k: [np.asarray(x).copy() for x in v]
                                      for k, v in b.items()}) for b, ids in loader], loader
    one, loader = run(1)
    three, _ = run(3)
    kept = 0
    for (ids, b), (ids3, b3) in zip(one, three):
        np.testing.assert_array_equal(ids, ids3)
        for k in ("masks", "boxes", "cls", "mask"):
            assert [x.tobytes() for x in b[k]] == [x.tobytes() for x in b3[k]], k
        for i, sid in enumerate(ids):
            sem, masks, c = b["mask"][i], b["masks"][i], b["cls"][i]
            assert masks.dtype == np.uint8 and masks.shape == (len(b["boxes"][i]),) + sem.shape
            assert len(c) == len(masks) and set(c) <= set(cls[sid])
            for j in range(len(masks)):
                np.testing.assert_array_equal(masks[j], (sem == c[j]).astype(np.uint8),
                                              err_msg=f"{name} sample {sid} plane {j}")
            kept += len(masks)
    assert kept > 0
    if name in ("RandomResizedCrop", "CropFlip", "Chain"):
        assert loader.stats()["boxes_removed"] > 0


def test_loader_refuses_other_per_box_rows_of_rank_3_under_geometry(records, tmp_path):
    _, arrays, paths = records
    np.save(tmp_path / "f.npy", np.zeros((N, 4, H, W), np.float32))
    np.save(tmp_path / "r4.npy", np.zeros((N, 4, H, W, 1), np.uint8))
    for f in ("f", "r4"):
        p = dict(paths, extra=str(tmp_path / f"{f}.npy"))
        with pytest.raises(ValueError, match=r"field 'extra' \(target per_box\).*instance "
                                             r"masks, uint8 or uint16 \[N, H, W\]"):
            stoker.Loader(stoker.Npy(p), batch_size=2, targets=dict(TARGETS, extra="per_box"),
                          transforms=[stoker.RandomResizedCrop(16)])
        # Without a geometric transform they pass through.
        stoker.Loader(stoker.Npy(p), batch_size=2, targets=dict(TARGETS, extra="per_box"),
                      transforms=[stoker.ColorJitter(0.1)], collate="list")


def test_loader_masks_equal_the_reference_for_fixed_transforms(records):
    _, arrays, paths = records
    transforms = [stoker.Resize((30, 40)), stoker.RandomHorizontalFlip(1.0),
                  stoker.Pad((2, 3, 4, 5))]
    batches, _ = _run(paths, transforms, threads=2)
    for ids, b in batches:
        for i, sid in enumerate(ids):
            pil = Image.fromarray(arrays["mask"][sid])
            ref = np.asarray(F.pad(F.hflip(F.resize(pil, [30, 40], NEAREST)), [2, 3, 4, 5],
                                   fill=255))
            np.testing.assert_array_equal(b["mask"][i], ref)
            bx = arrays["boxes"][sid].astype(np.float64)
            xyxy = np.column_stack([bx[:, :2], bx[:, :2] + bx[:, 2:]])
            xyxy *= [40 / W, 30 / H, 40 / W, 30 / H]
            xyxy[:, [0, 2]] = 40 - xyxy[:, [2, 0]]
            xyxy += [2, 3, 2, 3]
            np.testing.assert_allclose(b["boxes"][i], xyxy, atol=1e-4)
            np.testing.assert_array_equal(b["labels"][i], arrays["labels"][sid])


def test_loader_resume_ranks_and_pad_collate(records):
    _, arrays, paths = records
    transforms = [stoker.RandomResizedCrop(24), stoker.RandomHorizontalFlip(),
                  stoker.RandomRotation(10)]
    full, _ = _run(paths, transforms, shuffle=True, seed=9)
    loader = stoker.Loader(stoker.Npy(paths), batch_size=4, transforms=transforms,
                           targets=TARGETS, dtype="uint8", shuffle=True, seed=9)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    del it
    again, _ = _run(paths, transforms, shuffle=True, seed=9)
    resumed = stoker.Loader(stoker.Npy(paths), batch_size=4, transforms=transforms,
                            targets=TARGETS, dtype="uint8", shuffle=True, seed=9)
    resumed.load_state_dict(state)
    rest = list(resumed)
    assert len(rest) == len(full) - 1
    for b, (_, ref) in zip(rest, full[1:]):
        assert b["mask"].numpy().tobytes() == ref["mask"].tobytes()
        assert [x.numpy().tobytes() for x in b["boxes"]] == [x.tobytes() for x in ref["boxes"]]
    # Ranks: each sample's targets are the same as in the one-rank run.
    by_id = {int(s): (ref["mask"][i], ref["boxes"][i]) for ids, ref in full
             for i, s in enumerate(ids)}
    seen = []
    for rank in range(2):
        part, _ = _run(paths, transforms, shuffle=True, seed=9, rank=rank, world_size=2)
        for ids, b in part:
            for i, s in enumerate(ids):
                seen.append(int(s))
                assert b["mask"][i].tobytes() == by_id[int(s)][0].tobytes()
                assert b["boxes"][i].tobytes() == by_id[int(s)][1].tobytes()
    assert sorted(set(seen)) == list(range(N))
    # collate="pad": boxes [B, max N, 4] padded, with their counts.
    padded, _ = _run(paths, transforms, shuffle=True, seed=9, collate="pad", pad_value=-1)
    for (ids, b), (_, ref) in zip(padded, full):
        lengths = b["boxes_lengths"][:, 0]
        for i in range(len(ids)):
            np.testing.assert_array_equal(b["boxes"][i, :lengths[i]], ref["boxes"][i])
            assert (b["boxes"][i, lengths[i]:] == -1).all()


def test_loader_target_errors(records, tmp_path):
    d, arrays, paths = records
    np.save(tmp_path / "small.npy", arrays["mask"][:, :40, :60])
    bad = dict(paths, mask=str(tmp_path / "small.npy"))
    loader = stoker.Loader(stoker.Npy(bad), batch_size=2, transforms=[stoker.CenterCrop(16)],
                           targets=TARGETS)
    with pytest.raises(stoker.StokerError, match=r"field 'mask': mask is 40x60 \(HxW\), its "
                                                 r"image 48x64"):
        next(iter(loader))
    with pytest.raises(ValueError, match="'nope' is not a field"):
        stoker.Loader(stoker.Npy(paths), batch_size=2, targets={"nope": "mask"})
    with pytest.raises(ValueError, match=r"targets\['mask'\]\[\"target\"\] must be"):
        stoker.Loader(stoker.Npy(paths), batch_size=2, targets={"mask": "segmentation"})
    with pytest.raises(ValueError, match="boxes are an array \\[N, 4\\]"):
        stoker.Loader(stoker.Npy(paths), batch_size=2, targets={"keypoints": "boxes"})
    with pytest.raises(ValueError, match="\"format\" is for boxes targets"):
        stoker.Loader(stoker.Npy(paths), batch_size=2,
                      targets={"mask": {"target": "mask", "format": "xywh"}})
    with pytest.raises(ValueError, match="min_area_fraction"):
        stoker.Loader(stoker.Npy(paths), batch_size=2,
                      targets={"boxes": {"target": "boxes", "min_area_fraction": 2}})


def test_loader_and_shards_parse_target_declarations_alike(records, tmp_path):
    """Loader(targets=) and Shards(fields={...: {"target": ...}}) share one parser: the same
    message after their own prefix for each bad declaration, and the same rules (the box
    format case-insensitive for both)."""
    from conftest import npy_bytes, write_shards
    _, arrays, paths = records
    pattern = write_shards(str(tmp_path / "p"), 1, 2, lambda i: [
        (f"{i:04d}.png", _png(arrays["image"][i])),
        (f"{i:04d}.boxes.npy", npy_bytes(arrays["boxes"][i])), (f"{i:04d}.cls", b"0")])
    bad = [({"target": "box"}, ValueError,
            r'\["target"\] must be "mask", "boxes", "keypoints" or "per_box", got \'box\''),
           ({"target": "boxes", "format": "xyz"}, ValueError,
            r'\["format"\] must be "xyxy", "xywh" or "cxcywh", got \'xyz\''),
           ({"target": "boxes", "ignore_index": 3}, ValueError,
            r': "ignore_index" is for mask targets, this one is boxes'),
           ({"target": "mask", "ignore_index": 70000}, ValueError,
            r'\["ignore_index"\] must be an int in \[0, 65535\], got 70000'),
           ({"target": "per_box", "follows": 3}, TypeError, r'\["follows"\]: expected a str'),
           ({"format": "xywh"}, ValueError, r': no "target" role')]
    for decl, kind, message in bad:
        with pytest.raises(kind, match=r"^targets\['boxes'\]" + message):
            stoker.Loader(stoker.Npy(paths), batch_size=2, targets={"boxes": decl})
        with pytest.raises(kind, match=r"^Shards: fields\['boxes'\]" + message):
            stoker.Shards(pattern, fields={"image": "png", "label": "cls",
                                           "boxes": dict(decl, ext="boxes.npy")})
    # The box format's case: accepted by both, read as xywh by both.
    upper = stoker.Loader(stoker.Npy(paths), batch_size=2, collate="list",
                          targets={"boxes": {"target": "boxes", "format": "XYWH"}})
    shards = stoker.Shards(pattern, fields={"image": "png", "label": "cls", "boxes": {
        "ext": "boxes.npy", "target": "boxes", "format": "XYWH"}})
    assert shards.targets["boxes"] == {"target": "boxes", "format": "xywh"}
    want = arrays["boxes"][0].astype(np.float64)
    want[:, 2:] += want[:, :2]
    for batch in (next(iter(upper)), next(iter(stoker.Loader(shards, batch_size=2,
                                                             collate="list")))):
        np.testing.assert_allclose(np.asarray(batch["boxes"][0]), want, atol=1e-4)


def _png(a) -> bytes:
    import io
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="PNG")
    return buf.getvalue()


def test_shard_png_masks_and_hdf5_masks_follow(records, tmp_path):
    """A one-channel PNG member read natively, and an HDF5 dataset, as masks."""
    from conftest import npy_bytes, write_shards
    _, arrays, paths = records
    transforms = [stoker.Resize((30, 40)), stoker.RandomVerticalFlip(1.0), stoker.CenterCrop(32)]

    def expect(sid):
        pil = F.vflip(F.resize(Image.fromarray(arrays["mask"][sid]), [30, 40], NEAREST))
        return np.asarray(F.center_crop(F.pad(pil, [0, 1, 0, 1], fill=255), [32, 32]))

    def members(i):
        return [(f"{i:04d}.png", _png(arrays["image"][i])), (f"{i:04d}.mask.png",
                                                             _png(arrays["mask"][i])),
                (f"{i:04d}.boxes.npy", npy_bytes(arrays["boxes"][i])), (f"{i:04d}.cls", b"0")]
    pattern = write_shards(str(tmp_path / "s"), 2, N // 2, members)
    src = stoker.Shards(pattern, fields={"image": "png", "mask": {"ext": "mask.png",
                                                                 "mode": "native"},
                                         "boxes": "boxes.npy", "label": "cls"})
    loader = stoker.Loader(src, batch_size=5, transforms=transforms, return_indices=True,
                           targets={"mask": "mask", "boxes": {"target": "boxes",
                                                              "format": "xywh"}})
    seen = 0
    for batch, ids in loader:
        for i, sid in enumerate(ids.numpy()):
            m = batch["mask"][i]
            np.testing.assert_array_equal(np.asarray(m.numpy() if isinstance(m, torch.Tensor)
                                                     else m).reshape(32, 32), expect(sid))
            assert batch["boxes"][i].shape[1] == 4
            seen += 1
    assert seen == N
    h5py = pytest.importorskip("h5py")
    if not _C.built_with_hdf5():
        pytest.skip("built without HDF5")
    path = str(tmp_path / "r.h5")
    with h5py.File(path, "w") as f:
        f["images"] = arrays["image"]
        f["masks"] = arrays["mask"]
    src = stoker.HDF5(path, fields={"image": "images", "mask": "masks"})
    for batch, ids in stoker.Loader(src, batch_size=5, transforms=transforms,
                                    targets={"mask": "mask"}, return_indices=True):
        assert batch["mask"].shape == (len(ids), 32, 32)
        for i, sid in enumerate(ids.numpy()):
            np.testing.assert_array_equal(batch["mask"][i].numpy(), expect(sid))


def test_jpeg_dct_scaling_and_skip_keep_targets_with_their_image(records, tmp_path):
    """The geometry is in the image's own coordinates: a DCT-scaled, region-decoded JPEG
    gives the targets the same steps as a full decode; a sample whose mask has another size
    is skipped under on_error="skip" with its image."""
    from conftest import write_shards
    _, arrays, _ = records

    def jpeg(a):
        import io
        buf = io.BytesIO()
        Image.fromarray(a).save(buf, format="JPEG", quality=95)
        return buf.getvalue()

    def members(i):
        mask = arrays["mask"][i] if i != 3 else arrays["mask"][i][:40]
        return [(f"{i:04d}.jpg", jpeg(arrays["image"][i])), (f"{i:04d}.png", _png(mask)),
                (f"{i:04d}.cls", b"0")]
    pattern = write_shards(str(tmp_path / "j"), 2, N // 2, members)
    src = stoker.Shards(pattern, fields={"image": "jpg", "mask": {"ext": "png", "mode": "native"},
                                         "label": "cls"})
    transforms = [stoker.RandomResizedCrop(16, scale=(0.8, 1.0)), stoker.RandomHorizontalFlip()]
    runs = {}
    for dct in (False, True):
        loader = stoker.Loader(src, batch_size=3, transforms=transforms, dct_scaling=dct,
                               targets={"mask": "mask"}, on_error="skip", seed=3,
                               dtype="uint8", layout="NHWC", return_indices=True)
        got = {}
        for batch, ids in loader:
            for i, sid in enumerate(ids.numpy()):
                m = np.asarray(batch["mask"][i]).reshape(16, 16)
                img = batch["image"][i].numpy()[..., 0].astype(int)
                assert np.corrcoef(img.ravel(), m.ravel())[0, 1] > 0.9, (dct, sid)
                got[int(sid)] = m.tobytes()
        assert loader.stats()["skipped"] == 1
        runs[dct] = got
    assert sorted(runs[True]) == [i for i in range(N) if i != 3]
    assert runs[True] == runs[False]
    # The decoded cache serves the decoded image (a miss, then hits): the same targets.
    epochs = {}
    for cache in (None, "decoded"):
        loader = stoker.Loader(src, batch_size=3, transforms=transforms, dct_scaling=False,
                               targets={"mask": "mask"}, on_error="skip", seed=3, cache=cache,
                               cache_bytes=64 << 20 if cache else None, return_indices=True)
        epochs[cache] = [{int(s): np.asarray(b["mask"][i]).tobytes()
                          for b, ids in loader for i, s in enumerate(ids.numpy())}
                         for _ in range(2)]
    assert epochs["decoded"] == epochs[None]
    assert epochs[None][0] != epochs[None][1]  # each epoch its own draw


def test_detection_targets_for_torchvision_models(records):
    _, arrays, paths = records
    transforms = [stoker.RandomResizedCrop(24), stoker.RandomHorizontalFlip()]
    for collate in ("batch", "pad"):
        loader = stoker.Loader(stoker.Npy(paths), batch_size=4, transforms=transforms,
                               targets=TARGETS, seed=2, collate=collate, pad_value=-1)
        batch = next(iter(loader))
        targets = stoker.detection_targets(batch, keypoints="keypoints")
        assert len(targets) == 4
        ref, _ = _run(paths, transforms, seed=2)
        for i, t in enumerate(targets):
            assert set(t) == {"boxes", "labels", "keypoints"}
            assert t["boxes"].dtype == torch.float32 and t["labels"].dtype == torch.int64
            np.testing.assert_array_equal(t["boxes"].numpy(), ref[0][1]["boxes"][i])
            np.testing.assert_array_equal(t["labels"].numpy(), ref[0][1]["labels"][i])
    with pytest.raises(KeyError, match="no field 'nope'"):
        stoker.detection_targets(batch, labels="nope")
