#!/usr/bin/env python3
"""Tables for docs/performance.md from cuda_benchmark's JSON (scripts/gpu-check.sh runs both).

Reads the JSON on stdin (--benchmark_format=json --benchmark_repetitions=3
--benchmark_report_aggregates_only=true) and prints two Markdown tables: the element-wise kernels in
GB/s with the ratio to a device-to-device copy moving the same bytes, and the GEMMs in TFLOP/s with
the ratio of each backend to cuBLAS (bf16/fp16) or cuBLASLt (fp8).  Medians of the repetitions.
"""
import json
import sys


UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def short_name(run_name):
    """The benchmark's name without what Google Benchmark appends: the argument (repeated in the
    name here) and /manual_time."""
    parts = [p for p in run_name.split("/") if p != "manual_time"]
    if parts[0] == "gemm":
        return "/".join(parts[:4])
    if parts[0] == "device_copy":
        return "/".join(parts[:2])
    return "/".join(parts)


def medians(report):
    """The median row of each benchmark, with the time per iteration in seconds."""
    rows = {}
    for b in report["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        b["seconds"] = b["real_time"] * UNIT_SECONDS[b.get("time_unit", "ns")]
        rows[short_name(b["run_name"])] = b
    return rows


def gb_per_second(b):
    return b["traffic_bytes"] / b["seconds"] / 1e9


def tflops(b):
    return b["flops"] / b["seconds"] / 1e12


def main():
    report = json.load(sys.stdin)
    context = report.get("context", {})
    print(f"Device: {context.get('cuda_device', '?')} (compute capability {context.get('cuda_capability', '?')}), "
          f"{context.get('date', '')}, host {context.get('host_name', '')}")
    print()
    rows = medians(report)
    copies = {}
    for name, b in rows.items():
        if name.startswith("device_copy/"):
            copies[int(b["traffic_bytes"])] = gb_per_second(b)
    print("| kernel | GB/s | copy of the same bytes, GB/s | ratio |")
    print("|---|---:|---:|---:|")
    for name, b in sorted(rows.items()):
        if name.startswith(("device_copy/", "gemm/")):
            continue
        traffic = int(b["traffic_bytes"])
        copy = copies.get(traffic)
        ratio = f"{gb_per_second(b) / copy:.2f}" if copy else "no copy of that size"
        copy_text = f"{copy:.0f}" if copy else "—"
        print(f"| `{name}` | {gb_per_second(b):.0f} | {copy_text} | {ratio} |")
    print()
    print("| GEMM | TFLOP/s | reference | reference TFLOP/s | ratio |")
    print("|---|---:|---|---:|---:|")
    for name, b in sorted(rows.items()):
        if not name.startswith("gemm/"):
            continue
        _, dtype, backend, size = name.split("/")[:4]
        reference = "cublaslt" if dtype.startswith("float8") else "cublas"
        ref = rows.get(f"gemm/{dtype}/{reference}/{size}")
        ref_tflops = tflops(ref) if ref else None
        ratio = f"{tflops(b) / ref_tflops:.2f}" if ref_tflops else "—"
        ref_text = f"{ref_tflops:.0f}" if ref_tflops else "—"
        label = f" ({b['label']})" if b.get("label") else ""
        print(f"| `{dtype}` {size}³ {backend}{label} | {tflops(b):.0f} | {reference} | {ref_text} | {ratio} |")


if __name__ == "__main__":
    main()
