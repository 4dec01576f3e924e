#!/usr/bin/env python3
"""Checks that every code snippet in docs/ marked with
<!-- snippet: PATH#MARKER --> equals the code between `//! [MARKER]` lines in PATH,
so the docs show only code that compiles. Exits non-zero naming each mismatch."""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
marker = re.compile(r"<!-- snippet: (\S+)#([^>]+?) -->\s*```\w*\n(.*?)```", re.S)
bad = 0
count = 0
for doc in sorted((root / "docs").glob("*.md")):
    for m in marker.finditer(doc.read_text()):
        count += 1
        src, name, shown = root / m.group(1), m.group(2).strip(), m.group(3)
        text = src.read_text() if src.exists() else ""
        found = re.search(r"//! \[" + re.escape(name) + r"\]\n(.*?)//! \[" + re.escape(name) + r"\]", text, re.S)
        if not found:
            print(f"{doc}: snippet {m.group(1)}#{name}: marker not found in {src}")
            bad += 1
        elif found.group(1) != shown:
            print(f"{doc}: snippet {m.group(1)}#{name} differs from the code in {src}")
            bad += 1
print(f"{count} snippets checked, {bad} mismatched")
sys.exit(1 if bad or count == 0 else 0)
