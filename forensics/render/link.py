"""Tables for `forensics link`: the driver's checklist, what a link wrote, and a checked dump's one-line findings."""

from __future__ import annotations

from rich.text import Text

from forensics.link.bitstream import finding_text
from forensics.render.model import short_name
from forensics.render.style import VERDICT_STYLES, titled_table, wrote
from forensics.core.verdict import Verdict




def _name(name) -> str:
    return short_name(str(name)) if name else "-"


def _desc(desc: str) -> str:
    """BASE_ADDRESS_INPUT_ACTIVATION -> INPUT_ACTIVATION (--json has the full executable.fbs name)."""
    return desc.removeprefix("BASE_ADDRESS_")


def _field(f: dict) -> str:
    """INPUT_ACTIVATION LOWER_32BIT, the way executable.fbs names a field's meta."""
    return f"{_desc(f['desc'])} {f['position']}"


def render_link(d: dict) -> list:
    if "order" in d:
        return render_plan(d)
    if "written" in d:
        return render_written(d)
    return render_check(d)


def render_plan(d: dict) -> list:
    out = [Text(f"{d['model']}: {len(d['executables'])} executable(s)")]
    order = titled_table("The order libedgetpu runs them", ("step", "right"), ("executable", "right"), ("type", "left"),
                   ("when", "left"))
    for i, step in enumerate(d["order"], 1):
        order.add_row(str(i), str(step["executable"]), step["type"], step["when"])
    out.append(order)
    for exe in d["executables"]:
        title = (f"Executable {exe['index']} {exe['type']}, token {exe['parameter_caching_token']}, batch "
                 f"{exe['batch_size']}, bitstream "
                 + ", ".join(f"{b['index']} {b['size']:,} B" for b in exe["bitstreams"]))
        out.append(Text(title))
        buffers = titled_table(None, ("buffer", "left"), ("name", "left"), ("bytes", "right"), ("padded", "right"),
                         ("crc32", "left"))
        for kind in ("input", "output"):
            for layer in exe["buffers"][kind]:
                buffers.add_row(kind, _name(layer["name"]), f"{layer['size_bytes']:,}",
                                f"{layer['padded_size_bytes']:,}", "")
        if exe["buffers"]["parameter"]:
            p = exe["buffers"]["parameter"]
            buffers.add_row("parameter", "-", f"{p['size_bytes']:,}", "", p["crc32"])
        if exe["buffers"]["scratch"]:
            buffers.add_row("scratch", "-", f"{exe['buffers']['scratch']['size_bytes']:,}", "", "")
        out.append(buffers)
        for b in exe["bitstreams"]:
            fields = titled_table(f"Bitstream {b['index']}: the fields a driver links", ("offset_bit", "right"),
                            ("field", "left"), ("name", "left"), ("batch", "right"), ("takes", "left"))
            for f in b["fields"]:
                takes = f["buffer"] + ("" if f["linked"] else " (not mapped)")
                fields.add_row(str(f["offset_bit"]), _field(f), _name(f["name"]), str(f["batch"]), takes)
            out.append(fields)
    return out


def render_written(d: dict) -> list:
    exe = d["executable"]
    if d["what"] == "parameters":
        return [Text(f"parameters of executable {exe['index']} {exe['type']}: {d['size']:,} bytes, crc32 "
                     f"{d['crc32']}"), Text(wrote(d["written"]))]
    table = titled_table(f"Linked executable {exe['index']} {exe['type']} bitstream {d['bitstream']}: {d['size']:,} bytes, "
                   f"crc32 {d['crc32']}", ("offset_bit", "right"), ("buffer", "left"), ("name", "left"),
                   ("batch", "right"), ("position", "left"), ("value", "left"))
    for f in d["fields"]:
        table.add_row(str(f["offset_bit"]), f["buffer"], _name(f["name"]), str(f["batch"]), f["position"],
                      f["value"])
    for f in d["unlinked"]:
        table.add_row(str(f["offset_bit"]), f["buffer"], _name(f["name"]), str(f["batch"]), f["position"],
                      "left as compiled")
    return [table, Text(wrote(d["written"]))]


def render_check(d: dict) -> list:
    verdict = d["verdict"]
    style = VERDICT_STYLES.get(verdict, "bold")
    if verdict == Verdict.FOREIGN:
        return [Text.assemble((verdict, style), f": {d['size']:,} bytes that are none of this model's instruction "
                                                "bitstreams or parameter buffers")]
    exe = d["executable"]
    what = (f"the parameters of executable {exe['index']} {exe['type']}" if d["kind"] == "parameters"
            else f"executable {exe['index']} {exe['type']} bitstream {d['bitstream']}")
    out = [Text.assemble((verdict, style), f": {what} ({d['size']:,} bytes)")]
    if d.get("addresses"):
        table = titled_table("Addresses", ("buffer", "left"), ("name", "left"), ("address", "left"))
        a = d["addresses"]
        for kind in ("input", "output"):
            for name, per_batch in a[kind].items():
                table.add_row(kind, _name(name), ", ".join(x or "unlinked" for x in per_batch))
        for kind in ("parameter", "scratch"):
            state = [f["state"] for f in d["fields"] if f["buffer"] == kind]
            if state:
                shown = a[kind] or ("not mapped" if "unused" in state else "unlinked")
                table.add_row(kind, "-", shown)
        out.append(table)
    for f in d["findings"]:
        out.append(Text("  " + finding_text(f)))
    diag = d.get("diagnosis")
    if diag:
        out.append(Text(f"  diagnosis (model parameters A, dump B): {diag.get('verdict')}"
                        + "".join(f"; {x.get('evidence') or x.get('kind', '')}"
                                  for x in diag.get("findings", [])[:3])))
    return out
