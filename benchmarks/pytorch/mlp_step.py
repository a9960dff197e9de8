#!/usr/bin/env python3
"""PyTorch's side of `train_digits --benchmark`: the same MLP 64 -> H (x L) -> 10 with ReLU,
softmax cross-entropy and SGD with momentum 0.9, on batches of the same UCI digits, timed the same
way (median, min and max milliseconds per optimizer step after a warm-up of max(5, N/10) steps,
one thread unless --threads says otherwise).

  python3 benchmarks/pytorch/mlp_step.py --hidden 2048 --layers 3 --batch 512 --steps 50 --precision bf16

--precision fp32 trains in float32; bf16 runs forward and loss under
torch.autocast("cpu", dtype=torch.bfloat16), as PyTorch's CPU AMP recipe does (the backward
follows the dtypes autocast recorded; no loss scaling, as for bf16).  The weights stay float32
(PyTorch's AMP keeps them so, like mixprec's master weights).  Prints one line, and with --json
writes the same keys as train_digits --benchmark.
"""
import argparse
import json
import os
import statistics
import time

import torch


def load_digits(path):
    images, labels = [], []
    with open(path) as f:
        for line in f:
            values = [int(v) for v in line.split(",")]
            images.append([v / 16.0 for v in values[:64]])
            labels.append(values[64])
    return torch.tensor(images, dtype=torch.float32), torch.tensor(labels, dtype=torch.int64)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data", default=os.path.join(here, "..", "..", "data", "digits", "digits.csv"))
    parser.add_argument("--json")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    x_all, y_all = load_digits(args.data)
    sizes = [64] + [args.hidden] * args.layers + [10]
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    warm_up = max(5, args.steps // 10)
    generator = torch.Generator().manual_seed(args.seed)
    batches_per_epoch = x_all.shape[0] // args.batch
    order = torch.randperm(x_all.shape[0], generator=generator)
    times = []
    for step in range(warm_up + args.steps):
        b = step % batches_per_epoch
        if b == 0 and step > 0:
            order = torch.randperm(x_all.shape[0], generator=generator)
        index = order[b * args.batch:(b + 1) * args.batch]
        x, y = x_all[index], y_all[index]
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        if args.precision == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
        else:
            loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        elapsed = time.perf_counter() - start
        if step >= warm_up:
            times.append(1e3 * elapsed)
    median = statistics.median(times)
    print(f"pytorch {torch.__version__} benchmark: {args.precision}, MLP 64-{args.hidden}(x{args.layers})-10, "
          f"batch {args.batch}, {args.threads} thread(s): median {median:.4g} ms per step "
          f"(min {min(times):.4g}, max {max(times):.4g}) over {len(times)} steps after {warm_up} warm-up steps")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"library": f"pytorch {torch.__version__}", "precision": args.precision,
                       "hidden": args.hidden, "layers": args.layers, "batch": args.batch, "steps": len(times),
                       "threads": args.threads, "ms_per_step": median, "ms_min": min(times),
                       "ms_max": max(times)}, f)
            f.write("\n")


if __name__ == "__main__":
    main()
