"""link: a driver's link checklist, a bitstream linked as libedgetpu links it, and the audit of a dumped one."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.core.errors import InputError
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
    RESULT = "forensics.link.bitstream:LinkCheck"  # and LinkPlan, for --plan (result_type_of)

    @classmethod
    def result_type_of(cls, doc: dict) -> type:
        if "written" in doc:  # what -o wrote: the document holds its size and CRC, not the bytes
            raise TypeError("a link report of what it wrote cannot be read back from its document")
        from forensics.link.bitstream import LinkCheck, LinkPlan

        return LinkPlan if "executables" in doc else LinkCheck

    @classmethod
    def rows_key_of(cls, doc: dict) -> str | None:
        return "executables" if "executables" in doc else "fields"

    def renderables(self) -> list:
        from forensics.render.link import render_link

        return render_link(self.to_dict(), self.judgement)


# link's input / output / expect are NAME=ADDR and KIND:NAME=ADDR (forensics.link.bitstream parses them), not the
# NAME=FILE and CRC32 other commands' keywords of those names take.
@spellings("input", "output", "expect")
def link(model, *, plan: bool = False, check=None, parameters: bool = False, executable: int | None = None,
         bitstream: int | None = None, input=None, output=None, parameter=None,  # noqa: A002
         scratch=None, allow_unlinked: bool = False, expect=None, out=None, force: bool = False) -> LinkReport:
    """`forensics link MODEL --plan | --check DUMP | --parameters -o OUT | --executable E ... -o OUT`.

    `input` / `output`: NAME=ADDR[,ADDR...] strings (or (name, [addresses]) pairs), one address per batch;
    `parameter` / `scratch`: an address; `expect`: KIND:NAME=ADDR strings for check."""
    mode = _mode(plan, check, parameters, executable)
    _keywords_of(mode, bitstream=bitstream, input=input, output=output, parameter=parameter, scratch=scratch,
                 allow_unlinked=allow_unlinked, expect=expect, out=out)
    path = os.fspath(model)
    if out is not None:
        from forensics.io.outputs import check_not_input, check_writable

        check_not_input(out, model, check)
        if os.path.lexists(os.fspath(out)) and not force:
            raise InputError("exists; give {force} to replace it", os.fspath(out), params=True)
        check_writable(out)
    from forensics.link import usecases

    case = usecases.link(path, mode, check=check, executable=executable, bitstream=bitstream, input=input,
                         output=output, parameter=parameter, scratch=scratch, allow_unlinked=allow_unlinked,
                         expect=expect, out=out)
    if mode == "plan":
        return LinkReport("link", case.result, rows_key="executables")
    if mode == "parameters":
        return LinkReport("link", Written(case.result, case.written, "parameters"))
    if mode == "link":
        return LinkReport("link", Written(case.result, case.written, "bitstream"), rows_key="fields")
    return LinkReport("link", case.result, warnings=case.warnings, rows_key="fields", dumps=(case.dump,),
                      judgement=case.judgement)


def _mode(plan, check, parameters, executable) -> str:
    """The one mode the keywords ask for (plan / check / parameters / link); an InputError naming the parameters
    when they ask for none or several."""
    modes = [m for m, on in (("plan", plan), ("check", check is not None), ("parameters", parameters),
                             ("link", executable is not None and check is None and not parameters)) if on]
    if len(modes) != 1:
        raise InputError("give one of {plan}, {check:DUMP}, {parameters} or {executable:E} (to link a bitstream)"
                         + (f"; got {', '.join(modes)}" if modes else ""), params=True)
    return modes[0]


def _keywords_of(mode: str, *, bitstream, input, output, parameter, scratch, allow_unlinked,  # noqa: A002
                 expect, out) -> None:
    """Each keyword given only with the mode it is for (addresses with link, expect with check, out with link
    and parameters, which need it): one InputError naming the parameters otherwise."""
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


def diagnose_link(model, tensor, dump_a, dump_b):
    """`diagnose A B --model M` when B is one of M's instruction bitstreams: the link check's report
    (forensics.link.usecases.diagnose_pair); None otherwise."""
    from forensics.link import bitstream as lk
    from forensics.link.usecases import diagnose_pair

    result = diagnose_pair(model, dump_a, dump_b, tensor=tensor)
    if result is None:
        return None
    return LinkReport("diagnose", result, rows_key="fields", dumps=(dump_a, dump_b), judgement=lk.judge_link(result))
