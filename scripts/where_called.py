#!/usr/bin/env python3
"""Writes include/mixprec/compiled/where_called.hpp: everything the headers compile only where called.

docs/design.md ("Compiled where called"): functions written `template <int = 0>` and the class
templates behind `using X = basic_X<>;` are compiled only in a file that calls them.  The header
this script writes names each of them as an explicit instantiation, in three parts (ops/,
session/, the rest): declarations (`extern template`) for the users of mixprec::compiled, whose
files then compile none of those bodies, and definitions of part N in src/compiled/where_called_N.cpp,
which builds every body once (so a body that does not compile fails the build, whether or not a
test calls it).  The list is read from the headers, so a new function needs no one to add it.

    scripts/where_called.py           rewrite the header
    scripts/where_called.py --check   exit 1 if the header is not what the headers give (CI)
"""
import re
import sys
from pathlib import Path

LAZY = "template <int = 0>"


def balanced_end(text, start):
    """Index just past the bracket that closes the one at text[start]."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "({[":
            depth += 1
        elif text[i] in ")}]":
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError("unbalanced brackets in: " + text[start:start + 80])


def without_defaults(params):
    """The parameter list '(a, b = x, c = {})' with its default arguments removed."""
    out, i, depth = [], 0, 0
    while i < len(params):
        c = params[i]
        if c == "=" and depth == 1 and params[i + 1] != "=" and params[i - 1] not in "=!<>":
            # skip the default up to the ',' or ')' that ends this parameter
            j, d = i + 1, 0
            while True:
                if params[j] in "({[":
                    d += 1
                elif params[j] in ")}]":
                    if d == 0:
                        break
                    d -= 1
                elif params[j] == "," and d == 0:
                    break
                j += 1
            while out and out[-1] == " ":
                out.pop()
            i = j
            continue
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        out.append(c)
        i += 1
    return "".join(out)


# Function templates over element formats: the instantiations the session's recipes use
# (session/linear.hpp: mxfp8, mxfp4, fp8_block), which a program that calls these ops itself
# (examples/train_digits) most likely uses too.  Every overload of the name in the header is
# instantiated with each argument list.
FORMAT_INSTANTIATIONS = {
    "ops/mx_linear.hpp": {
        "mx_linear": ["float8_e4m3fn", "float4_e2m1fn"],
        "mx_linear_backward": ["float8_e5m2, float8_e4m3fn", "float4_e2m1fn, float4_e2m1fn"],
    },
    "ops/fp8_block_linear.hpp": {
        "fp8_block_linear": ["float8_e4m3fn"],
        "fp8_block_linear_backward": ["float8_e4m3fn, float8_e4m3fn"],
    },
}


def declarations(path, formats=None):
    """(namespace, class or '', declaration without body or defaults) for each lazy function and
    each instantiation `formats` asks for ({name: [template argument lists]}), and
    (namespace, class template) for each `using X = basic_X<>;`."""
    lines = path.read_text().split("\n")
    namespaces, functions, classes = [], [], []
    formats = formats or {}
    for i, line in enumerate(lines):
        m = re.match(r"^namespace ([\w:]+) \{", line)
        if m:
            namespaces.append(m.group(1))
            continue
        if re.match(r"^\}  // namespace", line):
            namespaces.pop()
            continue
        m = re.match(r"^using \w+ = (basic_\w+)<>;", line)
        if m:
            classes.append(("::".join(namespaces), m.group(1)))
            continue
        lazy = re.match(r"^\s*" + re.escape(LAZY) + r"\s*(//.*)?$", line)
        if not lazy and not (formats and re.match(r"^template <(class|typename) ", line)):
            continue
        text = " ".join(l.split("//")[0].strip() for l in lines[i + 1:i + 40])
        open_paren = text.index("(")
        close_paren = balanced_end(text, open_paren)
        head = text[:open_paren].strip()
        tail = text[close_paren:]
        qualifiers = re.match(r"\s*((?:const\s*)?(?:&&|&)?\s*(?:noexcept)?)", tail).group(1).strip()
        head = re.sub(r"^(static|inline|explicit)\s+", "", head)
        cls = ""
        if line.startswith("  "):  # a member: the class is the nearest unclosed one above
            for k in range(i, -1, -1):
                m = re.match(r"^(?:class|struct) (\w+)", lines[k])
                if m:
                    cls = m.group(1)
                    break
        name = head.split()[-1]
        result = head[: -len(name)].strip()
        qualified = (cls + "::" if cls else "") + name
        params = without_defaults(text[open_paren:close_paren])
        if lazy:
            functions.append(("::".join(namespaces), f"{result} {qualified}{params} {qualifiers}".strip()))
        for arguments in formats.get(name, []):
            functions.append(("::".join(namespaces), f"{result} {qualified}<{arguments}>{params}".strip()))
    return functions, classes


PARTS = {"ops": 1, "session": 2}  # every other folder: part 3
PART_COUNT = 3


def part_of(rel):
    return PARTS.get(rel.parts[0], 3) if len(rel.parts) > 1 else 3


def header_text(include):
    entries = {part: [] for part in range(1, PART_COUNT + 1)}
    headers = set()
    for path in sorted(include.rglob("*.hpp")) + sorted(include.rglob("*.inl")):
        text = path.read_text()
        if LAZY not in text and "= basic_" not in text and path.relative_to(include).as_posix() not in FORMAT_INSTANTIATIONS:
            continue
        rel = path.relative_to(include)
        formats = FORMAT_INSTANTIATIONS.get(rel.as_posix(), {})
        functions, classes = declarations(path, formats)
        written = len(re.findall(r"^\s*" + re.escape(LAZY), text, flags=re.M))
        if written + sum(len(v) * len(re.findall(r"^\w.* " + k + r"\(", text, flags=re.M))
                         for k, v in formats.items()) != len(functions):
            sys.exit(f"where_called.py: {path} writes {LAZY} {written} times, {len(functions)} read")
        if not functions and not classes:
            continue
        if path.suffix != ".hpp":
            sys.exit(f"where_called.py: {path}: keep {LAZY} functions in headers, not in .inl files")
        headers.add(rel)
        part = part_of(rel)
        for namespace, declaration in functions:
            entries[part].append(f"namespace {namespace} {{ MIXPREC_WHERE_CALLED_{part} {declaration}; }}")
        for namespace, cls in classes:
            entries[part].append(f"namespace {namespace} {{ MIXPREC_WHERE_CALLED_{part} class {cls}<void>; }}")
    if not headers:
        sys.exit("where_called.py: found nothing compiled only where called under " + str(include))
    out = [
        "// Written by scripts/where_called.py from the headers; do not edit (CI checks that it is",
        "// current).  Everything the headers compile only where called (docs/design.md): declared",
        "// `extern template` where MIXPREC_COMPILED is defined (the users of mixprec::compiled, whose",
        "// files then compile none of these bodies); src/compiled/where_called_N.cpp defines part N",
        "// (MIXPREC_WHERE_CALLED_DEFINES=N) and sees the other parts as extern.",
        "// clang-format off",
        "#pragma once",
        "",
    ]
    out += [f'#include "../{rel.as_posix()}"' for rel in sorted(headers)]
    for part in range(1, PART_COUNT + 1):
        out += [
            "",
            f"#if defined(MIXPREC_WHERE_CALLED_DEFINES) && MIXPREC_WHERE_CALLED_DEFINES == {part}",
            f"#define MIXPREC_WHERE_CALLED_{part} template",
            "#else",
            f"#define MIXPREC_WHERE_CALLED_{part} extern template",
            "#endif",
        ]
        out += entries[part]
        out.append(f"#undef MIXPREC_WHERE_CALLED_{part}")
    out.append("// clang-format on")
    return "\n".join(out) + "\n"


def main():
    check = sys.argv[1:] == ["--check"]
    if sys.argv[1:] and not check:
        sys.exit("usage: scripts/where_called.py [--check]")
    root = Path(__file__).resolve().parent.parent
    include = root / "include"
    target = include / "mixprec" / "compiled" / "where_called.hpp"
    text = header_text(include / "mixprec")
    if check:
        if not target.exists() or target.read_text() != text:
            sys.exit(f"{target} is not current: run scripts/where_called.py and commit the result")
        return
    target.parent.mkdir(exist_ok=True)
    target.write_text(text)


if __name__ == "__main__":
    main()
