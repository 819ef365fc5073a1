"""pytorch/examples' imagenet/main.py, migrated to stoker (docs/migrating.md).

The model, optimiser, loop, checkpoint and validation are the original's; the data
pipeline is stoker's: ImageFolder + Loader instead of datasets.ImageFolder + DataLoader,
the DistributedSampler replaced by the loader's rank options, and distributed validation
with every sample exactly once (rank_tail="uneven"). Shortened: no AMP, no per-GPU
spawning (run it under torchrun for several processes), --max-steps for smoke runs.

    python3 examples/imagenet_main.py DATA -a resnet18 -b 256 -j 8
    torchrun --nproc_per_node 2 examples/imagenet_main.py DATA ...
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist
import torchvision.models as models

import stoker

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="ImageNet training with stoker")
    p.add_argument("data", help="folder with train/ and val/")
    p.add_argument("-a", "--arch", default="resnet18")
    p.add_argument("-j", "--workers", default=4, type=int)
    p.add_argument("--epochs", default=90, type=int)
    p.add_argument("-b", "--batch-size", default=256, type=int)
    p.add_argument("--lr", default=0.1, type=float)
    p.add_argument("--momentum", default=0.9, type=float)
    p.add_argument("--wd", "--weight-decay", default=1e-4, type=float, dest="weight_decay")
    p.add_argument("--crop", default=224, type=int, help="train/val crop size")
    p.add_argument("--resume", default="", help="checkpoint to resume from")
    p.add_argument("--checkpoint", default="checkpoint.pth.tar")
    p.add_argument("-e", "--evaluate", action="store_true")
    p.add_argument("--seed", default=None, type=int)
    p.add_argument("--max-steps", default=0, type=int, help="stop each epoch after N steps")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")
    if args.seed is not None:
        torch.manual_seed(args.seed)  # also the loader's default seed
    model = models.__dict__[args.arch](num_classes=len(
        stoker.ImageFolder(os.path.join(args.data, "train")).classes))
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum,
                                weight_decay=args.weight_decay)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)

    # Before: datasets.ImageFolder(traindir, Compose([...])), DistributedSampler,
    # DataLoader(..., shuffle=(train_sampler is None), num_workers=, pin_memory=True).
    train_loader = stoker.Loader(
        stoker.ImageFolder(os.path.join(args.data, "train")), batch_size=args.batch_size,
        shuffle=True, threads=args.workers,
        transforms=[stoker.RandomResizedCrop(args.crop), stoker.RandomHorizontalFlip(),
                    stoker.Normalize(MEAN, STD)])
    # Validation: each sample on exactly one rank, the last batch short (no padding).
    val_loader = stoker.Loader(
        stoker.ImageFolder(os.path.join(args.data, "val")), batch_size=args.batch_size,
        threads=args.workers, rank_tail="uneven", drop_last=False,
        transforms=[stoker.Resize(args.crop * 8 // 7), stoker.CenterCrop(args.crop),
                    stoker.Normalize(MEAN, STD)])

    start_epoch = 0
    if args.resume:
        ckpt = torch.load(args.resume)
        start_epoch = ckpt["epoch"]
        model.load_state_dict(ckpt["state_dict"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        train_loader.load_state_dict(ckpt["data"])  # mid-epoch too
    if args.evaluate:
        validate(val_loader, model, criterion, distributed)
        return
    for epoch in range(start_epoch, args.epochs):
        train_loader.set_epoch(epoch)  # was: train_sampler.set_epoch(epoch)
        train(train_loader, model, criterion, optimizer, epoch, args)
        scheduler.step()
        validate(val_loader, model, criterion, distributed)
        if not distributed or dist.get_rank() == 0:
            data = train_loader.state_dict()  # its epoch: this one, or the next at its start
            torch.save({"epoch": data["epoch"], "arch": args.arch,
                        "state_dict": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(), "data": data}, args.checkpoint)
    if distributed:
        # DistributedDataParallel's Reducer must not hold the last reference to the
        # process group: freed with the model, it joins gloo's threads while holding
        # the GIL, and hangs if one of them is freeing a tensor (seen with torch 1.13).
        del model
        dist.destroy_process_group()


def train(loader, model, criterion, optimizer, epoch, args):
    model.train()
    end = time.time()
    for i, (images, target) in enumerate(loader):
        loss = criterion(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"Epoch: [{epoch}][{i + 1}/{len(loader)}] loss {loss.item():.4f} "
              f"time {time.time() - end:.3f}", flush=True)
        end = time.time()
        if args.max_steps and i + 1 >= args.max_steps:
            break


def validate(loader, model, criterion, distributed):
    model.eval()
    totals = torch.zeros(3, dtype=torch.float64)  # loss sum, correct, samples
    with torch.no_grad():
        for images, target in loader:
            output = model(images)
            totals += torch.tensor([criterion(output, target).item() * len(target),
                                    (output.argmax(1) == target).sum().item(), len(target)],
                                   dtype=torch.float64)
    if distributed:
        dist.all_reduce(totals)  # exact: no sample counted twice
    print(f" * Acc@1 {100 * totals[1] / totals[2]:.3f} Loss {totals[0] / totals[2]:.4f} "
          f"over {int(totals[2])} samples", flush=True)
    return totals


if __name__ == "__main__":
    main()
