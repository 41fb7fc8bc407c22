"""link: a driver's link checklist, a bitstream linked as libedgetpu links it, and the audit of a dumped one."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.core.errors import FormatError, InputError
from forensics.reports.base import Report, spellings


@dataclass(frozen=True)
class Written:
    """What `link ... -o OUT` wrote: the linked bitstream (or parameter bytes) and the fields it linked."""

    result: object
    path: str
    what: str  # "bitstream" / "parameters"

    def to_dict(self) -> dict:
        d = self.result if isinstance(self.result, dict) else self.result.to_dict()
        return dict(d, written=self.path, what=self.what)


class LinkReport(Report):
    def renderables(self) -> list:
        from forensics.render.link import render_link

        return render_link(self.to_dict(), self.judgement)


def _open(model):
    from forensics.reports._model import _open_model

    opened, packages = _open_model(model)
    if not packages:
        raise InputError("has no edgetpu-custom-op: no instruction bitstreams to link", os.fspath(model))
    return opened, packages


def _named(items, kind: str) -> dict:
    from forensics.link.bitstream import parse_named

    out: dict = {}
    for item in items or ():
        name, addrs = (item[0], list(item[1])) if isinstance(item, tuple) else parse_named(item)
        if name in out:
            raise InputError(f"{kind} {name!r} is given twice; give its batches as one list NAME=ADDR,ADDR")
        out[name] = addrs
    return out


def _bytes_dump(data, name: str):
    import io

    from forensics.io.dump import Dump

    blob = bytes(data)
    return Dump(path=name, size=len(blob), opener=lambda: io.BytesIO(blob))


def _read_dump(path, limit: int) -> tuple[bytes, object]:
    """The first `limit` data bytes of a dump (binary or any text dump forensics reads)."""
    from forensics.io.dump import Dump, DumpReader, open_dump

    dump = path if isinstance(path, Dump) else open_dump(path)
    want = min(dump.size, limit)
    buf = bytearray(want)
    with DumpReader(dump) as reader:
        reader.read_exact(0, memoryview(buf))
    return bytes(buf), dump


# link's input / output / expect are NAME=ADDR and KIND:NAME=ADDR (forensics.link.bitstream parses them), not the
# NAME=FILE and CRC32 other commands' keywords of those names take.
@spellings("input", "output", "expect")
def link(model, *, plan: bool = False, check=None, parameters: bool = False, executable: int | None = None,
         bitstream: int | None = None, input=None, output=None, parameter=None,  # noqa: A002
         scratch=None, allow_unlinked: bool = False, expect=None, out=None, force: bool = False) -> LinkReport:
    """`forensics link MODEL --plan | --check DUMP | --parameters -o OUT | --executable E ... -o OUT`.

    `input` / `output`: NAME=ADDR[,ADDR...] strings (or (name, [addresses]) pairs), one address per batch;
    `parameter` / `scratch`: an address; `expect`: KIND:NAME=ADDR strings for check."""
    from forensics.link import bitstream as lk

    modes = [m for m, on in (("plan", plan), ("check", check is not None), ("parameters", parameters),
                             ("link", executable is not None and check is None and not parameters)) if on]
    if len(modes) != 1:
        raise InputError("give one of {plan}, {check:DUMP}, {parameters} or {executable:E} (to link a bitstream)"
                         + (f"; got {', '.join(modes)}" if modes else ""), params=True)
    mode = modes[0]
    if mode != "link" and (input or output or parameter is not None or scratch is not None or allow_unlinked):
        raise InputError("addresses ({input}, {output}, {parameter}, {scratch}) and {allow_unlinked} are for "
                         "linking: give {executable:E}", params=True)
    if mode != "check" and expect:
        raise InputError("{expect} is for {check:DUMP}", params=True)
    if mode in ("link", "parameters"):
        if out is None:
            raise InputError("give {out:OUT} to write the " + ("linked bitstream" if mode == "link" else
                                                               "parameter bytes"), params=True)
    elif out is not None:
        raise InputError("{out:OUT} is for linking or {parameters}", params=True)
    if mode != "link" and bitstream is not None:
        raise InputError("{bitstream:K} is for linking with {executable:E}", params=True)
    path = os.fspath(model)
    if out is not None:
        from forensics.io.outputs import check_not_input, check_writable

        check_not_input(out, model, check)
        if os.path.lexists(os.fspath(out)) and not force:
            raise InputError("exists; give {force} to replace it", os.fspath(out), params=True)
        check_writable(out)
    try:
        return _link(lk, path, mode, check=check, executable=executable, bitstream=bitstream, input=input,
                     output=output, parameter=parameter, scratch=scratch, allow_unlinked=allow_unlinked,
                     expect=expect, out=out)
    except FormatError as exc:
        raise exc.with_path(path) if exc.path is None else exc from None


def _link(lk, path, mode, *, check, executable, bitstream, input, output, parameter,  # noqa: A002
          scratch, allow_unlinked, expect, out) -> LinkReport:
    # Flags are checked before the model is read: a bad address is the user's line, not the model's.
    inputs, outputs = _named(input, "input"), _named(output, "output")
    parameter = lk.parse_address(parameter) if parameter is not None else None
    scratch = lk.parse_address(scratch) if scratch is not None else None
    expectations = [lk.parse_expect(e) for e in expect or ()]
    _, packages = _open(path)
    if mode == "plan":
        return LinkReport("link", lk.plan(packages, path), rows_key="executables")
    if mode == "parameters":
        from forensics.compare.crc import crc32, format_crc
        from forensics.io.outputs import write_bytes_atomic

        if executable is not None:
            _, exe = lk.find_executable(packages, executable)
        else:
            with_params = [e for _, e in lk.executables(packages) if e.parameters_size]
            with_params.sort(key=lambda e: e.type != "PARAMETER_CACHING")
            exe = with_params[0] if with_params else None
        if exe is None or not exe.parameters_size:
            which = f"executable {executable}" if executable is not None else "no executable of the model"
            raise InputError(f"{which} has no parameters to write", path)
        data = bytes(exe.parameters)
        write_bytes_atomic(out, data)
        doc = {"executable": {"index": exe.index, "type": exe.type}, "size": len(data),
               "crc32": format_crc(crc32(data))}
        return LinkReport("link", Written(doc, os.fspath(out), "parameters"))
    if mode == "link":
        from forensics.io.outputs import write_bytes_atomic

        _, exe = lk.find_executable(packages, executable)
        result = lk.link(exe, bitstream or 0, inputs=inputs, outputs=outputs, parameter=parameter,
                         scratch=scratch, allow_unlinked=allow_unlinked)
        write_bytes_atomic(out, result.data)
        return LinkReport("link", Written(result, os.fspath(out), "bitstream"), rows_key="fields")
    # check: read no more of the dump than the largest thing it could be (plus one byte to see it is longer)
    if executable is not None:
        lk.find_executable(packages, executable)
    largest = max([sum(e.bitstream_sizes) for _, e in lk.executables(packages)]
                  + [e.parameters_size for _, e in lk.executables(packages)] + [1])
    data, dump = _read_dump(check, largest + 1)

    def explain(model_bytes, dump_bytes):
        from forensics.diagnose import diagnose_dumps

        return diagnose_dumps(_bytes_dump(model_bytes, f"{path}#parameters"), _bytes_dump(dump_bytes, dump.path))

    result = lk.check(packages, data, executable=executable, expect=expectations, parameters_diagnosis=explain)
    if dump.size != result.size:
        import dataclasses

        result = dataclasses.replace(result, size=dump.size)
    warnings = []
    if result.expected_size is not None and dump.size > result.expected_size:
        warnings.append(f"{dump.path}: {dump.size:,} bytes, {dump.size - result.expected_size:,} more than the "
                        f"{result.expected_size:,} of the {result.kind} (the rest is not compared)")
    return LinkReport("link", result, warnings=tuple(warnings), rows_key="fields", dumps=(dump,),
                      judgement=lk.judge_link(result))


def diagnose_link(model, dump_a, dump_b):
    """`diagnose A B --model M` when B is one of M's instruction bitstreams: the link check of B, with A's
    addresses as the expected ones when A is the same bitstream linked correctly; None otherwise (the pair is
    diagnosed as any other, and a bad model is reported there)."""
    from forensics.link import bitstream as lk
    from forensics.core.errors import ForensicsError

    try:
        _, packages = _open(model)
        largest = max([sum(e.bitstream_sizes) for _, e in lk.executables(packages)] + [1])
        data_b, _ = _read_dump(dump_b, largest + 1) if dump_b.size <= largest + 1 else (None, None)
    except ForensicsError:
        return None
    if data_b is None:
        return None
    plain = lk.check(packages, data_b)
    if plain.kind != "bitstream":
        return None
    expect = []
    if dump_a.size <= largest + 1:
        data_a, _ = _read_dump(dump_a, largest + 1)
        ref = lk.check(packages, data_a, executable=plain.executable["index"])
        if ref.verdict == lk.LINKED and ref.bitstream == plain.bitstream:
            for kind in ("input", "output"):
                for name, per_batch in ref.addresses[kind].items():
                    if per_batch and per_batch[0]:
                        expect.append(lk.Expectation(kind, name, int(per_batch[0], 16)))
            for kind in ("parameter", "scratch"):
                if ref.addresses[kind]:
                    expect.append(lk.Expectation(kind, None, int(ref.addresses[kind], 16)))
    result = lk.check(packages, data_b, executable=plain.executable["index"], expect=expect)
    return LinkReport("diagnose", result, rows_key="fields", dumps=(dump_a, dump_b), judgement=lk.judge_link(result))
