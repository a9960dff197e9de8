#!/usr/bin/env python3
"""Markdown tables of gemm_benchmark's JSON output (docs/performance.md, "Matrix product").

Table 1: GFLOP/s (median of the repetitions) of every product benchmark at n = 256, 1024, 2048
on 1 and 2 threads, and in brackets the ratio to eigen_gemm<float> at the same n and threads.
Below it, the bare instruction loops and the per-path runs (n = 1024, 1 thread).
The rates use real (wall-clock) time; with --cpu, the 1-thread columns use the benchmark
thread's CPU time instead (what another job on the core does not inflate; meaningless for
2 threads, whose helper's time it does not count).

    build/benchmarks/gemm_benchmark --benchmark_format=json --benchmark_repetitions=3 \\
        --benchmark_report_aggregates_only=true | python3 scripts/gemm_benchmark_table.py
"""
import json
import re
import sys

use_cpu = "--cpu" in sys.argv
runs = json.load(sys.stdin)["benchmarks"]
flops = {}  # (family, n, threads) -> FLOP/s
paths = {}  # (family, path number) -> FLOP/s
loops = {}  # (family, threads) -> FLOP/s
labels = {}
for run in runs:
    if run.get("run_type") == "aggregate" and run.get("aggregate_name") != "median":
        continue
    name = run.get("run_name", run["name"])
    rate = run.get("FLOP/s")
    if rate is None:
        continue
    m = re.match(r"(.+?)/(\d+)/(\d+)/real_time$", name)
    if m:
        key = (m.group(1), int(m.group(2)), int(m.group(3)))
        if use_cpu and key[2] == 1 and run.get("cpu_time") and run.get("real_time"):
            rate = rate * run["real_time"] / run["cpu_time"]
        flops[key] = rate
        labels[m.group(1)] = run.get("label", "")
        continue
    m = re.match(r"(mixprec_gemm_on_path<.+?>)/(\d+)/real_time$", name)
    if m:
        paths[(m.group(1), int(m.group(2)))] = rate
        continue
    m = re.match(r"(\w+_loop)/real_time/threads:(\d+)$", name)
    if m:
        if use_cpu and m.group(2) == "1" and run.get("cpu_time") and run.get("real_time"):
            rate = rate * run["real_time"] / run["cpu_time"]
        loops[(m.group(1), int(m.group(2)))] = rate

columns = [(n, t) for t in (1, 2) for n in (256, 1024, 2048)]
print("| benchmark | " + " | ".join(f"n = {n}, {t} thr." for n, t in columns) + " |")
print("|---|" + "---:|" * len(columns))
for family in sorted({k[0] for k in flops}):
    cells = []
    for n, t in columns:
        rate = flops.get((family, n, t))
        base = flops.get(("eigen_gemm<float>", n, t))
        if rate is None:
            cells.append("—")
        elif base:
            cells.append(f"{rate / 1e9:.0f} ({rate / base:.2f})")
        else:
            cells.append(f"{rate / 1e9:.0f}")
    label = f" ({labels[family]})" if labels.get(family) else ""
    print(f"| `{family}`{label} | " + " | ".join(cells) + " |")

if loops:
    print()
    print("| bare instruction loop | 1 thread | 2 threads |")
    print("|---|---:|---:|")
    for family in sorted({k[0] for k in loops}):
        print(f"| `{family}` | " + " | ".join(f"{loops[(family, t)] / 1e9:.0f}" if (family, t) in loops else "—"
                                           for t in (1, 2)) + " |")

path_names = ["automatic", "portable", "avx2", "avx512", "avx512_bf16", "amx_bf16", "amx_bf16_emulated"]
if paths:
    numbers = sorted({k[1] for k in paths})
    print()
    print("| n = 1024, 1 thread | " + " | ".join(path_names[p] for p in numbers) + " |")
    print("|---|" + "---:|" * len(numbers))
    for family in sorted({k[0] for k in paths}):
        print(f"| `{family}` | " + " | ".join(f"{paths[(family, p)] / 1e9:.0f}" if (family, p) in paths else "—"
                                             for p in numbers) + " |")
