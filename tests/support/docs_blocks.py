#!/usr/bin/env python3
"""Splits Markdown docs into their fenced blocks and checks the markers that keep a block from
being run by docs-commands.

For each DOC it writes OUT/<doc path>/NNN.{sh,yaml} and NNN.meta, one line "LINE KIND DETAIL":
KIND is run (an unmarked shell or YAML block), cluster-only, gpu-only, registry-only, run-by,
run-alike, long-running, placeholders, untagged (a fence with no language: an error) or other (a
language the checker does not run: python, text, json ...; not written). A run-by or run-alike
DETAIL is "ok NAME" or "error: why". The marker is on the last non-blank line before the fence:

  (cluster-only)                                      needs a real cluster (nodes, GPUs, images)
  (GPU machine only)                                  needs an NVIDIA GPU
  (with a registry only)                              pulls or pushes images
  (run by the test NAME)                              ctest entry NAME runs the block as written
  (run with flags of its own by the test NAME)        NAME runs the same command, adding flags
  (long-running: not run by the tests)                a benchmark, a full training run, a suite
  (placeholders: not run by the tests)                names the reader replaces (train.py, node1)

run-by is verified against the build tree's ctest listing: NAME must be exactly one entry, and
the block's first command, or the doc's own path (the test reads the block out of the doc), must
appear in that entry's command or in a file its command names, with the source and build
directories' prefixes dropped; a block whose first command is `ctest ... -R RE` may instead
name an entry RE matches. run-alike asks that the first source-tree file the block names (the
script it runs, or a manifest: examples/pi/pi.yaml) appears there, or its file name is an
argument of the entry's command.

With --after MARKER and one DOC it only prints the body of the first fenced block after the first
line that contains MARKER (indentation of a block inside a list item removed), so that a test
runs exactly the commands the docs give users (tests/python/check-pip-install, the fresh-Debian
pip test); no such block is an error.
"""
import argparse
import os
import re
import sys

SHELL = {"sh": "sh", "bash": "sh", "shell": "sh", "console": "sh", "yaml": "yaml", "yml": "yaml"}
MARKERS = [
    (re.compile(r"\(cluster-only\)"), "cluster-only"),
    (re.compile(r"\(GPU machine only\)"), "gpu-only"),
    (re.compile(r"\(with a registry only\)"), "registry-only"),
    (re.compile(r"\(run by the test ([^\s)]+)\)"), "run-by"),
    (re.compile(r"\(run with flags of its own by the test ([^\s)]+)\)"), "run-alike"),
    (re.compile(r"\(long-running: not run by the tests\)"), "long-running"),
    (re.compile(r"\(placeholders: not run by the tests\)"), "placeholders"),
]


def blocks(path):
    """Yields (line of the first body line, language, body lines, last text line before)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i, last_text = 0, ""
    while i < len(lines):
        m = re.match(r"^(\s*)```\s*([A-Za-z0-9_-]*)", lines[i])
        if not m:
            if lines[i].strip():
                last_text = lines[i]
            i += 1
            continue
        indent, lang = m.group(1), m.group(2).lower()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        yield start, lang, body, last_text
        last_text = ""


def ctest_entries(listing):
    """{name: command} from `ctest -N -V` output."""
    commands, names = {}, {}
    for line in listing.split("\n"):
        m = re.match(r"^(\d+): Test command: (.*)$", line)
        if m:
            commands[m.group(1)] = m.group(2)
        m = re.match(r"^\s*Test\s+#(\d+): (\S+)\s*$", line)
        if m:
            names[m.group(1)] = m.group(2)
    return {name: commands.get(num, "") for num, name in names.items()}


def squeeze(text):
    return " ".join(text.split())


def first_command(body):
    for line in body:
        s = line.strip()
        if s and not s.startswith("#"):
            return squeeze(re.sub(r"\s+#.*$", "", s).rstrip("\\"))
    return ""


def haystack(command, root, build):
    """The entry's command and the text of the source files it names, prefixes dropped."""
    def relative(text):
        return text.replace(build + "/", "build/").replace(root + "/", "")
    command = relative(command.replace('"', ""))
    texts = [command]
    for token in command.split():
        path = os.path.join(root, token)
        if not token.startswith("build/") and os.path.isfile(path) and os.path.getsize(path) < 1 << 20:
            try:
                texts.append(relative(squeeze(open(path, encoding="utf-8").read())))
            except UnicodeDecodeError:
                pass
    return texts


def verify(kind, name, body, doc_rel, entries, root, build):
    if entries is None:
        return "error: no build tree to look the test up in (set KOROVOD_BUILD_DIR)"
    if name not in entries:
        return f"error: no ctest entry named {name} in {build}"
    texts = haystack(entries[name], root, build)
    cmd = first_command(body)
    if kind == "run-by":
        m = re.match(r"^ctest .*-R\s+'?([^'\s]+)'?", cmd)
        if m and re.search(m.group(1), name):
            return f"ok {name}"
        if cmd and any(cmd in t for t in texts):
            return f"ok {name}"
        if any(doc_rel in t for t in texts[1:]):
            return f"ok {name}"
        return f"error: neither its first command ({cmd}) nor {doc_rel} is in {name}'s command or the files it names"
    words = " ".join(re.sub(r"\s+#.*$", "", line) for line in body).replace('"', " ").split()
    paths = [w for w in words if not w.startswith("build") and os.path.isfile(os.path.join(root, w))]
    if not paths:
        return f"error: the block names no file of the source tree to find in {name}"
    # Its first file (the script it runs, or the manifest) counts when it is in the entry's
    # command or files, or its file name is an argument of the command.
    if not any(paths[0] in t for t in texts) and os.path.basename(paths[0]) not in texts[0].split():
        return f"error: {name} does not name {paths[0]}"
    return f"ok {name}"


def split(doc, out, root, build, entries):
    doc_rel = os.path.relpath(doc, root)
    os.makedirs(out, exist_ok=True)
    for n, (line, lang, body, last_text) in enumerate(blocks(doc), 1):
        kind = SHELL.get(lang)
        if not lang:
            mark, detail = "untagged", "-"
        elif not kind:
            continue
        else:
            mark, detail = "run", "-"
            for pattern, marker in MARKERS:
                m = pattern.search(last_text)
                if m:
                    mark = marker
                    if marker in ("run-by", "run-alike"):
                        detail = verify(marker, m.group(1), body, doc_rel, entries, root, build)
                    break
            with open(os.path.join(out, f"{n:03d}.{kind}"), "w", encoding="utf-8") as f:
                f.write("\n".join(body) + "\n")
        with open(os.path.join(out, f"{n:03d}.meta"), "w", encoding="utf-8") as f:
            f.write(f"{line} {mark} {detail}\n")


def block_after(path, marker):
    """The body of the first fenced block after the first line holding marker, or None."""
    lines = open(path, encoding="utf-8").read().split("\n")
    at = next((i for i, line in enumerate(lines) if marker in line), None)
    if at is None:
        return None
    return next((body for start, _, body, _ in blocks(path) if start > at + 1), None)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--after", metavar="MARKER", help="print the block after MARKER in the one DOC")
    p.add_argument("--root", help="the source tree (required without --after)")
    p.add_argument("--out", help="where the blocks go, one folder per doc (required without --after)")
    p.add_argument("--build-dir", help="the build tree whose ctest entries run-by markers name")
    p.add_argument("--ctest-listing", help="a file holding `ctest -N -V` of --build-dir")
    p.add_argument("docs", nargs="+")
    a = p.parse_args()
    if a.after is not None:
        if len(a.docs) != 1:
            p.error("--after reads exactly one DOC")
        body = block_after(a.docs[0], a.after)
        if body is None:
            print(f"docs_blocks: no fenced block after \"{a.after}\" in {a.docs[0]}", file=sys.stderr)
            return 1
        print("\n".join(body))
        return 0
    if not a.root or not a.out:
        p.error("--root and --out are required (or --after MARKER)")
    root = os.path.realpath(a.root)
    build = os.path.realpath(a.build_dir) if a.build_dir else ""
    entries = ctest_entries(open(a.ctest_listing).read()) if a.ctest_listing else None
    for doc in a.docs:
        split(doc, os.path.join(a.out, os.path.relpath(doc, root)), root, build, entries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
