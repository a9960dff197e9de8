#!/usr/bin/env python3
"""Validates the statistics JSON a loss_scaler writes against docs/schemas/amp_stats.schema.json.

Usage: amp_stats_schema_check.py REPOSITORY_ROOT AMP_STATS_JSON_PROGRAM

The program (tests/scaling/amp_stats_json.cpp) prints one statistics object per line.  Each is
validated with the subset of JSON Schema the schema uses (type, enum, minimum, maximum,
required, properties, additionalProperties, items; a list of types, where a string must be
"inf", "-inf" or "nan"), written here so that the check needs only
Python's standard library; the keys must also come in the schema's `required` order.  Documents
broken on purpose (a key missing, an unknown key, a wrong enum, a float count) must fail, so
that the validator is known to reject.
"""
import json
import subprocess
import sys

TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}

# A number that may be written as a string ("type": ["number", "string"]) is one of these.
NON_FINITE = ("inf", "-inf", "nan")


def errors(value, schema, where="$"):
    """Every way `value` breaks `schema`, as messages naming the place."""
    found = []
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](value) for t in types):
            return [f"{where}: {value!r} is not of type {schema['type']}"]
        if isinstance(value, str) and "string" in types and len(types) > 1 and value not in NON_FINITE:
            return [f"{where}: {value!r} is a string other than {NON_FINITE}"]
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and value < schema["minimum"]:
        found.append(f"{where}: {value!r} is below the minimum {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        found.append(f"{where}: {value!r} is above the maximum {schema['maximum']}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                found.append(f"{where}: the key {key!r} is missing")
        for key, item in value.items():
            if key in properties:
                found.extend(errors(item, properties[key], f"{where}.{key}"))
            elif schema.get("additionalProperties", True) is False:
                found.append(f"{where}: the key {key!r} is not in the schema")
        order = [k for k in schema.get("required", []) if k in value]
        if [k for k in value if k in order] != order:
            found.append(f"{where}: the keys are not in the schema's order")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found.extend(errors(item, schema["items"], f"{where}[{i}]"))
    return found


def load(root, schema_name, program):
    """The schema docs/schemas/SCHEMA_NAME, and the documents the program prints one per line (as
    text and parsed)."""
    with open(f"{root}/docs/schemas/{schema_name}", encoding="utf-8") as f:
        schema = json.load(f)
    lines = subprocess.run([program], check=True, capture_output=True, text=True).stdout.splitlines()
    return schema, lines, [json.loads(line) for line in lines]


def failures_of(schema, documents, line, breakages):
    """Prints and counts what breaks the schema in `documents`, then checks that the validator
    rejects each breakage: (what, edit), edit(d) returning the broken document made from d, a
    parsed copy of `line`."""
    failures = 0
    for i, document in enumerate(documents):
        for message in errors(document, schema):
            print(f"document {i}: {message}")
            failures += 1
    for what, edit in breakages:
        d = json.loads(line)
        if not errors(edit(d), schema):
            print(f"the validator accepts {what}")
            failures += 1
    return failures


def main():
    schema, lines, documents = load(sys.argv[1], "amp_stats.schema.json", sys.argv[2])
    failures = failures_of(schema, documents, lines[0], [
        ("a missing key", lambda d: {k: v for k, v in d.items() if k != "floor_hits"}),
        ("an unknown key", lambda d: {**d, "extra": 1}),
        ("a wrong kind", lambda d: {**d, "culprits": [{**d["culprits"][0], "kind": "inf"}]}),
        ("a float count", lambda d: {**d, "steps": 1.5}),
        ("keys out of order", lambda d: dict(reversed(list(d.items())))),
    ])
    # Every list the schema describes appears non-empty in some document, so every item schema is used.
    for key in ("history", "culprits", "culprit_counts", "scale_histogram"):
        if not any(document[key] for document in documents):
            print(f"no document has a non-empty {key!r}")
            failures += 1
    print(f"{len(documents)} statistics documents checked against the schema: "
          f"{'OK' if failures == 0 else f'{failures} failures'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
