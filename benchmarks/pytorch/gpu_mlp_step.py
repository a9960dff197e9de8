#!/usr/bin/env python3
"""PyTorch's training step on a CUDA GPU, for the targets of issue 20's GPU training: the MLP of
`train_digits --benchmark` (64 -> H (x L, ReLU) -> 10, softmax cross-entropy, SGD with momentum
0.9) on random inputs already on the device (the step's time does not depend on the values),
timed with CUDA events: median, min and max milliseconds per optimizer step after warm-up.

  python3 benchmarks/pytorch/gpu_mlp_step.py --hidden 4096 --layers 4 --batch 4096 --steps 50

Recipes: fp32 (TF32 off: float32 arithmetic), tf32 (TF32 matrix products), bf16
(torch.autocast("cuda", torch.bfloat16)), fp16 (autocast float16 with torch.amp.GradScaler).
The weights stay float32 in every recipe, as in PyTorch's AMP.  Prints one line per recipe and,
with --json, writes the list of results.
"""
import argparse
import json
import statistics

import torch


def time_recipe(recipe, hidden, layers, batch, steps, seed):
    torch.manual_seed(seed)
    device = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = recipe == "tf32"
    torch.backends.cudnn.allow_tf32 = recipe == "tf32"
    sizes = [64] + [hidden] * layers + [10]
    modules = []
    for i in range(len(sizes) - 1):
        modules.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            modules.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*modules).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler("cuda", enabled=recipe == "fp16")
    x = torch.randn(batch, 64, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    autocast_type = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(recipe)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=autocast_type or torch.float32, enabled=autocast_type is not None):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    for _ in range(max(5, steps // 10)):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return {"library": f"pytorch {torch.__version__}", "device": torch.cuda.get_device_name(), "precision": recipe,
            "hidden": hidden, "layers": layers, "batch": batch, "steps": steps,
            "ms_per_step": statistics.median(times), "ms_min": min(times), "ms_max": max(times)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--recipes", default="fp32,tf32,bf16,fp16")
    parser.add_argument("--json")
    args = parser.parse_args()
    results = []
    for recipe in args.recipes.split(","):
        r = time_recipe(recipe, args.hidden, args.layers, args.batch, args.steps, args.seed)
        results.append(r)
        print(f"{r['library']} on {r['device']}: {recipe}, MLP 64-{args.hidden}(x{args.layers})-10, batch {args.batch}: "
              f"median {r['ms_per_step']:.4g} ms per step (min {r['ms_min']:.4g}, max {r['ms_max']:.4g}) "
              f"over {args.steps} steps", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
