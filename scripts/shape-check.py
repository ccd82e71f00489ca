#!/usr/bin/env python3
"""The repository's shape, held by CI (issue "Rooms again").

Fails (exit 1) when, outside tests:
- a Rust source file has more than MAX_FILE_LINES lines,
- a function has more than MAX_FUNCTION_LINES lines,
- sibling modules of one crate import each other in a circle,
- a type's methods in one file call its methods in another file that calls back (a type split
  over files is only split into rooms when its calls between them go one way).

Functions over REVIEW_FUNCTION_LINES are listed for review without failing.

Test code does not count: files under `tests/`, files named `tests.rs`, and the
`#[cfg(test)] mod ... { ... }` block at the end of a file. Benchmarks and examples count.

Siblings are the modules declared by one parent (the files of one folder, with the folder's
`mod.rs` or `lib.rs` as their parent). Module `a` imports sibling `b` when `a`'s files name
`super::b`, `crate::...::b` for the folder's own path, or `b::` declared `use`d through the
parent. A circle is a cycle in that graph; a child naming its parent does not count.

Usage: scripts/shape-check.py [ROOT]
"""

import os
import re
import sys

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 100
REVIEW_FUNCTION_LINES = 80

CRATES = {"": "src", "coordinator": "coordinator/src", "worker": "worker/src", "cli": "cli/src"}
EXTRA_DIRS = ["examples", "coordinator/examples", "build.rs"]


def rust_files(root):
    """Every non-test Rust file: (relative path, crate key or None)."""
    out = []
    for crate, src in CRATES.items():
        base = os.path.join(root, src)
        for folder, _, names in os.walk(base):
            for name in sorted(names):
                in_tests = "tests" in os.path.relpath(folder, base).split(os.sep)
                if name.endswith(".rs") and name != "tests.rs" and not in_tests:
                    out.append((os.path.relpath(os.path.join(folder, name), root), crate))
    for extra in EXTRA_DIRS:
        path = os.path.join(root, extra)
        if os.path.isfile(path):
            out.append((extra, None))
        elif os.path.isdir(path):
            for name in sorted(os.listdir(path)):
                if name.endswith(".rs"):
                    out.append((os.path.join(extra, name), None))
    return out


def strip_strings_and_comments(line, in_block_comment):
    """The line with string literals and comments blanked, for brace counting."""
    out = []
    i = 0
    while i < len(line):
        if in_block_comment:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i = end + 2
            in_block_comment = False
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            in_block_comment = True
            i += 2
            continue
        if c == '"':
            j = i + 1
            while j < len(line) and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            i = j + 1
            out.append('""')
            continue
        if c == "'" and i + 2 < len(line) and (line[i + 2] == "'" or line[i + 1] == "\\"):
            end = line.find("'", i + 2 if line[i + 1] == "\\" else i + 1)
            i = (end + 1) if end > 0 else i + 1
            out.append("' '")
            continue
        out.append(c)
        i += 1
    return "".join(out), in_block_comment


def non_test_lines(text):
    """The file's lines up to its `#[cfg(test)]` module (raw strings in tests may hold braces)."""
    lines = text.split("\n")
    for n, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]" and n + 1 < len(lines):
            following = lines[n + 1].strip()
            # An inline test module (`mod tests {`), not a declaration of one in its own file
            # (`mod tests;`), which may sit anywhere among the items.
            inline = following.endswith("{")
            if inline and (following.startswith("mod ") or following.startswith("pub(crate) mod ")):
                return lines[:n]
    return lines


FN_START = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")


def long_functions(lines, limit=None):
    """(name, first line, length) of every function longer than `limit` (the maximum)."""
    limit = MAX_FUNCTION_LINES if limit is None else limit
    found = []
    in_comment = False
    stack = []  # (name, start line, depth at start) of open functions
    depth = 0
    pending = None  # a function whose opening brace has not been seen yet
    for n, raw in enumerate(lines, 1):
        code, in_comment = strip_strings_and_comments(raw, in_comment)
        match = FN_START.match(code)
        if match:
            pending = (match.group(6), n)
        for c in code:
            if c == "{":
                if pending is not None:
                    stack.append((pending[0], pending[1], depth))
                    pending = None
                depth += 1
            elif c == "}":
                depth -= 1
                if stack and stack[-1][2] == depth:
                    name, start, _ = stack.pop()
                    length = n - start + 1
                    if length > limit:
                        found.append((name, start, length))
            elif c == ";" and pending is not None and not stack_open_paren(code):
                pending = None  # a declaration without a body (trait method)
    return found


def stack_open_paren(code):
    return code.count("(") > code.count(")")


def module_of(path, crate_src):
    """The module path (list of names) of a file inside its crate's src folder."""
    rel = os.path.relpath(path, crate_src)
    parts = rel[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts


USE_PATH = re.compile(r"\b(crate|super)((?:::\w+)+)")
GROUP_USE = re.compile(r"\b(crate|super)((?:::\w+)*)::\{([^;]*)\}", re.S)


def referenced_modules(text, module):
    """Absolute module paths (lists) this file's code names through crate:: or super::."""
    code_lines = []
    in_comment = False
    for line in non_test_lines(text):
        code, in_comment = strip_strings_and_comments(line, in_comment)
        code_lines.append(code)
    code = "\n".join(code_lines)
    refs = []

    def resolve(head, tail):
        names = [t for t in tail.split("::") if t]
        if head == "crate":
            return names
        base = list(module)
        # `super` of a module is its parent; repeated `super::super` is spelled in `tail`.
        base = base[:-1]
        while names and names[0] == "super":
            base = base[:-1]
            names = names[1:]
        return base + names

    for match in GROUP_USE.finditer(code):
        prefix = resolve(match.group(1), match.group(2))
        for item in re.split(r",", match.group(3)):
            item = item.strip()
            first = re.match(r"(\w+)", item)
            if first:
                refs.append(prefix + [first.group(1)])
    for match in USE_PATH.finditer(code):
        refs.append(resolve(match.group(1), match.group(2)))
    return refs


def sibling_circles(files_by_crate, root):
    circles = []
    for crate, files in files_by_crate.items():
        src = os.path.join(root, CRATES[crate])
        modules = {}
        for path in files:
            full = os.path.join(root, path)
            modules[tuple(module_of(full, src))] = full
        edges = {m: set() for m in modules}
        for module, full in modules.items():
            if not module:
                continue
            with open(full, encoding="utf-8") as handle:
                text = handle.read()
            parent = module[:-1]
            for ref in referenced_modules(text, list(module)):
                # The sibling this reference goes through: the ref's element one below the parent.
                if len(ref) > len(parent) and tuple(ref[: len(parent)]) == parent:
                    sibling = tuple(ref[: len(parent) + 1])
                    if sibling != module and sibling in modules:
                        edges[module].add(sibling)
        circles.extend(find_cycles(edges, crate))
    return circles


def find_cycles(edges, crate):
    found = []
    seen_pairs = set()
    for a in edges:
        for b in edges[a]:
            if a in edges.get(b, ()) and (b, a) not in seen_pairs:
                seen_pairs.add((a, b))
                found.append((crate, "::".join(a), "::".join(b)))
    # Longer cycles: depth-first search for a path back to the start among siblings.
    for start in edges:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in edges.get(node, ()):
                if nxt == start and len(path) > 2 and start == min(path):
                    found.append((crate, " -> ".join("::".join(p) for p in path + [start]), ""))
                elif nxt not in path and len(path) < 6:
                    stack.append((nxt, path + [nxt]))
    return found


IMPL_START = re.compile(r"^impl(?:<[^>]*>)?\s+(?:[\w:]+\s+for\s+)?(\w+)(?:<[^>]*>)?\s*\{")
METHOD = re.compile(r"^    (?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)")


def impl_blocks(lines):
    """(type, [(method, [called names])]) for each top-level `impl` block of a file's lines."""
    blocks = []
    in_comment = False
    current = None
    depth = 0
    for raw in lines:
        code, in_comment = strip_strings_and_comments(raw, in_comment)
        if current is None:
            match = IMPL_START.match(code)
            if match:
                current = (match.group(1), [])
                depth = 0
        if current is not None:
            method = METHOD.match(code)
            if method:
                current[1].append((method.group(1), []))
            elif current[1]:
                current[1][-1][1].extend(re.findall(r"\bself\.(\w+)\(|\b\w+::(\w+)\(", code))
            depth += code.count("{") - code.count("}")
            if depth <= 0 and "}" in code:
                blocks.append(current)
                current = None
    return blocks


def calls_between_files(files, root):
    """Pairs of files in which one type's methods call each other both ways."""
    defined = {}  # (crate, type) -> {method: file}
    calls = {}  # (crate, type) -> {(from file, to method)}
    for crate, paths in files.items():
        for path in paths:
            with open(os.path.join(root, path), encoding="utf-8") as handle:
                lines = non_test_lines(handle.read())
            for type_name, methods in impl_blocks(lines):
                key = (crate, type_name)
                for name, called in methods:
                    defined.setdefault(key, {}).setdefault(name, path)
                    for pair in called:
                        calls.setdefault(key, set()).add((path, pair[0] or pair[1]))
    problems = []
    for key, made in calls.items():
        owners = defined.get(key, {})
        edges = set()
        for source, name in made:
            target = owners.get(name)
            if target and target != source:
                edges.add((source, target))
        for source, target in sorted(edges):
            if (target, source) in edges and source < target:
                problems.append((key[1], source, target))
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    failures = []
    reviews = []
    files_by_crate = {}
    for path, crate in rust_files(root):
        with open(os.path.join(root, path), encoding="utf-8") as handle:
            lines = non_test_lines(handle.read())
        while lines and not lines[-1].strip():
            lines.pop()
        if len(lines) > MAX_FILE_LINES:
            failures.append(f"{path}: {len(lines)} lines outside tests (limit {MAX_FILE_LINES})")
        for name, start, length in long_functions(lines, REVIEW_FUNCTION_LINES):
            if length > MAX_FUNCTION_LINES:
                failures.append(
                    f"{path}:{start}: fn {name} is {length} lines (limit {MAX_FUNCTION_LINES})"
                )
            else:
                reviews.append(f"{path}:{start}: fn {name} is {length} lines")
        if crate is not None:
            files_by_crate.setdefault(crate, []).append(path)
    for crate, a, b in sibling_circles(files_by_crate, root):
        where = crate or "tilesolve"
        if b:
            failures.append(f"{where}: modules {a} and {b} import each other")
        else:
            failures.append(f"{where}: import circle {a}")
    for type_name, a, b in calls_between_files(files_by_crate, root):
        failures.append(f"{type_name}: its methods in {a} and in {b} call each other")
    if reviews:
        print(f"for review (over {REVIEW_FUNCTION_LINES} lines, within the limit):")
        for review in reviews:
            print(f"  {review}")
    for failure in failures:
        print(failure)
    if failures:
        print(f"shape check: {len(failures)} problem(s)")
        return 1
    print("shape check: files, functions, module imports and calls between files within bounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
