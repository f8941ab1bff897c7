#!/usr/bin/env python3
"""Check that every document the sources cite exists.

Every `docs/...` path cited in crates/, docs/, tools/, python/ and README.md must be a file or
directory of the repository, and every section cited of docs/algorithms.md (`§N`, `§N.M`, in
runs such as `§7.2 and §7.4` or `§5.1–§5.2`, and `Appendix A`) must be one of its headings.
Exits non-zero and lists every broken citation otherwise.

Usage: python3 tools/docs/check_citations.py [--root DIR]
"""

import argparse
import pathlib
import re
import subprocess
import sys

SCANNED = ["crates", "docs", "tools", "python", "README.md"]
ALGORITHMS = "docs/algorithms.md"
# A path under docs/ not preceded by a path or word character (so `../docs/x`, `foo/docs/x`
# and URLs are left alone).
DOC_PATH = re.compile(r"(?<![\w./-])docs/[\w./-]*[\w/]")
SECTION = r"§\d+(?:\.\d+)*"
# A citation of docs/algorithms.md and the run of sections that follows it.
ALGORITHMS_CITATION = re.compile(
    re.escape(ALGORITHMS)
    + r"`?(?P<run>\s+(?:"
    + SECTION
    + r"|Appendix [A-Z])(?:\s*(?:,|and|–|-)\s*(?:"
    + SECTION
    + r"|Appendix [A-Z]))*)?"
)
CITED_SECTION = re.compile(SECTION + r"|Appendix [A-Z]")
HEADING = re.compile(r"^#+\s+(?P<number>\d+(?:\.\d+)*|Appendix [A-Z])\b")


def headings(text):
    """The section numbers (`1`, `1.4`) and appendices (`Appendix A`) of a Markdown text."""
    found = set()
    for line in text.splitlines():
        match = HEADING.match(line)
        if match:
            found.add(match.group("number"))
    return found


def scanned_files(root):
    """The tracked text files under the scanned paths."""
    listed = subprocess.run(
        ["git", "ls-files", "--", *SCANNED],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for name in listed:
        path = root / name
        try:
            yield name, path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue


def broken_citations(root):
    """Every broken citation, as `file:line: message`."""
    sections = headings((root / ALGORITHMS).read_text(encoding="utf-8"))
    broken = []
    for name, text in scanned_files(root):
        for number, line in enumerate(text.splitlines(), start=1):
            for match in DOC_PATH.finditer(line):
                cited = match.group(0).rstrip(".")
                if not (root / cited).exists():
                    broken.append(f"{name}:{number}: {cited} does not exist")
            for match in ALGORITHMS_CITATION.finditer(line):
                for section in CITED_SECTION.findall(match.group("run") or ""):
                    if section.removeprefix("§") not in sections:
                        broken.append(
                            f"{name}:{number}: {ALGORITHMS} has no heading {section}"
                        )
    return broken


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).parents[2])
    args = parser.parse_args()
    broken = broken_citations(args.root.resolve())
    for line in broken:
        print(line, file=sys.stderr)
    if broken:
        print(f"{len(broken)} broken citations", file=sys.stderr)
        return 1
    print("every cited document and section exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
