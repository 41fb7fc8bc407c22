"""Tables for `forensics graph`, `extract` and `relayout`: the op chain, the CPU tail, the Edge TPU package."""

from __future__ import annotations

from rich.text import Text

from forensics.render.style import titled_table, wrote



def _num(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.8g}"
    return str(v)


NAME_LIMIT = 32


def short_name(name: str, limit: int = NAME_LIMIT) -> str:
    """A tensor name that fits a table cell: TFLite joins fused op names with ';' (the first is the one a
    person recognises), and long paths keep their last `limit` characters. `--json` has the full names."""
    first = name.split(";")[0]
    shown = first if len(first) <= limit else "..." + first[-(limit - 3):]
    return shown + (" (+fused)" if ";" in name else "")


def _tensor(t: dict | None) -> str:
    if t is None:
        return "(none)"
    text = f"#{t['index']} {short_name(t['name'])} {t['shape']} {t['dtype']}"
    if t.get("scale") is not None:
        text += f" s={_num(t['scale'])} zp={t['zero_point']}"
    elif t.get("per_channel"):
        pc = t["per_channel"]
        text += f" per-channel x{pc['channels']} (axis {pc['quantized_dimension']})"
    if t.get("constant"):
        c = t["constant"]
        text += f" const {c['size']} B crc {c['crc32']}"
    return text


def render_graph(d: dict) -> list:
    out = [Text(f"{d['model']}: {d['size']:,} bytes, schema v{d['version']}, {d['subgraphs']} subgraph(s)"
                + (f", {d['description']!r}" if d.get("description") else ""))]
    io = titled_table("Graph inputs and outputs", ("", "left"), ("tensor", "left"))
    for t in d["inputs"]:
        io.add_row("in", _tensor(t))
    for t in d["outputs"]:
        io.add_row("out", _tensor(t))
    out.append(io)
    ops = titled_table("Operators", ("#", "right"), ("op", "left"), ("inputs", "left"), ("outputs", "left"))
    for op in d["operators"]:
        ops.add_row(str(op["index"]), op["op"], "\n".join(_tensor(t) for t in op["inputs"]),
                    "\n".join(_tensor(t) for t in op["outputs"]))
    out.append(ops)
    if d["constants"]:
        consts = titled_table("Constant tensors", ("#", "right"), ("name", "left"), ("shape", "left"), ("dtype", "left"),
                        ("bytes", "right"), ("crc32", "left"))
        for t in d["constants"]:
            consts.add_row(str(t["index"]), t["name"], "x".join(map(str, t["shape"])) or "scalar", t["dtype"],
                           f"{t['constant']['size']:,}", t["constant"]["crc32"])
        out.append(consts)
    for b in d["boundary"]:
        tail = titled_table(f"Accelerator boundary: op {b['operator']} {b['op']} -> CPU tail", ("tensor", "left"),
                      ("read by", "left"))
        for p in b["produces"]:
            tail.add_row(f"#{p['index']} {p['tensor']}",
                         ", ".join(f"op {c['index']} {c['op']}" for c in p["consumers"]) or "(graph output)")
        out.append(tail)
        out.append(Text("CPU tail: " + (" -> ".join(f"{t['index']} {t['op']}" for t in b["tail"]) or "(none)")))
    if d.get("postprocess_options"):
        pp = titled_table("TFLite_Detection_PostProcess options", ("key", "left"), ("value", "left"))
        for k, v in d["postprocess_options"].items():
            pp.add_row(k, _num(v))
        out.append(pp)
    if d.get("edgetpu"):
        out += render_edgetpu(d["edgetpu"])
    return out


PATCH_ROWS_SHOWN = 64  # real packages have a few dozen; a table of 300,000 rows is not something to read


def render_edgetpu(e: dict) -> list:
    out = []
    for pkg in e["packages"]:
        out.append(Text(f"Edge TPU package (op {pkg['operator']}): {pkg['size']:,} bytes at offset "
                        f"{_num(pkg['offset'])}, min runtime {pkg['min_runtime_version']}, compiler "
                        f"{pkg['compiler_version'] or '-'}, signature {'present' if pkg['signature_present'] else 'absent'}"))
        exes = titled_table("Executables", ("#", "right"), ("type", "left"), ("name", "left"), ("chip", "left"),
                      ("batch", "right"), ("bitstream", "right"), ("parameters", "right"), ("params crc32", "left"),
                      ("caching token", "left"), ("patches", "right"))
        for x in pkg["executables"]:
            exes.add_row(str(x["index"]), x["type"], x["name"] or "-", x["chip"] or "-", str(x["batch_size"]),
                         f"{x['bitstream_size']:,}", f"{x['parameters_size']:,}", x["parameters_crc32"],
                         x["parameter_caching_token"], str(len(x["field_offsets"])))
        out.append(exes)
        for x in pkg["executables"]:
            layers = x["input_layers"] + x["output_layers"]
            if layers:
                t = titled_table(f"Executable {x['index']} layers", ("", "left"), ("name", "left"), ("y", "right"),
                           ("x", "right"), ("z", "right"), ("type", "left"), ("size_bytes", "right"),
                           ("unpadded", "right"), ("zero_point", "right"), ("scale", "right"), ("layout", "left"))
                for kind, group in (("in", x["input_layers"]), ("out", x["output_layers"])):
                    for layer in group:
                        t.add_row(kind, layer["name"], str(layer["y_dim"]), str(layer["x_dim"]), str(layer["z_dim"]),
                                  layer["data_type"], f"{layer['size_bytes']:,}",
                                  f"{layer['unpadded_size_bytes']:,}", _num(layer["zero_point"]),
                                  _num(layer["dequantization_factor"]), "yes" if layer["has_layout"] else "no")
                out.append(t)
            if x["field_offsets"]:
                t = titled_table(f"Executable {x['index']} patch table (field_offsets)", ("bitstream", "right"),
                           ("desc", "left"), ("position", "left"), ("name", "left"), ("offset_bit", "right"))
                for f in x["field_offsets"][:PATCH_ROWS_SHOWN]:
                    t.add_row(str(f["bitstream"]), f["desc"], f["position"], f["name"] or "-", str(f["offset_bit"]))
                out.append(t)
                hidden = len(x["field_offsets"]) - PATCH_ROWS_SHOWN
                if hidden > 0:
                    out.append(Text(f"... {hidden:,} more patch table rows (--json lists every row)"))
    return out


def render_params(written: list[dict]) -> list:
    t = titled_table("Parameter blobs written", ("exe", "right"), ("type", "left"), ("bytes", "right"), ("crc32", "left"),
               ("path", "left"))
    for w in written:
        t.add_row(str(w["executable"]), w["type"], f"{w['size']:,}", w["crc32"], w["path"])
    return [t]


def render_extract(d: dict, files: list[str]) -> list:
    t = titled_table("Post-processing parameters", ("key", "left"), ("value", "left"))
    t.add_row("anchors", f"{d['num_anchors']} x 4 float32 ({d['anchors']['tensor']}, stored "
                         f"{d['anchors']['stored_dtype']}), crc32 {d['anchors']['crc32']}")
    t.add_row("num_classes", _num(d["num_classes"]) + " (without background)")
    for key in ("boxes", "scores"):
        q = d[key]
        t.add_row(key, f"{q['tensor']} {q['shape']} {q['dtype']} scale {_num(q['scale'])} zero_point "
                       f"{_num(q['zero_point'])}")
    t.add_row("input_size", "x".join(map(str, d["input_size"])) if d.get("input_size") else "- (no image input)")
    for k, v in d["options"].items():
        t.add_row(k, _num(v))
    return [t, *(Text(wrote(f)) for f in files)]


def render_relayout(d: dict) -> list:
    direction = "tensor -> raw (inverse)" if d["inverse"] else "raw -> tensor"
    return [Text(f"{d['layer']}: {direction}, {d['input_size']:,} -> {d['output_size']:,} bytes "
                 f"(z {d['z_bytes']} padded to {d['z_bytes_padded']}, {d['pad_bytes']:,} pad bytes"
                 + (f" set to 0x{d['pad_byte']:02x}" if d["inverse"] else "") + ")"), Text(wrote(d["output"]))]
