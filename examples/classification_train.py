"""torchvision's references/classification/train.py ("new recipe" flags), migrated to
stoker (docs/migrating.md).

The recipe's data side: RandomResizedCrop, RandomHorizontalFlip, TrivialAugmentWide with
BILINEAR, Normalize, RandomErasing, and per batch a random choice of MixUp and CutMix;
label smoothing in the loss. All of it runs in stoker: the per-sample transforms on
native threads, the batch choice as the loader's batch_transform, whose random state is
in the loader's state_dict(), so --resume continues exactly. Shortened to the data
pipeline, the loop and the checkpoint; --max-steps for smoke runs.

    torchrun --nproc_per_node 8 examples/classification_train.py --data-path DATA \\
        --auto-augment ta_wide --random-erase 0.1 --mixup-alpha 0.2 --cutmix-alpha 1.0 \\
        --label-smoothing 0.1
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
import torchvision
from torchvision.transforms import InterpolationMode

import stoker

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def get_args_parser():
    p = argparse.ArgumentParser(description="Classification training with stoker")
    p.add_argument("--data-path", required=True)
    p.add_argument("--model", default="resnet50")
    p.add_argument("-b", "--batch-size", default=32, type=int)
    p.add_argument("--epochs", default=90, type=int)
    p.add_argument("-j", "--workers", default=16, type=int)
    p.add_argument("--lr", default=0.1, type=float)
    p.add_argument("--label-smoothing", default=0.0, type=float)
    p.add_argument("--mixup-alpha", default=0.0, type=float)
    p.add_argument("--cutmix-alpha", default=0.0, type=float)
    p.add_argument("--auto-augment", default=None)
    p.add_argument("--random-erase", default=0.0, type=float)
    p.add_argument("--train-crop-size", default=224, type=int)
    p.add_argument("--val-resize-size", default=256, type=int)
    p.add_argument("--val-crop-size", default=224, type=int)
    p.add_argument("--output-dir", default=".")
    p.add_argument("--resume", default="")
    p.add_argument("--test-only", action="store_true")
    p.add_argument("--max-steps", default=0, type=int, help="stop after N steps in all")
    return p


def train_transforms(args):
    # presets.ClassificationPresetTrain
    t = [stoker.RandomResizedCrop(args.train_crop_size), stoker.RandomHorizontalFlip()]
    policies = {"ta_wide": stoker.TrivialAugmentWide, "ra": stoker.RandAugment,
                "imagenet": stoker.AutoAugment}
    if args.auto_augment:
        t.append(policies[args.auto_augment](interpolation=InterpolationMode.BILINEAR))
    t.append(stoker.Normalize(MEAN, STD))
    if args.random_erase > 0:
        t.append(stoker.RandomErasing(p=args.random_erase))
    return t


def batch_transform(args, num_classes):
    # Before: RandomChoice([RandomMixup(...), RandomCutmix(...)]) in a collate_fn.
    mixes = []
    if args.mixup_alpha > 0:
        mixes.append(stoker.MixUp(alpha=args.mixup_alpha, num_classes=num_classes))
    if args.cutmix_alpha > 0:
        mixes.append(stoker.CutMix(alpha=args.cutmix_alpha, num_classes=num_classes))
    return stoker.RandomChoice(mixes) if mixes else None


def main(args):
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")
    train_source = stoker.ImageFolder(os.path.join(args.data_path, "train"))
    num_classes = len(train_source.classes)
    data_loader = stoker.Loader(
        train_source, batch_size=args.batch_size, shuffle=True, threads=args.workers,
        transforms=train_transforms(args), batch_transform=batch_transform(args, num_classes))
    data_loader_test = stoker.Loader(
        stoker.ImageFolder(os.path.join(args.data_path, "val")), batch_size=args.batch_size,
        threads=args.workers, rank_tail="uneven", drop_last=False,
        transforms=[stoker.Resize(args.val_resize_size), stoker.CenterCrop(args.val_crop_size),
                    stoker.Normalize(MEAN, STD)])

    torch.manual_seed(0)  # the same initial weights on every rank
    model = torchvision.models.__dict__[args.model](num_classes=num_classes)
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    criterion = torch.nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=2e-5)

    start_epoch, steps = 0, 0
    if args.resume:
        checkpoint = torch.load(args.resume)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        data_loader.load_state_dict(checkpoint["data"])
        start_epoch, steps = checkpoint["epoch"], checkpoint["steps"]
    if args.test_only:
        evaluate(model, criterion, data_loader_test, distributed)
        return
    for epoch in range(start_epoch, args.epochs):
        data_loader.set_epoch(epoch)  # was: train_sampler.set_epoch(epoch)
        model.train()
        for images, target in data_loader:  # target: soft labels when mixing
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
            # len(): the whole epoch's batches, also after a resume; batches_left: the rest.
            print(f"Epoch: [{epoch}] step {steps} ({len(data_loader)} batches, "
                  f"{data_loader.batches_left} left) loss {loss.item():.6f}", flush=True)
            if args.max_steps and steps >= args.max_steps:
                break
        evaluate(model, criterion, data_loader_test, distributed)
        if not distributed or dist.get_rank() == 0:
            # A mid-epoch checkpoint (after --max-steps) resumes at the next batch.
            data = data_loader.state_dict()  # its epoch: this one, or the next at its start
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "data": data, "epoch": data["epoch"], "steps": steps},
                       os.path.join(args.output_dir, "checkpoint.pth"))
        if args.max_steps and steps >= args.max_steps:
            break
    if distributed:
        # DistributedDataParallel's Reducer must not hold the last reference to the
        # process group: freed with the model, it joins gloo's threads while holding
        # the GIL, and hangs if one of them is freeing a tensor (seen with torch 1.13).
        del model
        dist.destroy_process_group()


def evaluate(model, criterion, data_loader, distributed):
    model.eval()
    totals = torch.zeros(3, dtype=torch.float64)
    with torch.inference_mode():
        for images, target in data_loader:
            output = model(images)
            totals += torch.tensor([criterion(output, target).item() * len(target),
                                    (output.argmax(1) == target).sum().item(), len(target)],
                                   dtype=torch.float64)
    if distributed:
        dist.all_reduce(totals)
    print(f"Test: Acc@1 {100 * totals[1] / totals[2]:.3f} loss {totals[0] / totals[2]:.4f} "
          f"samples {int(totals[2])}", flush=True)


if __name__ == "__main__":
    main(get_args_parser().parse_args())
