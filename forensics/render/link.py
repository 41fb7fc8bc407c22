"""Tables for `forensics link`: the driver's checklist, what a link wrote, and a checked dump's one-line findings."""

from __future__ import annotations

from rich.text import Text

from forensics.link.describe import finding_text, note_text, short
from forensics.render.line import judgement_line
from forensics.render.style import titled_table, wrote


def _name(name) -> str:
    """A layer's short form: the one `link --input/--output/--expect` take back (forensics.link.describe)."""
    return short(name)


def _desc(desc: str) -> str:
    """BASE_ADDRESS_INPUT_ACTIVATION -> INPUT_ACTIVATION (--json has the full executable.fbs name)."""
    return desc.removeprefix("BASE_ADDRESS_")


def _field(f: dict) -> str:
    """INPUT_ACTIVATION LOWER_32BIT, the way executable.fbs names a field's meta."""
    return f"{_desc(f['desc'])} {f['position']}"


def render_link(d: dict, judgement=None) -> list:
    if "order" in d:
        return render_plan(d)
    if "written" in d:
        return render_written(d)
    return render_check(d, judgement)


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
        buffers = titled_table(None, ("buffer", "left"), ("index", "right"), ("name", "left"), ("bytes", "right"),
                               ("padded", "right"), ("crc32", "left"))
        for kind in ("input", "output"):  # the index and the short name are what --input / --output take
            for i, layer in enumerate(exe["buffers"][kind]):
                buffers.add_row(kind, str(i), _name(layer["name"]), f"{layer['size_bytes']:,}",
                                f"{layer['padded_size_bytes']:,}", "")
        if exe["buffers"]["parameter"]:
            p = exe["buffers"]["parameter"]
            buffers.add_row("parameter", "", "-", f"{p['size_bytes']:,}", "", p["crc32"])
        if exe["buffers"]["scratch"]:
            buffers.add_row("scratch", "", "-", f"{exe['buffers']['scratch']['size_bytes']:,}", "", "")
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


def render_check(d: dict, judgement) -> list:
    """The judgement's line as it is, then the addresses each buffer holds, each finding's line and each note."""
    out = [judgement_line(judgement)]
    if d.get("buffers"):
        batches = any(b["batch"] for b in d["buffers"])
        columns = [("buffer", "left"), ("name", "left")] + ([("batch", "right")] if batches else []) + \
            [("address", "left"), ("the chip reads", "left")]
        table = titled_table(f"Addresses in the {d['size']:,}-byte bitstream", *columns)
        order = {"input": 0, "output": 1, "parameter": 2, "scratch": 3}
        for b in sorted(d["buffers"], key=lambda b: order[b["buffer"]]):  # stable: the patch table's order within
            if b["state"] == "missing":
                continue
            shown = {"unlinked": "unlinked", "unused": "not mapped", "inconsistent": "inconsistent"}.get(
                b["state"], b["address"])
            if b["state"] == "linked" and not b["mapped"]:
                shown += " (not mapped)"
            reads = b["reads"] if b["state"] == "linked" and b["reads"] != b["address"] else ""
            name = _name(b["name"]) if b["buffer"] in ("input", "output") else "-"
            table.add_row(b["buffer"], name, *([str(b["batch"])] if batches else []), shown, reads)
        out.append(table)
    for f in d["findings"]:
        out.append(Text("  " + finding_text(f)))
    for n in d.get("notes", ()):
        out.append(Text("  " + note_text(n)))
    diag = d.get("diagnosis")
    if diag:
        out.append(Text(f"  diagnosis (model parameters A, dump B): {diag.get('verdict')}"
                        + "".join(f"; {x.get('evidence') or x.get('kind', '')}"
                                  for x in diag.get("findings", [])[:3])))
    return out
