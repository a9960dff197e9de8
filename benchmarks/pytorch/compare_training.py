#!/usr/bin/env python3
"""The training-step comparison of docs/performance.md: train_digits --benchmark (mixprec) and
mlp_step.py (PyTorch, the python3 that runs this script) on the same MLPs, in one run, one
thread, and a Markdown table of ms per step: for each cell the smallest of R medians.

  /usr/bin/python3 benchmarks/pytorch/compare_training.py build/examples/train_digits \
      [--steps N] [--repeat R] [--sizes "H,L,B;..."]

Each configuration runs mixprec's recipes and PyTorch's in R rounds, the order rotated from one
round to the next, so that the numbers of one row come from the same minutes of the same machine
and a neighbour's burst on a shared VM (which moved one median by 20-40 %) lands on every column
alike, not on one.  The smallest of the R medians is each column's figure.
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
    parser.add_argument("--repeat", type=int, default=3, help="rounds per configuration (R, default 3)")
    args = parser.parse_args()
    sizes = SIZES if not args.sizes else [tuple(int(v) for v in s.split(",")) for s in args.sizes.split(";")]
    columns = [f"mixprec {p}" for p in MIXPREC] + [f"PyTorch {p}" for p in PYTORCH]
    ratios = [("mixprec bf16", "mixprec fp32"), ("mixprec fp32", "PyTorch fp32"), ("mixprec bf16", "PyTorch bf16"),
              ("mixprec fp8", "mixprec bf16"), ("mixprec mxfp8", "mixprec bf16")]
    print("| H, L, B | " + " | ".join(columns) + " | " +
          " | ".join(f"{a} / {b}".replace("mixprec ", "") for a, b in ratios) + " |")
    print("|---|" + "---:|" * (len(columns) + len(ratios)))
    for hidden, layers, batch in sizes:
        common = ["--hidden", str(hidden), "--layers", str(layers), "--batch", str(batch), "--steps", str(args.steps)]
        commands = {f"mixprec {p}": [args.train_digits, "--benchmark", "--precision", p] + common for p in MIXPREC}
        commands.update({f"PyTorch {p}": [sys.executable, os.path.join(here, "mlp_step.py"), "--precision", p] + common
                         for p in PYTORCH})
        ms = {}
        for round_ in range(args.repeat):
            shift = round_ % len(columns)
            for column in columns[shift:] + columns[:shift]:
                median = run_json(commands[column])["ms_per_step"]
                ms[column] = min(ms.get(column, median), median)
        print(f"| {hidden}, {layers}, {batch} | " + " | ".join(f"{ms[c]:.3g}" for c in columns) + " | " +
              " | ".join(f"{ms[a] / ms[b]:.2f}" for a, b in ratios) + " |", flush=True)


if __name__ == "__main__":
    main()
