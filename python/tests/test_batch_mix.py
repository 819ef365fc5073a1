"""MixUp / CutMix (torchvision.transforms.v2 semantics) on batches.

Checks: soft labels sum to 1 and put lam / 1 - lam on the right classes; lam follows
Beta(alpha, alpha) (two-sample KS against torch.distributions.Beta over 10,000 draws);
CutMix pastes exactly the box from the rolled batch, its area matches 1 - lam_adjusted,
and matches 1 - lam when the box is not clipped; draws repeat for (seed, epoch, step).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import stoker

N = 10000


def ks_statistic(a, b) -> float:
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / len(a)
    fb = np.searchsorted(b, grid, side="right") / len(b)
    return float(np.max(np.abs(fa - fb)))


def ks_threshold(n: int, m: int, alpha: float = 1e-3) -> float:
    return math.sqrt(-0.5 * math.log(alpha / 2)) * math.sqrt((n + m) / (n * m))


def batch(b=4, h=8, w=10):
    g = torch.Generator().manual_seed(0)
    return torch.rand(b, 3, h, w, generator=g), torch.tensor([0, 1, 2, 1][:b])


def test_mixup_images_and_labels():
    x, y = batch()
    mix = stoker.MixUp(alpha=0.4, num_classes=3, seed=1)
    out, soft = mix(x, y)
    lam = mix.last_lam
    assert torch.allclose(out, lam * x + (1 - lam) * x.roll(1, 0), atol=1e-6)
    assert soft.shape == (4, 3) and soft.dtype == torch.float32
    assert torch.allclose(soft.sum(1), torch.ones(4))
    onehot = torch.nn.functional.one_hot(y, 3).float()
    assert torch.allclose(soft, lam * onehot + (1 - lam) * onehot.roll(1, 0))


@pytest.mark.parametrize("cls,alpha", [(stoker.MixUp, 0.2), (stoker.MixUp, 1.0),
                                       (stoker.CutMix, 1.0)])
def test_lambda_follows_beta(cls, alpha):
    x, y = torch.zeros(2, 3, 4, 4), torch.tensor([0, 1])
    mix = cls(alpha=alpha, num_classes=2, seed=3)
    lams = []
    for _ in range(N):
        if cls is stoker.MixUp:
            mix(x, y)
            lams.append(mix.last_lam)
        else:  # the raw Beta draw: re-derive from a large image where boxes are rarely clipped
            lams.append(float(np.random.default_rng(
                np.random.SeedSequence([3, 0, mix._step, 2])).beta(alpha, alpha)))
            mix._step += 1
    ref = torch.distributions.Beta(alpha, alpha).sample((N,)).double().numpy()
    assert ks_statistic(np.array(lams), ref) < ks_threshold(N, N)


def test_cutmix_box_and_labels():
    x, y = batch(4, 64, 48)
    mix = stoker.CutMix(alpha=1.0, num_classes=3, seed=5)
    unclipped = 0
    for _ in range(300):
        out, soft = mix(x, y)
        x1, y1, x2, y2 = mix.last_box
        rolled = x.roll(1, 0)
        assert torch.equal(out[..., y1:y2, x1:x2], rolled[..., y1:y2, x1:x2])
        mask = torch.ones(64, 48, dtype=torch.bool)
        mask[y1:y2, x1:x2] = False
        assert torch.equal(out[..., mask], x[..., mask])
        lam = mix.last_lam
        assert lam == pytest.approx(1 - (x2 - x1) * (y2 - y1) / (64 * 48))
        assert torch.allclose(soft.sum(1), torch.ones(4))
        onehot = torch.nn.functional.one_hot(y, 3).float()
        assert torch.allclose(soft, lam * onehot + (1 - lam) * onehot.roll(1, 0))
        # Re-draw the raw lam: when the box is inside the image, its area is 1 - lam up to
        # the int() of the half sides.
        raw = float(np.random.default_rng(
            np.random.SeedSequence([5, 0, mix._step - 1, 2])).beta(1.0, 1.0))
        r = 0.5 * math.sqrt(1 - raw)
        if x1 > 0 and y1 > 0 and x2 < 48 and y2 < 64:
            unclipped += 1
            assert (x2 - x1) == 2 * int(r * 48) and (y2 - y1) == 2 * int(r * 64)
            assert abs((1 - lam) - (1 - raw)) < 2 * (1 / 48 + 1 / 64) + 1e-9
    assert unclipped > 10


def test_draws_repeat_per_seed_epoch_and_step():
    x, y = batch()
    a = stoker.CutMix(num_classes=3, seed=9)
    b = stoker.CutMix(num_classes=3, seed=9)
    first = [a(x, y)[0] for _ in range(3)]
    assert all(torch.equal(f, b(x, y)[0]) for f in first)
    a.set_epoch(1)
    assert not torch.equal(a(x, y)[0], first[0]) or not torch.equal(a(x, y)[0], first[1])
    a.set_epoch(0)
    assert torch.equal(a(x, y)[0], first[0])


def test_bad_inputs():
    with pytest.raises(TypeError, match="float"):
        stoker.MixUp(num_classes=3)(torch.zeros(2, 3, 4, 4, dtype=torch.uint8), torch.zeros(2))
    with pytest.raises(ValueError, match="alpha"):
        stoker.CutMix(alpha=0, num_classes=3)


def test_random_choice_picks_with_p():
    mix, cut = stoker.MixUp(alpha=0.2, num_classes=3), stoker.CutMix(alpha=1.0, num_classes=3)
    x, y = batch()
    only_mix = stoker.RandomChoice([mix, cut], p=[1.0, 0.0], seed=4)
    for _ in range(20):
        only_mix(x, y)
        assert only_mix.last_choice == 0
    both = stoker.RandomChoice([mix, cut], p=[0.3, 0.7], seed=4)
    picks = []
    for _ in range(2000):
        out, soft = both(x, y)
        picks.append(both.last_choice)
        assert torch.allclose(soft.sum(1), torch.ones(4))
    frac = np.mean(picks)
    assert abs(frac - 0.7) < 4.5 * math.sqrt(0.21 / 2000)
    with pytest.raises(TypeError, match="MixUp"):
        stoker.RandomChoice([lambda a, b: (a, b)])
    with pytest.raises(ValueError, match="p must be"):
        stoker.RandomChoice([mix, cut], p=[1.0])


def _train(source, *, steps_before_resume=None, epochs=2):
    """Trains a linear model on the loader's mixed batches; returns each step's loss. With
    steps_before_resume, stops after that many steps, checkpoints loader, model and
    optimiser, rebuilds every object from scratch and continues from the checkpoint."""
    def build():
        torch.manual_seed(0)
        model = torch.nn.Linear(3 * 8 * 8, 3)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        mix = stoker.RandomChoice([stoker.MixUp(alpha=0.2, num_classes=3),
                                   stoker.CutMix(alpha=1.0, num_classes=3)], seed=9)
        loader = stoker.Loader(source, batch_size=4, shuffle=True, seed=3, threads=2,
                               transforms=[stoker.CenterCrop(8)], batch_transform=mix)
        return model, opt, loader

    def step(model, opt, images, soft):
        loss = -(soft * torch.log_softmax(model(images.flatten(1)), 1)).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return float(loss)

    model, opt, loader = build()
    losses, saved = [], None
    for epoch in range(epochs):
        for images, soft in loader:
            losses.append(step(model, opt, images, soft))
            if len(losses) == steps_before_resume:
                saved = (loader.state_dict(), model.state_dict(), opt.state_dict())
                break
        if saved is not None:
            break
    if saved is None:
        return losses
    model, opt, loader = build()
    loader.load_state_dict(saved[0])
    model.load_state_dict(saved[1])
    opt.load_state_dict(saved[2])
    start = saved[0]["epoch"]
    for epoch in range(start, epochs):
        for images, soft in loader:
            losses.append(step(model, opt, images, soft))
    return losses


def test_resumed_run_gives_the_same_losses_with_mixup_and_cutmix(tmp_path):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.integers(0, 256, size=(24, 8, 8, 3), dtype=np.uint8))
    np.save(tmp_path / "y.npy", np.arange(24) % 3)
    source = stoker.Npy(images=str(tmp_path / "x.npy"), labels=str(tmp_path / "y.npy"))
    whole = _train(source)
    assert len(whole) == 12
    for k in (1, 4, 6, 9):  # mid-epoch, at an epoch's end, in the second epoch
        resumed = _train(source, steps_before_resume=k)
        assert resumed == whole, k
    # The state holds the batch transform's position.
    loader = stoker.Loader(source, batch_size=4, transforms=[stoker.CenterCrop(8)],
                           batch_transform=stoker.MixUp(num_classes=3))
    it = iter(loader)
    next(it), next(it)
    assert loader.state_dict()["batch_transform"]["step"] == 2
    with pytest.raises(ValueError, match="float"):
        stoker.Loader(source, batch_size=4, dtype="uint8", transforms=[stoker.CenterCrop(8)],
                      batch_transform=stoker.MixUp(num_classes=3))
