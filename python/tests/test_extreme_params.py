"""Extreme transform parameters: values torch itself
cannot draw (sigma=inf, degrees=+-1e308, ratio=1e300) must neither crash, spin nor
black out the images. GaussianBlur(sigma=inf) is torchvision's box blur and a sigma
too small for float32 the identity; a rotation angle float32 cannot hold is reduced
modulo 360 first, as Image.rotate reduces every angle; RandomErasing whose rectangle
cannot be a finite size makes torchvision's 10 attempts and leaves the image."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest
import torch
import torchvision.transforms.functional as F
from PIL import Image

import stoker
from conftest import collect, photo, run_child

H, W, N = 24, 32, 12
INF = float("inf")


@pytest.fixture(scope="module")
def npy_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("extreme")
    np.save(d / "x.npy", np.stack([photo(W, H, s) for s in range(N)]))
    np.save(d / "y.npy", np.zeros(N, np.int64))
    return d


def images(d, transforms):
    """[N, 3, H, W] uint8 through the loader, in order."""
    src = stoker.Npy(images=str(d / "x.npy"), labels=str(d / "y.npy"))
    loader = stoker.Loader(src, batch_size=4, dtype="uint8", shuffle=False,
                           transforms=[stoker.Resize((H, W))] + transforms)
    return collect(loader, indexed=False)[0]


def test_gaussian_blur_infinite_sigma_is_the_box_blur_and_a_tiny_one_the_identity(npy_dir):
    plain = images(npy_dir, [])
    for sigma in (INF, 1e300):
        out = images(npy_dir, [stoker.GaussianBlur(3, sigma=sigma)])
        # torchvision's tensor path with sigma = inf: every tap weighs 1/3.
        ref = F.gaussian_blur(plain, [3, 3], [INF, INF])
        diff = (ref.int() - out.int()).abs()
        assert diff.max() <= 1 and (diff == 0).float().mean() > 0.99, sigma
        assert (out.int() - plain.int()).abs().max() > 1  # it blurs (was: all black)
    for sigma in (1e-320, 1e-45):
        out = images(npy_dir, [stoker.GaussianBlur(3, sigma=sigma)])
        assert torch.equal(out, plain), sigma  # the identity (was: all black)


def test_rotation_by_a_huge_angle_is_the_angle_modulo_360(npy_dir):
    plain = images(npy_dir, [])
    out = images(npy_dir, [stoker.RandomRotation((1e308, 1e308))])
    angle = float(np.float32(math.fmod(1e308, 360.0)))
    for k in range(N):
        src = Image.fromarray(plain[k].permute(1, 2, 0).numpy())
        want = torch.from_numpy(np.array(F.rotate(src, angle))).permute(2, 0, 1)
        assert torch.equal(out[k], want), k
    drawn = images(npy_dir, [stoker.RandomRotation((-1e308, 1e308))])
    lit = (drawn != 0).flatten(1).float().mean(1)
    assert (lit > 0.4).all(), lit  # was: every image black


def test_random_erasing_that_cannot_fit_leaves_the_image_and_never_hangs(npy_dir, tmp_path):
    # In a child under a timeout: ratio inf used to SIGSEGV and 1e300 to spin
    # with SIGINT ignored. Non-finite values may be refused at construction
    # (ValueError); whatever is accepted must give the unchanged images.
    code = textwrap.dedent(f"""
        import numpy as np, stoker
        d = {str(npy_dir)!r}
        def run(extra):
            src = stoker.Npy(images=d + "/x.npy", labels=d + "/y.npy")
            loader = stoker.Loader(src, batch_size=4, dtype="uint8", shuffle=False,
                                   transforms=[stoker.Resize(({H}, {W}))] + extra)
            return np.concatenate([x.numpy() for x, _ in loader])
        plain = run([])
        for ratio in [(1e300, 1e300), (float("inf"), float("inf")), (1e-300, 1e-300)]:
            try:
                t = stoker.RandomErasing(p=1.0, scale=(1.0, 1.0), ratio=ratio)
            except ValueError:
                print("refused", ratio)
                continue
            assert (run([t]) == plain).all(), ratio
            print("unchanged", ratio)
        # An erasing that fits still erases.
        assert (run([stoker.RandomErasing(p=1.0, scale=(0.1, 0.2))]) != plain).any()
        print("done")
    """)
    out = run_child(code)
    assert "unchanged (1e+300, 1e+300)" in out  # finite: accepted, and left alone
