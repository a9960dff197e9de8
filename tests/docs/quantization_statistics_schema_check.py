#!/usr/bin/env python3
"""Validates the session's quantisation statistics JSON against
docs/schemas/quantization_statistics.schema.json.

Usage: quantization_statistics_schema_check.py REPOSITORY_ROOT QUANTIZATION_STATISTICS_JSON_PROGRAM

The program (tests/session/quantization_statistics_json.cpp) prints one record per line; each
is validated with amp_stats_schema_check's validator, keys in the schema's order.  Every
precision and operand the schema names must appear, and a non-finite value; documents broken on
purpose must fail, so that the validator is known to reject.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from amp_stats_schema_check import errors  # noqa: E402


def main():
    root, program = sys.argv[1], sys.argv[2]
    with open(f"{root}/docs/schemas/quantization_statistics.schema.json", encoding="utf-8") as f:
        schema = json.load(f)
    lines = subprocess.run([program], check=True, capture_output=True, text=True).stdout.splitlines()
    documents = [json.loads(line) for line in lines]
    failures = 0
    for i, document in enumerate(documents):
        for message in errors(document, schema):
            print(f"document {i}: {message}")
            failures += 1
    for key in ("precision", "operand"):
        missing = set(schema["properties"][key]["enum"]) - {d[key] for d in documents}
        if missing:
            print(f"no document has {key} {sorted(missing)}")
            failures += 1
    if not any(isinstance(v, str) for d in documents for v in d["stats"].values()):
        print("no document has a non-finite statistic")
        failures += 1
    broken = []
    d = json.loads(lines[0])
    del d["stats"]["mse"]
    broken.append(("a missing statistic", d))
    d = json.loads(lines[0])
    d["rank"] = 0
    broken.append(("an unknown key", d))
    d = json.loads(lines[0])
    d["operand"] = "bias"
    broken.append(("a wrong operand", d))
    d = json.loads(lines[0])
    d["stats"]["min"] = "small"
    broken.append(("a string that is not a non-finite value", d))
    d = json.loads(lines[0])
    d["stats"]["underflows_num"] = 0.5
    broken.append(("a float count", d))
    d = json.loads(lines[0])
    d = dict(reversed(list(d.items())))
    broken.append(("keys out of order", d))
    for what, document in broken:
        if not errors(document, schema):
            print(f"the validator accepts {what}")
            failures += 1
    print(f"{len(documents)} quantisation statistics records checked against the schema: "
          f"{'OK' if failures == 0 else f'{failures} failures'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
