#!/usr/bin/env python3
"""The training-step comparison of docs/performance.md: train_digits --benchmark (mixprec) and
mlp_step.py (PyTorch, the python3 that runs this script) on the same MLPs, in one run, one
thread, and a Markdown table of the median ms per step.

  /usr/bin/python3 benchmarks/pytorch/compare_training.py build/examples/train_digits [--steps N]

Each configuration runs mixprec's recipes and PyTorch's one after the other, so that the numbers
of one row come from the same minutes of the same machine.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

SIZES = [(64, 1, 64), (128, 2, 64), (512, 1, 256), (512, 2, 256), (2048, 1, 512), (2048, 3, 512)]
MIXPREC = ["fp32", "bf16", "fp16", "fp8", "mxfp8"]
PYTORCH = ["fp32", "bf16"]


def run_json(command):
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "result.json")
        subprocess.run(command + ["--json", path], check=True, stdout=subprocess.DEVNULL)
        with open(path) as f:
            return json.load(f)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("train_digits")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--sizes", help="H,L,B;H,L,B;... (default: the issue's six)")
    args = parser.parse_args()
    sizes = SIZES if not args.sizes else [tuple(int(v) for v in s.split(",")) for s in args.sizes.split(";")]
    columns = [f"mixprec {p}" for p in MIXPREC] + [f"PyTorch {p}" for p in PYTORCH]
    print("| H, L, B | " + " | ".join(columns) + " | mixprec bf16 / fp32 | mixprec bf16 / PyTorch bf16 |")
    print("|---|" + "---:|" * (len(columns) + 2))
    for hidden, layers, batch in sizes:
        common = ["--hidden", str(hidden), "--layers", str(layers), "--batch", str(batch), "--steps", str(args.steps)]
        ms = {}
        for p in MIXPREC:
            ms[f"mixprec {p}"] = run_json([args.train_digits, "--benchmark", "--precision", p] + common)["ms_per_step"]
        for p in PYTORCH:
            ms[f"PyTorch {p}"] = run_json([sys.executable, os.path.join(here, "mlp_step.py"), "--precision", p]
                                          + common)["ms_per_step"]
        ratio = ms["mixprec bf16"] / ms["mixprec fp32"]
        versus = ms["mixprec bf16"] / ms["PyTorch bf16"]
        print(f"| {hidden}, {layers}, {batch} | " + " | ".join(f"{ms[c]:.3g}" for c in columns) +
              f" | {ratio:.2f} | {versus:.2f} |", flush=True)


if __name__ == "__main__":
    main()
