#!/usr/bin/env python3
"""Writes a C++ file that explicitly instantiates everything the headers compile only where called.

docs/design.md ("Compiled where called"): functions written `template <int = 0>` and the class
templates behind `using X = basic_X<>;` are compiled only in a file that calls them, so a body
that no test calls would never be compiled at all.  The file this script writes instantiates
each of them (an explicit instantiation definition compiles the whole body, every member of a
class), and the build compiles it: a body that does not compile fails the build.  The list is
read from the headers on every build, so a new function is checked without anyone adding it.

    compiled_where_called.py <include dir> <output .cpp>
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


def declarations(path):
    """(namespace, class or '', declaration without body or defaults) for each lazy function,
    and (namespace, class template) for each `using X = basic_X<>;`."""
    lines = path.read_text().split("\n")
    namespaces, functions, classes = [], [], []
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
        if not re.match(r"^\s*" + re.escape(LAZY) + r"\s*(//.*)?$", line):
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
        functions.append(("::".join(namespaces), f"{result} {qualified}{params} {qualifiers}".strip()))
    return functions, classes


def main():
    include, output = Path(sys.argv[1]), Path(sys.argv[2])
    out = [
        "// Written by tests/headers/compiled_where_called.py: every function and class the headers",
        "// compile only where called, instantiated so that the build compiles each body.",
        "#include <mixprec/mixprec.hpp>",
        "#include <mixprec/session/linear.hpp>",
        "",
    ]
    count = 0
    for path in sorted(include.rglob("*.hpp")) + sorted(include.rglob("*.inl")):
        text = path.read_text()
        if LAZY not in text and "= basic_" not in text:
            continue
        functions, classes = declarations(path)
        written = len(re.findall(r"^\s*" + re.escape(LAZY), text, flags=re.M))
        if written != len(functions):
            sys.exit(f"compiled_where_called.py: {path} writes {LAZY} {written} times, {len(functions)} read")
        rel = path.relative_to(include)
        for namespace, declaration in functions:
            out.append(f"namespace {namespace} {{ template {declaration}; }}  // {rel}")
            count += 1
        for namespace, cls in classes:
            out.append(f"namespace {namespace} {{ template class {cls}<void>; }}  // {rel}")
            count += 1
    if count == 0:
        sys.exit("compiled_where_called.py: found nothing to instantiate under " + str(include))
    out.append("")
    output.write_text("\n".join(out))


if __name__ == "__main__":
    main()
