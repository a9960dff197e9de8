#!/usr/bin/env python3
"""Markdown table of bulk_convert_benchmark's (or fp8_quantize_benchmark's) JSON output: for each benchmark, GB/s (bytes read
plus bytes written) and, in brackets, the ratio to memcpy of the same traffic at the same size
and thread count, in three columns: 256 Ki elements on 1 thread (in cache), 64 Mi on 1 thread
and 64 Mi on 2 threads (in memory).  With repetitions, the median is used.

    build/benchmarks/bulk_convert_benchmark --benchmark_format=json \
        --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
      | python3 scripts/bulk_benchmark_table.py
"""
import json
import re
import sys

runs = json.load(sys.stdin)["benchmarks"]
rate = {}  # (family, elements, threads) -> bytes/s
named_limit = {}  # family -> its limit's family, where the benchmark names it ("limit=..." label)
for run in runs:
    if run.get("run_type") == "aggregate" and run.get("aggregate_name") != "median":
        continue
    m = re.match(r"(.+?)/(\d+)/(\d+)/real_time", run.get("run_name", run["name"]))
    if m:
        rate[(m.group(1), int(m.group(2)), int(m.group(3)))] = run["bytes_per_second"]
        if run.get("label", "").startswith("limit="):
            named_limit[m.group(1)] = run["label"][len("limit="):]

IN_CACHE, IN_MEMORY = 1 << 18, 1 << 26
columns = [(IN_CACHE, 1, "256 Ki, 1 thread"), (IN_MEMORY, 1, "64 Mi, 1 thread"), (IN_MEMORY, 2, "64 Mi, 2 threads")]


def limit_of(family):
    """memcpy of the same bytes: the one the benchmark names (fp8_quantize_benchmark), else 4 + 1
    bytes an element for the 8-bit formats, 4 + 2 otherwise (bulk_convert_benchmark)."""
    if family in named_limit:
        return named_limit[family]
    eight_bit = any(t in family for t in ("float8", "e4m3", "e5m2"))
    return "memcpy_same_bytes<5>" if eight_bit else "memcpy_same_bytes<6>"


def cell(family, n, threads):
    value = rate.get((family, n, threads))
    if value is None:
        return "—"
    if family.startswith("memcpy"):
        return f"{value / 1e9:.1f}"
    limit = rate.get((limit_of(family), n, threads))
    return f"{value / 1e9:.1f} ({value / limit:.2f})" if limit else f"{value / 1e9:.1f}"


families = sorted({family for family, _, _ in rate}, key=lambda f: (not f.startswith("memcpy"), f))
print("| benchmark | " + " | ".join(title for _, _, title in columns) + " |")
print("|---|" + "---:|" * len(columns))
for family in families:
    print(f"| `{family}` | " + " | ".join(cell(family, n, t) for n, t, _ in columns) + " |")
