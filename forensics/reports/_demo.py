"""demo: the README's story, step by step, on the dumps that ship with the package (forensics/data/dumps)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from forensics.core import exitcodes
from forensics.core.errors import InputError
from forensics.reports.base import Report, spellings

# (question, expected exit code, command, positional arguments, options), in the README story's order; paths are
# as the README writes them, relative to the folder that holds dumps/.
DEMO_STEPS = (
    ("1. Are the inputs even the same?", 0, "crc", ("dumps/libedgetpu/input.bin", "dumps/ours/input.bin"), {}),
    ("2. Did the chip write the same scores through both drivers?", 0, "diff",
     ("dumps/libedgetpu/convert_scores.bin", "dumps/ours/convert_scores.bin"), {}),
    ("3. The first 256 bytes repeat one record. Which anchors do not?", 0, "anchors",
     ("dumps/ours/convert_scores.bin",), {"nonuniform": True, "deps": "dumps/face_ssd"}),
    ("4. Decode them as TFLite_Detection_PostProcess would (anchors + options in dumps/face_ssd)", 0, "decode",
     ("dumps/ours/Squeeze1.bin", "dumps/ours/convert_scores.bin"), {"deps": "dumps/face_ssd", "image_size": (640, 480)}),
    ("5. What a real bug looks like: a DMA that stopped early (0xCC prefill left) and a row-stride bug", 1, "diff",
     ("dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin"), {"limit": 3}),
    (None, 1, "coverage", ("dumps/broken/convert_scores.bin",), {"sentinel": b"\xcc"}),
    (None, 1, "crc", ("dumps/libedgetpu/input.bin", "dumps/broken/input.bin"), {"chunk": 960}),
    (None, 1, "diagnose", ("dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin"), {}),
)

# What the package ships of dumps/ (pyproject.toml's package data; dumps/make_*.py write both copies and the
# tests check that they are equal): the story's three drivers, the face SSD's deps and tail model, the link files.
BUNDLED = ("libedgetpu", "ours", "broken", "face_ssd", "link")


def story_dumps() -> Path:
    """The folder of the dumps that ship with forensics (libedgetpu/, ours/, broken/, face_ssd/, link/): the
    README's `dumps/`, wherever the package is installed. `reports.crc(story_dumps() / "ours" / "input.bin")`."""
    from importlib import resources

    folder = Path(os.fspath(resources.files("forensics") / "data" / "dumps"))
    if not (folder / "ours" / "convert_scores.bin").is_file():  # a zip import, or an install without its data
        raise InputError("the dumps that ship with forensics are not installed beside it (reinstall the package "
                         "from its wheel)", str(folder))
    return folder


class _working_in:  # noqa: N801 - a context manager
    """The current directory changed to `directory` for the block, and back after it (whatever happens)."""

    def __init__(self, directory: Path):
        self.directory, self.previous = directory, None

    def __enter__(self):
        self.previous = os.getcwd()
        os.chdir(self.directory)

    def __exit__(self, *exc):
        os.chdir(self.previous)


def _demo_command(command: str, positional, opts: dict) -> str:
    words = ["forensics", command]
    for key, value in opts.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            words.append(flag)
        elif isinstance(value, tuple):
            words += [flag, "x".join(map(str, value))]
        elif isinstance(value, bytes):
            words += [flag, value.hex()]
        else:
            words += [flag, str(value)]
    return " ".join(words[:2] + list(positional) + words[2:])


@dataclass(frozen=True)
class DemoDocument:
    steps: tuple
    directory: str    # where the commands run as shown: the folder that holds dumps/
    here: bool        # the current directory is that folder (nothing to change to)

    def to_dict(self) -> dict:
        return {"directory": self.directory,
                "steps": [{k: v for k, v in step.items() if k != "report"} for step in self.steps],
                "ok": all(step["ok"] for step in self.steps)}


class DemoReport(Report):
    def renderables(self) -> list:
        from forensics.render.demo import render_demo

        return render_demo(self.result)


@spellings()
def demo(*, dumps=None) -> DemoReport:
    """`forensics demo`: the README's story on the dumps that ship with forensics (story_dumps()), or on the
    copy in `dumps` (a clone's dumps/), step by step; exit code 1 when a step does not end as the story expects.
    The steps run from the folder that holds the dumps (the current directory is changed back afterwards), so that
    each report names the files as the command shown does."""
    from forensics import reports  # the package: every command's report function by name

    folder = Path(dumps).resolve() if dumps is not None else story_dumps()
    if not (folder / "ours" / "convert_scores.bin").is_file():
        raise InputError("holds no story (libedgetpu/, ours/, broken/ and face_ssd/ as in the repository's dumps/)",
                         os.fspath(dumps))
    base = folder.parent
    here = Path.cwd().resolve() == base

    def shown(path: str) -> str:  # dumps/X as the README writes it -> as it names the folder the demo runs on
        return f"{folder.name}/{path.split('/', 1)[1]}"

    steps = []
    with _working_in(base):  # the commands run as shown, from the folder that holds the dumps: their tables
        for question, expected, command, positional, opts in DEMO_STEPS:  # name the files as the README does
            positional = [shown(p) for p in positional]
            opts = {k: (shown(v) if k == "deps" else v) for k, v in opts.items()}
            report = getattr(reports, command)(*positional, **opts)
            steps.append({"step": question, "command": _demo_command(command, positional, opts),
                          "expected_exit": expected, "exit": report.exit_code, "ok": report.exit_code == expected,
                          "report": report})
    result = DemoDocument(tuple(steps), os.fspath(base), here)
    return DemoReport("demo", result, exitcodes.SAME if result.to_dict()["ok"] else exitcodes.DIFFERENT)
