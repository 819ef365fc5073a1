"""The detection crops: RandomIoUCrop and RandomZoomOut, torchvision.transforms.v2's.

torchvision here is 0.14, which has no v2: its documented maths is written out below as the
reference.
- RandomIoUCrop._get_params: per option (an option >= 1: no crop), up to `trials` draws of
  new_w = int(W * r0), new_h = int(H * r1) (r in [min_scale, max_scale]), the aspect
  new_w / new_h in [min_aspect_ratio, max_aspect_ratio], left = int((W - new_w) * u0),
  top = int((H - new_h) * u1); kept when some box's centre is strictly inside
  (left < cx < right, top < cy < bottom) and box_iou of those boxes with the crop reaches the
  option. _transform: F.crop on every input; the boxes whose centre was outside are zeroed,
  i.e. removed by SanitizeBoundingBoxes (stoker removes them and counts them).
- RandomZoomOut._get_params: r in side_range, canvas (int(W * r), int(H * r)),
  left = int((cw - W) * u0), top = int((ch - H) * u1), F.pad(left, top, right, bottom) with
  `fill` (masks: stoker pads with the mask's ignore_index, 255, as for every padding).
- boxes through a crop: shift, clamp to the crop; through a pad: shift; keypoints the same,
  visibility 0 once outside.
Image pixels are compared with F.crop / F.pad on the PIL image, masks with the same ops on the
PIL mask (NEAREST: crops and pads never resample). Boxes and keypoints within 1e-4 px.
The engine's draw: _C._follow_targets (its PlanGeometry for Rng(seed)); in the loader the
draw is read back from the output (the images encode their pixels' coordinates).
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
import torchvision.transforms.functional as F
from PIL import Image

import stoker
from stoker import _C

W, H = 64, 48
OPTIONS = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 2.0]


def box_iou(b, crop):
    """torchvision.ops.box_iou of boxes b [n, 4] with one box."""
    l, t, r, bt = crop
    iw = (np.minimum(b[:, 2], r) - np.maximum(b[:, 0], l)).clip(0)
    ih = (np.minimum(b[:, 3], bt) - np.maximum(b[:, 1], t)).clip(0)
    inter = iw * ih
    return inter / ((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) + (r - l) * (bt - t) - inter)


def centres_inside(b, crop):
    l, t, r, bt = crop
    cx, cy = (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2
    return (l < cx) & (cx < r) & (t < cy) & (cy < bt)


def reference(steps, mask, boxes, kps, image=None, fill=(0, 0, 0)):
    """v2's maths on the drawn steps (crops, pads as out-of-image crops, resizes, flips) with
    F.crop / F.pad / F.resize / F.hflip; also checks each IoU crop's own constraints."""
    pil = Image.fromarray(mask)
    img = None if image is None else Image.fromarray(image)
    b = boxes.astype(np.float64).copy()
    alive = np.ones(len(b), bool)
    kp = kps.astype(np.float64).copy()
    vis = np.ones(len(kp))
    iou_crops = []
    for s in steps:
        kind, in_w, in_h, out_w, out_h, x, y, cw, ch = (int(v) for v in s[:9])
        if kind == 0:
            if s[23] == 1:  # RandomIoUCrop's: inside the grid, boxes' centres decide
                assert 0 <= x and 0 <= y and x + cw <= in_w and y + ch <= in_h
                crop = (x, y, x + cw, y + ch)
                inside = centres_inside(b, crop) & alive
                iou_crops.append((crop, b[inside].copy(), in_w, in_h))
                alive &= inside
            pl, pt = max(0, -x), max(0, -y)
            pr, pb = max(0, x + cw - in_w), max(0, y + ch - in_h)
            if pl + pt + pr + pb:
                pil = F.pad(pil, [pl, pt, pr, pb], fill=255)
                if img is not None:
                    img = F.pad(img, [pl, pt, pr, pb], fill=fill)
            pil = F.crop(pil, y + pt, x + pl, ch, cw)
            if img is not None:
                img = F.crop(img, y + pt, x + pl, ch, cw)
            b -= [x, y, x, y]
            b[:, 0::2] = b[:, 0::2].clip(0, cw)
            b[:, 1::2] = b[:, 1::2].clip(0, ch)
            kp -= [x, y]
            vis[~((kp[:, 0] >= 0) & (kp[:, 0] <= cw) & (kp[:, 1] >= 0) & (kp[:, 1] <= ch))] = 0
        elif kind == 1:
            pil = F.resize(pil, [out_h, out_w], F.InterpolationMode.NEAREST)
            sx, sy = out_w / in_w, out_h / in_h
            b *= [sx, sy, sx, sy]
            kp *= [sx, sy]
        elif kind == 2:
            pil = F.hflip(pil)
            if img is not None:
                img = F.hflip(img)
            b[:, [0, 2]] = in_w - b[:, [2, 0]]
            kp[:, 0] = in_w - kp[:, 0]
        else:
            raise AssertionError(f"unexpected step kind {kind}")
    out_w, out_h = pil.size
    b[:, 0::2] = b[:, 0::2].clip(0, out_w)
    b[:, 1::2] = b[:, 1::2].clip(0, out_h)
    vis[~((kp[:, 0] >= 0) & (kp[:, 0] <= out_w) & (kp[:, 1] >= 0) & (kp[:, 1] <= out_h))] = 0
    bw, bh = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    keep = alive & (bw >= 1) & (bh >= 1)
    return (np.asarray(pil), None if img is None else np.asarray(img), b[keep], keep,
            np.column_stack([kp, vis]), iou_crops)


def sample_targets(seed):
    rng = np.random.default_rng(seed)
    mask = rng.integers(0, 21, (H, W)).astype(np.uint8)
    x1 = rng.uniform(-4, W - 10, 10)
    y1 = rng.uniform(-4, H - 10, 10)
    boxes = np.column_stack([x1, y1, x1 + rng.uniform(2, 30, 10), y1 + rng.uniform(2, 24, 10)])
    kps = np.column_stack([rng.uniform(0, W, 7), rng.uniform(0, H, 7)])
    return mask, boxes, kps


CASES = {
    "IoUCrop": ([stoker.RandomIoUCrop()], None),
    "IoUCropHalf": ([stoker.RandomIoUCrop(sampler_options=[0.5])], 0.5),
    "IoUCropStrict": ([stoker.RandomIoUCrop(min_scale=0.5, sampler_options=[0.7],
                                            trials=60)], 0.7),
    "ZoomOut": ([stoker.RandomZoomOut(side_range=(1.0, 3.0), p=1.0)], None),
    "ZoomOutThenIoUCrop": ([stoker.RandomZoomOut(p=1.0),
                            stoker.RandomIoUCrop(sampler_options=[0.3])], 0.3),
    "FlipIoUCropResize": ([stoker.RandomHorizontalFlip(1.0),
                           stoker.RandomIoUCrop(sampler_options=[0.1]), stoker.Resize((30, 40))],
                          0.1),
    "IoUCropTwice": ([stoker.RandomIoUCrop(sampler_options=[0.0]),
                      stoker.RandomIoUCrop(sampler_options=[0.0])], 0.0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_draws_match_v2s_maths(name):
    transforms, min_iou = CASES[name]
    crops = removed = 0
    for seed in range(12):
        mask, boxes, kps = sample_targets(seed)
        steps, got_mask, got_boxes, got_keep, got_kps = _C._follow_targets(
            transforms, W, H, seed, mask=mask, boxes=boxes, keypoints=kps)
        ref_mask, _, ref_boxes, ref_keep, ref_kps, iou_crops = reference(steps, mask, boxes, kps)
        np.testing.assert_array_equal(got_mask, ref_mask, err_msg=f"{name} seed {seed}")
        np.testing.assert_array_equal(got_keep.astype(bool), ref_keep, err_msg=f"{name} {seed}")
        np.testing.assert_allclose(got_boxes, ref_boxes, atol=1e-4, rtol=0)
        np.testing.assert_allclose(got_kps, ref_kps, atol=1e-4, rtol=0)
        for (l, t, r, b), within, in_w, in_h in iou_crops:
            crops += 1
            # v2's draw: sizes int(W * scale), aspect in range, some centre inside, IoU.
            assert len(within) > 0
            assert int(in_w * 0.3) <= r - l <= in_w and int(in_h * 0.3) <= b - t <= in_h
            assert 0.5 <= (r - l) / (b - t) <= 2.0
            if min_iou is not None:
                assert box_iou(within, (l, t, r, b)).max() >= min_iou - 1e-12, (name, seed)
        removed += int((~ref_keep).sum())
    if any(t.name == "RandomIoUCrop" for t in transforms):
        assert crops > 0, name
    assert removed > 0 or name.startswith("ZoomOut"), name


def test_iou_crop_removes_boxes_whose_centre_is_outside():
    """The boxes a plain crop of the same rectangle would keep, but whose centres fall
    outside, are removed (v2 zeroes them; SanitizeBoundingBoxes drops them)."""
    dropped = 0
    for seed in range(20):
        mask, boxes, kps = sample_targets(seed)
        t = [stoker.RandomIoUCrop(sampler_options=[0.0])]
        steps, _, _, keep, _ = _C._follow_targets(t, W, H, seed, boxes=boxes)
        if not len(steps):
            continue
        x, y, cw, ch = (int(v) for v in steps[0][5:9])
        b = boxes - [x, y, x, y]
        b[:, 0::2] = b[:, 0::2].clip(0, cw)
        b[:, 1::2] = b[:, 1::2].clip(0, ch)
        plain_keep = ((b[:, 2] - b[:, 0]) >= 1) & ((b[:, 3] - b[:, 1]) >= 1)
        inside = centres_inside(boxes, (x, y, x + cw, y + ch))
        np.testing.assert_array_equal(keep.astype(bool), plain_keep & inside)
        dropped += int((plain_keep & ~inside).sum())
    assert dropped > 0


def test_iou_crop_is_bounded_and_leaves_boxless_samples_whole():
    mask, boxes, kps = sample_targets(0)
    # No boxes: no crop (v2 would end on its no-crop option).
    steps, got_mask, *_ = _C._follow_targets([stoker.RandomIoUCrop()], W, H, 1, mask=mask,
                                             boxes=np.zeros((0, 4)))
    assert len(steps) == 0 and got_mask.tobytes() == mask.tobytes()
    # An option no crop reaches and no option >= 1: v2 loops forever; stoker stops.
    whole = np.array([[0.0, 0.0, W, H]])
    t = stoker.RandomIoUCrop(min_scale=0.05, max_scale=0.1, sampler_options=[0.95], trials=3)
    steps, _, got, keep, _ = _C._follow_targets([t], W, H, 1, boxes=whole)
    assert len(steps) == 0 and keep.all()


# ------------------------------------------------------------------------- the loader --

N = 12


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """Images whose pixel (y, x) is (x, y, 77): the output says where it came from."""
    d = tmp_path_factory.mktemp("detcrops")
    rng = np.random.default_rng(5)
    yy, xx = np.mgrid[0:H, 0:W]
    base = np.stack([xx, yy, np.full_like(xx, 77)], axis=2).astype(np.uint8)
    images = np.repeat(base[None], N, axis=0)
    masks = rng.integers(0, 20, (N, H // 4, W // 4)).astype(np.uint8).repeat(4, 1).repeat(4, 2)
    boxes = np.zeros((N, 5, 4), np.float32)
    for i in range(N):  # xywh
        x, y = rng.uniform(0, W - 20, 5), rng.uniform(0, H - 16, 5)
        boxes[i] = np.column_stack([x, y, rng.uniform(4, 20, 5), rng.uniform(4, 16, 5)])
    labels = np.arange(N * 5, dtype=np.int64).reshape(N, 5)
    kps = rng.uniform(0, W - 1, (N, 4, 2)).astype(np.float32)
    arrays = {"image": images, "mask": masks, "boxes": boxes, "labels": labels,
              "keypoints": kps}
    from conftest import save_npy_fields
    paths = save_npy_fields(d, arrays)
    return arrays, paths


TARGETS = {"mask": "mask", "boxes": {"target": "boxes", "format": "xywh"},
           "labels": "per_box", "keypoints": "keypoints"}


def _np(v):
    return v.numpy().copy() if isinstance(v, torch.Tensor) else np.asarray(v).copy()


def _run(paths, transforms, **kw):
    loader = stoker.Loader(stoker.Npy(paths), batch_size=5, transforms=transforms,
                           targets=TARGETS, dtype="uint8", layout="NHWC", return_indices=True,
                           collate="list", **kw)
    out = {}
    for batch, ids in loader:
        for i, s in enumerate(ids.numpy()):
            out[int(s)] = {k: _np(v[i]) for k, v in batch.items()}
    return out, loader


def _xyxy(b):
    return np.column_stack([b[:, :2], b[:, :2] + b[:, 2:]]).astype(np.float64)


def test_loader_iou_crop_equals_torchvision_and_threads_agree(records):
    arrays, paths = records
    t = [stoker.RandomIoUCrop(sampler_options=[0.5])]
    one, loader = _run(paths, t, threads=1, shuffle=True, seed=3)
    three, _ = _run(paths, t, threads=3, shuffle=True, seed=3)
    assert sorted(one) == list(range(N))
    removed = cropped = 0
    for sid, got in one.items():
        for k in got:
            assert got[k].tobytes() == three[sid][k].tobytes(), (sid, k)
        img = got["image"]
        h, w = img.shape[:2]
        left, top = int(img[0, 0, 0]), int(img[0, 0, 1])  # the draw, read back
        src = Image.fromarray(arrays["image"][sid])
        np.testing.assert_array_equal(img, np.asarray(F.crop(src, top, left, h, w)))
        np.testing.assert_array_equal(
            got["mask"].reshape(h, w),
            np.asarray(F.crop(Image.fromarray(arrays["mask"][sid]), top, left, h, w)))
        boxes = _xyxy(arrays["boxes"][sid])
        crop = (left, top, left + w, top + h)
        inside = centres_inside(boxes, crop)
        if (w, h) != (W, H):
            cropped += 1
            # the IoU constraint, on what came out: a kept box's source reaches 0.5
            assert inside.any() and box_iou(boxes[inside], crop).max() >= 0.5
        else:
            inside[:] = True  # uncropped (the bounded fallback): nothing removed by centres
        b = boxes - [left, top, left, top]
        b[:, 0::2] = b[:, 0::2].clip(0, w)
        b[:, 1::2] = b[:, 1::2].clip(0, h)
        keep = inside & (b[:, 2] - b[:, 0] >= 1) & (b[:, 3] - b[:, 1] >= 1)
        np.testing.assert_allclose(got["boxes"], b[keep], atol=1e-4, rtol=0)
        np.testing.assert_array_equal(got["labels"], arrays["labels"][sid][keep])
        kp = arrays["keypoints"][sid].astype(np.float64) - [left, top]
        vis = ((kp[:, 0] >= 0) & (kp[:, 0] <= w) & (kp[:, 1] >= 0) & (kp[:, 1] <= h))
        np.testing.assert_allclose(got["keypoints"][:, :2], kp, atol=1e-4, rtol=0)
        np.testing.assert_array_equal(got["keypoints"][:, 2], vis.astype(np.float32))
        removed += int((~keep).sum())
    # Samples whose boxes are all too small for an IoU of 0.5 with a crop of >= 0.3 a side
    # stay whole (the bounded fallback); the others are cropped.
    assert cropped >= N // 3
    assert loader.stats()["boxes_removed"] == removed > 0


def test_loader_zoom_out_equals_torchvision(records):
    arrays, paths = records
    fill = (1, 2, 250)
    t = [stoker.RandomZoomOut(fill=fill, side_range=(1.0, 2.5), p=0.7)]
    one, _ = _run(paths, t, threads=1, seed=8)
    three, _ = _run(paths, t, threads=3, seed=8)
    zoomed = 0
    for sid, got in one.items():
        for k in got:
            assert got[k].tobytes() == three[sid][k].tobytes(), (sid, k)
        img = got["image"]
        ch, cw = img.shape[:2]
        ys, xs = np.nonzero(img[..., 2] == 77)
        top, left = int(ys.min()), int(xs.min())
        pad = [left, top, cw - left - W, ch - top - H]
        zoomed += (cw, ch) != (W, H)
        # v2's canvas: (int(W * r), int(H * r)) for one r in side_range
        r_lo, r_hi = max(cw / W, ch / H), min((cw + 1) / W, (ch + 1) / H)
        assert r_lo < r_hi and 1.0 <= r_lo and r_hi > 1.0 and r_lo <= 2.5, (sid, cw, ch)
        src = Image.fromarray(arrays["image"][sid])
        np.testing.assert_array_equal(img, np.asarray(F.pad(src, pad, fill=fill)))
        np.testing.assert_array_equal(
            got["mask"].reshape(ch, cw),
            np.asarray(F.pad(Image.fromarray(arrays["mask"][sid]), pad, fill=255)))
        b = _xyxy(arrays["boxes"][sid]) + [left, top, left, top]
        np.testing.assert_allclose(got["boxes"], b, atol=1e-4, rtol=0)
        kp = arrays["keypoints"][sid] + np.array([left, top], np.float32)
        np.testing.assert_allclose(got["keypoints"][:, :2], kp, atol=1e-4, rtol=0)
    assert 0 < zoomed < N  # p = 0.7: some zoomed, some not


def test_loader_resume_and_ranks(records):
    _, paths = records
    t = [stoker.RandomZoomOut(p=0.5), stoker.RandomIoUCrop(), stoker.RandomHorizontalFlip(),
         stoker.Resize((24, 32))]
    kw = dict(targets=TARGETS, dtype="uint8", layout="NHWC", shuffle=True, seed=9)
    full, _ = _run(paths, t, shuffle=True, seed=9)
    loader = stoker.Loader(stoker.Npy(paths), batch_size=5, transforms=t, return_indices=True,
                           **kw)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    del it
    resumed = stoker.Loader(stoker.Npy(paths), batch_size=5, transforms=t, return_indices=True,
                            **kw)
    resumed.load_state_dict(state)
    seen = 0
    for batch, ids in resumed:
        for i, s in enumerate(ids.numpy()):
            seen += 1
            assert batch["mask"][i].numpy().tobytes() == full[int(s)]["mask"].tobytes()
            assert batch["boxes"][i].numpy().tobytes() == full[int(s)]["boxes"].tobytes()
            assert batch["image"][i].numpy().tobytes() == full[int(s)]["image"].tobytes()
    assert seen == N - 5
    ranks = {}
    for rank in range(2):
        part, _ = _run(paths, t, shuffle=True, seed=9, rank=rank, world_size=2)
        ranks.update(part)
        for s, got in part.items():
            for k in got:
                assert got[k].tobytes() == full[s][k].tobytes(), (rank, s, k)
    assert sorted(ranks) == list(range(N))


def test_iou_crop_needs_boxes(records, tmp_path):
    arrays, paths = records
    with pytest.raises(ValueError, match=r"RandomIoUCrop.*boxes target"):
        stoker.Loader(stoker.Npy(paths), batch_size=2, transforms=[stoker.RandomIoUCrop()],
                      targets={"mask": "mask"})
    d = tmp_path / "cls" / "a"
    d.mkdir(parents=True)
    Image.fromarray(arrays["image"][0]).save(d / "x.png")
    with pytest.raises(ValueError, match=r"RandomIoUCrop.*boxes target"):
        stoker.Loader(stoker.ImageFolder(str(tmp_path / "cls")), batch_size=1,
                      transforms=[stoker.RandomIoUCrop()], collate="list")
    # A field step rewriting the boxes would change them after the crop was drawn.
    with pytest.raises(ValueError, match=r"rewrites 'boxes'"):
        stoker.Loader(stoker.Npy(paths), batch_size=2, targets=TARGETS, collate="list",
                      transforms=[stoker.RandomIoUCrop(),
                                  stoker.Lambda(lambda d: d, fields=["boxes"])])
    with pytest.raises(ValueError, match="side_range"):
        stoker.RandomZoomOut(side_range=(0.5, 2.0))
    with pytest.raises(ValueError, match="max_scale"):
        stoker.RandomIoUCrop(min_scale=0.9, max_scale=0.5)
    with pytest.raises(TypeError, match="sampler_options"):
        stoker.RandomIoUCrop(sampler_options="all")


def test_region_decoded_jpeg_lands_with_its_targets(records, tmp_path):
    """A JPEG's IoU crop is decoded as a region: its pixels are the full decode's pixels of
    the crop, and the keypoints/boxes moved by the same offset."""
    from conftest import npy_bytes, write_shards
    arrays, _ = records
    rng = np.random.default_rng(2)
    photo = rng.integers(0, 255, (N, 96, 128, 3)).astype(np.uint8)
    photo = np.asarray(Image.fromarray(photo.reshape(-1, 128, 3)).resize((64, 48 * N)).resize(
        (128, 96 * N))).reshape(N, 96, 128, 3)

    def jpeg(a):
        buf = io.BytesIO()
        Image.fromarray(a).save(buf, format="JPEG", quality=90)
        return buf.getvalue()
    jpegs = [jpeg(photo[i]) for i in range(N)]
    boxes = [np.array([[20, 10, 60, 50], [70, 40, 40, 30], [5, 60, 30, 30]], np.float32)
             for _ in range(N)]
    probe = np.array([[0.5, 0.5]], np.float32)  # the crop's offset, read back (0.5 - kp)

    def members(i):
        return [(f"{i:04d}.jpg", jpegs[i]), (f"{i:04d}.boxes.npy", npy_bytes(boxes[i])),
                (f"{i:04d}.kp.npy", npy_bytes(probe)), (f"{i:04d}.cls", b"0")]
    pattern = write_shards(str(tmp_path / "j"), 2, N // 2, members)
    src = stoker.Shards(pattern, fields={"image": "jpg", "boxes": "boxes.npy",
                                         "kp": "kp.npy", "label": "cls"})
    loader = stoker.Loader(src, batch_size=4, transforms=[stoker.RandomIoUCrop()],
                           targets={"boxes": {"target": "boxes", "format": "xywh"},
                                    "kp": "keypoints"},
                           dtype="uint8", layout="NHWC", collate="list", return_indices=True,
                           seed=1)
    cropped = 0
    for batch, ids in loader:
        for i, s in enumerate(ids.numpy()):
            img = _np(batch["image"][i])
            h, w = img.shape[:2]
            kp = _np(batch["kp"][i])
            left, top = int(round(0.5 - kp[0, 0])), int(round(0.5 - kp[0, 1]))
            full = Image.open(io.BytesIO(jpegs[int(s)])).convert("RGB")
            np.testing.assert_array_equal(img, np.asarray(F.crop(full, top, left, h, w)))
            cropped += (w, h) != (128, 96)
    assert cropped > 0
