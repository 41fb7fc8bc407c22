"""import, fingerprint, verify, demo: what a driver logs of its buffers, checked; the story."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.core import exitcodes
from forensics.core.errors import InputError
from forensics.reports.base import Report, _slice, spellings


class ImportReport(Report):
    def renderables(self) -> list:
        from forensics.render.evidence import render_import

        return render_import(self.result)


@spellings()
def import_(text, *, output, format: str = "auto", gap_fill: int | None = None,  # noqa: A002
            tag: str | None = None) -> ImportReport:
    """`forensics import TEXT -o OUT.bin`: a text hex dump (WinDbg d*, xxd, hexdump -C, od, plain hex, a driver's
    own hex rows) to bytes; `tag` picks the buffer among a driver's rows (`output`, `bitstream`, `DPC-OUT`...)."""
    from forensics.io.textdump import import_text_dump

    return ImportReport("import", import_text_dump(os.fspath(text), os.fspath(output), fmt=format,
                                                   gap_fill=gap_fill, tag=tag))


class FingerprintReport(Report):
    def lines(self) -> list[str]:
        """The driver-style lines, exactly (a driver's log is compared with them character by character)."""
        from forensics.render.evidence import render_fingerprint

        return render_fingerprint(self.result)

    def renderables(self) -> list:
        from rich.text import Text

        return [Text(line, no_wrap=True, overflow="ignore") for line in self.lines()]


@spellings()
def fingerprint(file, *, page: int = 4096, tag: str | None = None, offset: int | None = None,
                length: int | None = None, gap_fill: int | None = None, progress=None) -> FingerprintReport:
    """`forensics fingerprint FILE`: what a driver can log for a buffer (pages' first8/last8, xor-fold, size,
    CRC32, HEAD/MID/TAIL, the [FP] line)."""
    from forensics.io.dump import open_dump
    from forensics.buffer.fingerprint import fingerprint_dump

    dump = open_dump(file, allow_empty=True, use_sidecar=False, **_slice(offset, length, gap_fill)[0])
    return FingerprintReport("fingerprint", fingerprint_dump(dump, page_size=page, tag=tag, progress=progress),
                             rows_key="pages")


class VerifyReport(Report):
    def renderables(self) -> list:
        from forensics.render.evidence import render_verify

        return render_verify(self.result)


@spellings()
def verify(log, *files, buffer=None, pattern: str | None = None, page: int = 4096, offset: int | None = None,
           length: int | None = None, gap_fill: int | None = None) -> VerifyReport:
    """`forensics verify LOG FILE...`: every fingerprint a driver logged, checked against the files; exit code
    1 when one differs. `buffer` is a list of (tag, file) pairs."""
    from forensics.buffer.fingerprint import verify_log

    result = verify_log(os.fspath(log), [os.fspath(f) for f in files], buffers=dict(buffer or ()), page_size=page,
                        pattern=pattern, **_slice(offset, length, gap_fill)[0])
    return VerifyReport("verify", result, rows_key="checks", judgement=result.judgement)


# (question, expected exit code, command, positional arguments, options), in the README story's order.
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

    def to_dict(self) -> dict:
        return {"steps": [{k: v for k, v in step.items() if k != "report"} for step in self.steps],
                "ok": all(step["ok"] for step in self.steps)}


class DemoReport(Report):
    def renderables(self) -> list:
        from rich.text import Text

        out = []
        for step in self.result.steps:
            if step["step"]:
                out.append(Text("\n" + step["step"]))
            out.append(Text(f"\n$ {step['command']}", style="bold"))
            out.extend(step["report"].renderables())
            if not step["ok"]:
                out.append(Text(f"demo: expected exit {step['expected_exit']} from '{step['command']}', "
                                f"got {step['exit']}", style="bold red"))
        return out


@spellings()
def demo(root=None) -> DemoReport:
    """`forensics demo`: the story of the README on the bundled dumps, step by step; exit code 1 when a step does not
    end as the story expects. `root` is the directory holding `dumps/` (default: the repository of this file)."""
    from pathlib import Path

    root = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    if not (root / "dumps" / "ours" / "convert_scores.bin").is_file():
        raise InputError("the bundled dumps (dumps/ours, dumps/libedgetpu, dumps/broken) are not here: run the "
                         "demo from a clone of the repository", str(root / "dumps"))
    here = Path.cwd().resolve() == root.resolve()

    def at(path: str) -> str:  # as the README writes it when run from the repository root
        return path if here else str(root / path)

    from forensics import reports  # the package: every command's report function by name

    steps = []
    for question, expected, command, positional, opts in DEMO_STEPS:
        paths = [at(p) for p in positional]
        kwargs = {k: (at(v) if k == "deps" else v) for k, v in opts.items()}
        report = getattr(reports, command)(*paths, **kwargs)
        steps.append({"step": question, "command": _demo_command(command, positional, opts),
                      "expected_exit": expected, "exit": report.exit_code, "ok": report.exit_code == expected,
                      "report": report})
    result = DemoDocument(tuple(steps))
    return DemoReport("demo", result, exitcodes.SAME if result.to_dict()["ok"] else exitcodes.DIFFERENT)
