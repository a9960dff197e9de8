#!/usr/bin/env python3
"""Validates the session's quantisation statistics JSON against
docs/schemas/quantization_statistics.schema.json.

Usage: quantization_statistics_schema_check.py REPOSITORY_ROOT QUANTIZATION_STATISTICS_JSON_PROGRAM

The program (tests/session/quantization_statistics_json.cpp) prints one record per line; each
is validated with amp_stats_schema_check's validator, keys in the schema's order.  Every
precision and operand the schema names must appear, and a non-finite value; documents broken on
purpose must fail, so that the validator is known to reject.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from amp_stats_schema_check import failures_of, load  # noqa: E402


def main():
    schema, lines, documents = load(sys.argv[1], "quantization_statistics.schema.json", sys.argv[2])
    failures = failures_of(schema, documents, lines[0], [
        ("a missing statistic", lambda d: {**d, "stats": {k: v for k, v in d["stats"].items() if k != "mse"}}),
        ("an unknown key", lambda d: {**d, "rank": 0}),
        ("a wrong operand", lambda d: {**d, "operand": "bias"}),
        ("a string that is not a non-finite value", lambda d: {**d, "stats": {**d["stats"], "min": "small"}}),
        ("a float count", lambda d: {**d, "stats": {**d["stats"], "underflows_num": 0.5}}),
        ("keys out of order", lambda d: dict(reversed(list(d.items())))),
    ])
    for key in ("precision", "operand"):
        missing = set(schema["properties"][key]["enum"]) - {d[key] for d in documents}
        if missing:
            print(f"no document has {key} {sorted(missing)}")
            failures += 1
    if not any(isinstance(v, str) for d in documents for v in d["stats"].values()):
        print("no document has a non-finite statistic")
        failures += 1
    print(f"{len(documents)} quantisation statistics records checked against the schema: "
          f"{'OK' if failures == 0 else f'{failures} failures'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
