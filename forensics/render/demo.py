"""Text for `forensics demo`: each step's question, the command as a reader would type it, its tables."""

from __future__ import annotations

from rich.text import Text

from forensics.render.style import paste


def render_demo(result) -> list:
    out = []
    if not result.here:  # the commands name dumps/ from the folder that holds it: say where that is
        out += [Text("The commands below run from the folder of the dumps that ship with forensics:"),
                paste(f"cd {_quoted(result.directory)}")]
    for step in result.steps:
        if step["step"]:
            out.append(Text("\n" + step["step"]))
        out += [Text(""), paste(step["command"])]
        out.extend(step["report"].renderables())
        if not step["ok"]:
            out.append(Text(f"demo: expected exit {step['expected_exit']} from '{step['command']}', "
                            f"got {step['exit']}", style="bold red"))
    return out


def _quoted(path: str) -> str:
    """A path as a shell (sh, cmd, PowerShell) takes it as one word."""
    return f'"{path}"' if any(c.isspace() or c in "'\"&;()$`" for c in path) else path
