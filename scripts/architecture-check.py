#!/usr/bin/env python3
"""ARCHITECTURE.md names only what exists (issue "One owner per job"), held by CI.

Every `backticked` name in the map is checked:
- a path (it has a `/` or ends in a file extension) must be a file or folder of the
  repository, as written from the root or from a crate's source folder
  (`src/`, `coordinator/src/`, `worker/src/`, `cli/src/`), or the end of such a path;
- a code name (`Scheduler`, `Scheduler::poll`, `tasks::Tasks`, `run_task`) must be a word of the
  sources: each `::`-separated part a module, file or identifier found in them; and a
  `Type::name` must be a function, field, constant or variant of that type (found in a Rust
  file that defines or implements `Type`).
Anything else in backticks (commands, flags, values, text with spaces) is left alone.

Exits 1 naming each name that does not resolve.

Usage: scripts/architecture-check.py [ROOT]
"""

import os
import re
import subprocess
import sys

CRATE_SOURCES = ["", "src", "coordinator/src", "worker/src", "cli/src", "coordinator"]
SOURCE_EXTENSIONS = (
    ".rs", ".proto", ".py", ".sh", ".toml", ".yaml", ".yml", ".md", ".html", ".js", ".css"
)
PATH = re.compile(r"^[\w.\-]+(/[\w.\-]*)*/?$")
CODE_NAME = re.compile(r"^(?:[A-Za-z_]\w*)(?:::[A-Za-z_]\w*)*(?:\(\))?$")
FILE_EXTENSION = re.compile(r"\.(rs|md|py|sh|toml|proto|yaml|yml|html|txt|json|jsonl|service)$")


def tracked_files(root):
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split("\n")
    return [path for path in listed if path]


def path_exists(token, files, folders):
    token = token.rstrip("/")
    for base in CRATE_SOURCES:
        candidate = os.path.normpath(os.path.join(base, token)) if base else token
        if candidate in files or candidate in folders:
            return True
    suffix = "/" + token
    return any(path.endswith(suffix) for path in files) or any(
        folder.endswith(suffix) for folder in folders
    )


def source_words(root, files):
    words = set()
    for path in files:
        if not path.endswith(SOURCE_EXTENSIONS) or path == "ARCHITECTURE.md":
            continue
        try:
            with open(os.path.join(root, path), encoding="utf-8") as handle:
                words.update(re.findall(r"[A-Za-z_]\w*", handle.read()))
        except (OSError, UnicodeDecodeError):
            continue
        # A file or folder name is a module name.
        for part in path.split("/"):
            words.add(re.sub(r"\.\w+$", "", part))
    return words


def type_members(root, files):
    """For each Rust type name: the words of the files that define or implement it."""
    members = {}
    for path in files:
        if not path.endswith(".rs"):
            continue
        with open(os.path.join(root, path), encoding="utf-8") as handle:
            text = handle.read()
        types = set(re.findall(r"\b(?:struct|enum|trait|type)\s+([A-Z]\w*)", text))
        types.update(re.findall(r"\bimpl(?:<[^>]*>)?\s+(?:[\w:]+\s+for\s+)?([A-Z]\w*)", text))
        names = set(re.findall(r"\bfn\s+(\w+)", text))
        names.update(re.findall(r"^\s*([A-Z]\w*)\s*[({,]", text, re.M))
        names.update(re.findall(r"\b(?:const|type)\s+([A-Za-z_]\w*)", text))
        names.update(re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?([a-z_]\w*)\s*:[^:]", text, re.M))
        for type_name in types:
            members.setdefault(type_name, set()).update(names)
    return members


def unresolved(text, files, folders, words, members):
    missing = []
    for number, line in enumerate(text.split("\n"), 1):
        for token in re.findall(r"`([^`\n]+)`", line):
            token = token.strip()
            if " " in token or token.startswith("-"):
                continue
            looks_like_path = "/" in token or FILE_EXTENSION.search(token)
            if looks_like_path and PATH.match(token):
                if not path_exists(token, files, folders):
                    missing.append((number, token, "no such file or folder"))
            elif CODE_NAME.match(token):
                parts = token.removesuffix("()").split("::")
                absent = [part for part in parts if part not in words]
                if absent:
                    missing.append((number, token, "not in the sources: " + ", ".join(absent)))
                elif len(parts) >= 2 and parts[-2] in members and parts[-2][0].isupper():
                    if parts[-1] not in members[parts[-2]]:
                        missing.append((number, token, f"{parts[-2]} has no {parts[-1]}"))
    return missing


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    files = set(tracked_files(root))
    folders = {os.path.dirname(path) for path in files}
    for folder in list(folders):
        while folder:
            folder = os.path.dirname(folder)
            folders.add(folder)
    with open(os.path.join(root, "ARCHITECTURE.md"), encoding="utf-8") as handle:
        text = handle.read()
    words = source_words(root, files)
    missing = unresolved(text, files, folders, words, type_members(root, files))
    for number, token, why in missing:
        print(f"ARCHITECTURE.md:{number}: `{token}`: {why}")
    if missing:
        print(f"architecture check: {len(missing)} name(s) that do not resolve")
        return 1
    print("architecture check: every path and code name in ARCHITECTURE.md resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
