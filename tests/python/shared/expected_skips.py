"""The skips a Python ctest entry may have, checked after its pytest jobs.

ctest sees one exit status per entry, so a pytest suite that skipped everything would pass. Each
entry therefore counts the skips in its JUnit XML (every rank, every job) by reason, prints them
and compares them with its section of tests/python/expected-skips.txt; any difference (a new
reason, a count that moved, a reason that went away) fails the entry.

    expected_skips.py check ENTRY XML...     print and check (exit 1 on a difference)
    expected_skips.py show ENTRY XML...      print the entry's section as it is now

Reasons are compared after the variable parts are replaced: the home folder by $HOME, this
checkout by <source>, and a build tree's path by <build>.
"""

from __future__ import annotations

import os
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parents[3]
EXPECTED_FILE = SOURCE_DIR / "tests" / "python" / "expected-skips.txt"
_LINE = re.compile(r"^\s*(\S+)\s*\|\s*(\d+)\s*\|\s*(.+?)\s*$")


def normalize(reason: str, build_dir: str = "") -> str:
    reason = reason.strip()
    if reason.startswith("Skipped: "):
        reason = reason[len("Skipped: "):]
    if build_dir:
        reason = reason.replace(build_dir, "<build>")
    reason = reason.replace(str(SOURCE_DIR), "<source>")
    home = os.path.expanduser("~")
    if home not in ("", "/"):
        reason = reason.replace(home, "$HOME")
    return " ".join(reason.split())


def skips_in(xml_files: list[Path], build_dir: str = "") -> Counter:
    found: Counter = Counter()
    for f in xml_files:
        for case in ET.parse(f).getroot().iter("testcase"):
            for skipped in case.findall("skipped"):
                found[normalize(skipped.get("message", "") or skipped.text or "", build_dir)] += 1
    return found


def expected_for(entry: str, path: Path = EXPECTED_FILE) -> Counter:
    want: Counter = Counter()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise ValueError(f"{path}:{number}: not 'ENTRY | COUNT | REASON': {line!r}")
        if m.group(1) == entry:
            want[m.group(3)] += int(m.group(2))
    return want


def section(entry: str, found: Counter) -> list[str]:
    return [f"{entry} | {n} | {reason}" for reason, n in sorted(found.items())]


def check(entry: str, xml_files: list[Path], build_dir: str = "", path: Path = EXPECTED_FILE) -> tuple[bool, list[str]]:
    """(matches, lines to print)."""
    if not xml_files:
        return False, [f"skips: no JUnit XML for {entry}: nothing ran"]
    found, want = skips_in(xml_files, build_dir), expected_for(entry, path)
    total, expected_total = sum(found.values()), sum(want.values())
    lines = [f"skips: {total} in {len(xml_files)} JUnit file(s), {expected_total} expected "
             f"({path.relative_to(SOURCE_DIR) if path.is_relative_to(SOURCE_DIR) else path})"]
    lines += [f"  {n:4d}  {reason}" for reason, n in sorted(found.items())]
    if found == want:
        return True, lines
    lines.append(f"skips: FAILED: {entry}'s skips differ from its expected list:")
    for reason in sorted(set(found) | set(want)):
        if found[reason] != want[reason]:
            lines.append(f"  {reason!r}: {found[reason]} skipped, {want[reason]} expected")
    lines.append("  If the change is meant (a new test, a new version), replace the entry's lines in "
                 "the file with these and say why in the commit:")
    lines += [f"    {l}" for l in section(entry, found)]
    return False, lines


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in ("check", "show") or len(argv) < 3:
        print(__doc__)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    command, entry, files = argv[0], argv[1], [Path(a) for a in argv[2:]]
    build_dir = os.environ.get("KOROVOD_BUILD_DIR", "")
    if command == "show":
        print("\n".join(section(entry, skips_in(files, build_dir))))
        return 0
    ok, lines = check(entry, files, build_dir)
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
