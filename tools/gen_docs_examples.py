"""Rewrite the output shown under every `$ forensics ...` example of README.md and docs/*.md from a fresh run.

Each page runs as tests/docs/test_readme.py runs it (its commands in order, in a copy of dumps/, at the pages' width,
without colour; commands with placeholders in CAPITALS are skipped) and the lines under each `$` example are
replaced by what the command printed. Review the diff before committing: the test then checks the pages.

    python tools/gen_docs_examples.py                  # every page
    python tools/gen_docs_examples.py docs/csr.md      # some pages
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.docs.test_readme import PAGES, _normalise, _Sandbox, examples, is_placeholder  # noqa: E402


def regenerate(page: Path) -> int:
    """Rewrite one page's shown outputs; returns how many examples changed."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found = examples("\n".join(lines), str(page.relative_to(REPO)))
    changed = []
    with tempfile.TemporaryDirectory() as tmp:
        sandbox = _Sandbox(Path(tmp))
        for example in found:
            if is_placeholder(example.command):
                continue
            result = sandbox.run(example.command)
            if result.returncode not in (0, 1):
                print(f"{page.name}:{example.line}: `{example.command}` exited {result.returncode}: "
                      f"{result.stderr.strip()}", file=sys.stderr)
            if example.expected is None:
                continue
            shown = _normalise(result.stdout + result.stderr)
            if shown != _normalise(example.expected):
                changed.append((example.out_start, len(example.lines), shown.split("\n")))
    for start, count, new in reversed(changed):
        lines[start - 1:start - 1 + count] = new
    if changed:
        page.write_text("\n".join(lines), encoding="utf-8")
    return len(changed)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", type=Path, help="pages to rewrite (default: README.md and docs/*.md)")
    args = parser.parse_args(argv)
    for page in [p.resolve() for p in args.pages] or PAGES:
        print(f"{page.relative_to(REPO)}: {regenerate(page)} example(s) rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
