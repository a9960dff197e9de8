#!/usr/bin/env python3
"""Markdown table of bulk_convert_benchmark's JSON output: bytes/s and the ratio to memcpy of
the same traffic (input + output bytes) at the same size and thread count.

    build/benchmarks/bulk_convert_benchmark --benchmark_format=json \
        --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
      | python3 scripts/bulk_benchmark_table.py
"""
import json
import re
import sys

runs = json.load(sys.stdin)["benchmarks"]
rate = {}  # (family, n, threads) -> bytes/s (median of the repetitions when present)
for run in runs:
    if run.get("run_type") == "aggregate" and run.get("aggregate_name") != "median":
        continue
    m = re.match(r"(.+?)/(\d+)/(\d+)/real_time", run["run_name"] if "run_name" in run else run["name"])
    if not m:
        continue
    rate[(m.group(1), int(m.group(2)), int(m.group(3)))] = run["bytes_per_second"]

def traffic(family):
    eight_bit = any(t in family for t in ("float8", "e4m3", "e5m2"))
    return "memcpy_same_bytes<5>" if eight_bit else "memcpy_same_bytes<6>"

print("| benchmark | elements | threads | GB/s | × memcpy of the same bytes |")
print("|---|---:|---:|---:|---:|")
for (family, n, threads), value in sorted(rate.items(), key=lambda kv: (kv[0][1], kv[0][0].startswith("memcpy") is False, kv[0][0], kv[0][2])):
    limit = rate.get((traffic(family), n, threads))
    ratio = f"{value / limit:.2f}" if limit and not family.startswith("memcpy") else "1 (limit)" if family.startswith("memcpy") else "n/a"
    size = "256 Ki" if n == 1 << 18 else "64 Mi" if n == 1 << 26 else str(n)
    print(f"| `{family}` | {size} | {threads} | {value / 1e9:.1f} | {ratio} |")
