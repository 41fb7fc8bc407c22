"""link as library calls: a model's link plan, its parameter bytes or a bitstream linked as libedgetpu links it
(written atomically), a dumped bitstream audited, and diagnose's link check of a pair; forensics.reports wraps
each result in a report."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.core.errors import FormatError, InputError
from forensics.core.judgement import Judgement


@dataclass(frozen=True)
class LinkCase:
    """What `link` did, whole: `mode` (plan / parameters / link / check), its result (forensics.link.bitstream's,
    or the parameters' document), the file written (`written`), the dump checked and the check's judgement."""

    mode: str
    result: object
    written: str | None = None
    dump: object = None            # check: the forensics.io.dump.Dump audited
    warnings: tuple[str, ...] = ()
    judgement: Judgement | None = None


def open_packages(model):
    """(the opened model, its Edge TPU packages); an InputError when it has no instruction bitstreams."""
    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.model import open_model

    opened = open_model(model)
    packages = read_packages(opened)
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


def link(model, mode: str, *, check=None, executable: int | None = None, bitstream: int | None = None,
         input=None, output=None, parameter=None, scratch=None, allow_unlinked: bool = False,  # noqa: A002
         expect=None, out=None) -> LinkCase:
    """`forensics link MODEL` in one `mode` whole: the addresses and expectations parsed (before the model is
    read: a bad address is the user's line, not the model's), the model's packages opened, then the plan, the
    parameter bytes or the linked bitstream written to `out`, or the dump `check` audited and judged. A format
    error names the model."""
    path = os.fspath(model)
    try:
        return _link(path, mode, check=check, executable=executable, bitstream=bitstream, input=input,
                     output=output, parameter=parameter, scratch=scratch, allow_unlinked=allow_unlinked,
                     expect=expect, out=out)
    except FormatError as exc:
        raise exc.with_path(path) if exc.path is None else exc from None


def _link(path, mode, *, check, executable, bitstream, input, output, parameter,  # noqa: A002
          scratch, allow_unlinked, expect, out) -> LinkCase:
    from forensics.link import bitstream as lk

    inputs, outputs = _named(input, "input"), _named(output, "output")
    parameter = lk.parse_address(parameter) if parameter is not None else None
    scratch = lk.parse_address(scratch) if scratch is not None else None
    expectations = [lk.parse_expect(e) for e in expect or ()]
    _, packages = open_packages(path)
    if mode == "plan":
        return LinkCase(mode, lk.plan(packages, path))
    if mode == "parameters":
        return _write_parameters(path, packages, executable, out)
    if mode == "link":
        from forensics.io.outputs import write_bytes_atomic

        _, exe = lk.find_executable(packages, executable)
        result = lk.link(exe, bitstream or 0, inputs=inputs, outputs=outputs, parameter=parameter,
                         scratch=scratch, allow_unlinked=allow_unlinked)
        write_bytes_atomic(out, result.data)
        return LinkCase(mode, result, written=os.fspath(out))
    return _check_dump(path, mode, packages, check, executable, expectations)


def _write_parameters(path, packages, executable, out) -> LinkCase:
    """`link --parameters`: the parameter bytes of `executable` (default: the parameter-caching executable's,
    else the first that has parameters) written atomically to `out`."""
    from forensics.compare.crc import crc32, format_crc
    from forensics.io.outputs import write_bytes_atomic
    from forensics.link import bitstream as lk

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
    return LinkCase("parameters", doc, written=os.fspath(out))


def _check_dump(path, mode, packages, check, executable, expectations) -> LinkCase:
    """`link --check DUMP`: the dump audited against the model's executables and judged, reading no more of it
    than the largest thing it could be (plus one byte to see it is longer); a differing parameter buffer is
    diagnosed."""
    from forensics.link import bitstream as lk

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
    return LinkCase(mode, result, dump=dump, warnings=tuple(warnings), judgement=lk.judge_link(result))


def diagnose_pair(model, dump_a, dump_b, *, tensor=None):
    """`diagnose A B --model M` when B is one of M's instruction bitstreams: the link check of B (a
    forensics.link.bitstream result), with A's addresses as the expected ones when A is the same bitstream linked
    correctly; None otherwise (the pair is diagnosed as any other, and a bad model is reported there). A `tensor`
    (or no model) says the dumps are output tensors: no link check."""
    from forensics.core.errors import ForensicsError
    from forensics.link import bitstream as lk

    if model is None or tensor is not None:
        return None
    try:
        _, packages = open_packages(model)
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
    return lk.check(packages, data_b, executable=plain.executable["index"], expect=expect)


def simulate(a=None, *, bug: str, output=None, previous=None, model=None):
    """`forensics simulate A --bug KIND[:PARAMS] -o B` whole: what A becomes under the bug (a link bug on an
    instruction bitstream with its `model`: forensics.link.bugs; else forensics.diagnose.simulate), written
    atomically; `bug="list"` the kinds, as (kind, usage, description) triples, the link bugs' last."""
    from forensics.diagnose.simulate import BUG_HELP
    from forensics.diagnose.simulate import simulate as run
    from forensics.link.bugs import BUG_HELP as LINK_BUGS, is_link_bug, simulate_link  # link: issue 23

    if bug == "list":
        return tuple(BUG_HELP + LINK_BUGS)
    if a is None or output is None:
        raise InputError("simulate needs A and {output} B (or bug 'list')", params=True)
    if is_link_bug(bug) or model is not None:  # link: a bug on an instruction bitstream needs its model
        return simulate_link(a, bug, model=model, output=output)
    return run(a, bug, previous=previous, output=output)
