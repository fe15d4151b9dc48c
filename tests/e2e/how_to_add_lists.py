#!/usr/bin/env python3
"""The "how to add" lists of docs/architecture.md stay true.

Usage: how_to_add_lists.py SOURCE_DIR

Every file the section "Where things go" names in backquotes exists (a
name with <name> in it, a file to create, must match an existing one of
its pattern: src/sizing/rules/<name>_rule.cpp matches the rules there),
and every test it names (Suite.Name, or a test name alone) is a TEST of
tests/. A file renamed or a test removed without the list following fails
here, naming the entry.
"""

import glob
import os
import re
import sys

SOURCE = sys.argv[1]
SECTION = "## Where things go"


def section_text():
    with open(os.path.join(SOURCE, "docs", "architecture.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start:] if end < 0 else text[start:end]


def test_names():
    names = set()
    for path in glob.glob(os.path.join(SOURCE, "tests", "**", "*_test.cpp"), recursive=True):
        with open(path, encoding="utf-8") as f:
            for suite, name in re.findall(r"\bTEST(?:_F|_P)?\(\s*(\w+),\s*(\w+)\)", f.read()):
                names.add(f"{suite}.{name}")
                names.add(name)
    return names


def main():
    quoted = re.findall(r"`([^`\n]+)`", section_text())
    tests = test_names()
    failures, files, named_tests = [], 0, 0
    for entry in quoted:
        if re.fullmatch(r"[\w./<>-]+/[\w.<>-]+\.(cpp|h|md|yaml|json|py|txt)", entry):
            files += 1
            pattern = re.sub(r"<\w+>", "*", entry)
            if not glob.glob(os.path.join(SOURCE, pattern)):
                failures.append(f"`{entry}` names no file of the tree")
        elif re.fullmatch(r"(\w+\.)?[A-Z]\w*[a-z]\w*[A-Z]\w+", entry) and ("." in entry or len(entry) > 30):
            named_tests += 1
            if entry not in tests:
                failures.append(f"`{entry}` is no TEST of tests/")
    if files < 10 or named_tests < 3:
        failures.append(f"found only {files} files and {named_tests} tests in \"{SECTION}\": was it renamed?")
    for failure in failures:
        print(f"docs/architecture.md \"{SECTION[3:]}\": {failure}", file=sys.stderr)
    print(f"how-to-add lists: {files} files and {named_tests} tests named, "
          f"{'all present' if not failures else str(len(failures)) + ' missing'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
