#!/usr/bin/env python3
"""docs/errors.md against the tests: every row of its table names a test file that contains the
quoted message fragment and a CHECK/REQUIRE_THROWS for it, and an exception type that the
library defines.  Exits non-zero, listing the rows that drifted."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
doc = (root / "docs" / "errors.md").read_text(encoding="utf-8")
library = "\n".join(p.read_text(encoding="utf-8") for p in (root / "include").rglob("*.hpp"))

table = doc[doc.index("## The table"):]
rows = [line for line in table.splitlines()
        if line.startswith("|") and line.count("|") == 6 and not line.startswith(("| entry", "|---"))]
problems = []
for row in rows:
    cells = [c.strip() for c in row.strip("|").split("|")]
    entry, _, exception, fragment, test = cells
    exception_name = exception.strip("`")
    fragment_text = fragment[1:-1] if fragment.startswith("`") and fragment.endswith("`") else None
    test_path = root / test
    if fragment_text is None:
        problems.append(f"{entry}: the message column is not one `quoted` fragment")
        continue
    if not re.search(r"class\s+" + re.escape(exception_name) + r"\b", library):
        problems.append(f"{entry}: no class {exception_name} in include/")
    if not test_path.is_file():
        problems.append(f"{entry}: {test} does not exist")
        continue
    source = test_path.read_text(encoding="utf-8")
    if fragment_text not in source:
        problems.append(f"{entry}: {test} does not contain {fragment_text!r}")
    elif "THROWS" not in source:
        problems.append(f"{entry}: {test} checks no exception")

if len(rows) < 20:
    problems.append(f"only {len(rows)} rows parsed from docs/errors.md: the table format changed?")
for p in problems:
    print("docs/errors.md:", p)
print(f"{len(rows) - len(problems)} passed, {len(problems)} failed")
sys.exit(1 if problems else 0)
