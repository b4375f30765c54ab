"""expected_skips.py itself (ctest python.expected_skips_selftest): a suite that skips more, less,
or for another reason than its expected list fails; one that matches passes; no XML fails."""

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))
import expected_skips  # noqa: E402

XML = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="s" tests="3">
<testcase classname="a" name="t1"><skipped type="pytest.skip" message="no GPU">x</skipped></testcase>
<testcase classname="a" name="t2"><skipped type="pytest.skip" message="Skipped: no GPU">x</skipped></testcase>
<testcase classname="a" name="t3"><skipped type="pytest.skip" message="needs {home}/x">x</skipped></testcase>
<testcase classname="a" name="t4"/></testsuite></testsuites>"""


def run(expected: str, xml: bool = True) -> bool:
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "rank0.xml"
        f.write_text(XML.format(home=Path.home()))
        listing = Path(d) / "expected.txt"
        listing.write_text(expected)
        ok, lines = expected_skips.check("entry", [f] if xml else [], path=listing)
        print("\n".join(lines))
        return ok


MATCH = "# comment\nentry | 2 | no GPU\nentry | 1 | needs $HOME/x\nother | 5 | anything\n"
assert run(MATCH), "the matching list must pass"
assert not run("entry | 2 | no GPU\n"), "an unexpected reason must fail"
assert not run("entry | 3 | no GPU\nentry | 1 | needs $HOME/x\n"), "a count that moved must fail"
assert not run(MATCH + "entry | 1 | gone\n"), "a reason that went away must fail"
assert not run(""), "skips with no expected list must fail"
assert not run(MATCH, xml=False), "no XML (nothing ran) must fail"
print("expected_skips selftest: passed")
