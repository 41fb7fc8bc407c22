"""A command imports what it needs, when it needs it: `import forensics.reports` loads no group module, a name
loads its own, and `forensics diff` of equal dumps loads neither the other groups nor rich's tables. (The time
this saves is measured by benchmarks/bench_startup.py, never here.)"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO

# every group module of the package (`_buffers`, ...): a group added later is covered without editing this list
GROUPS = tuple(sorted(p.stem for p in (REPO / "forensics" / "reports").glob("_*.py") if p.stem != "__init__"))


def _python(code: str) -> dict:
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                       env={"PYTHONPATH": str(REPO), "PATH": ""})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


def test_importing_reports_loads_no_group_module():
    loaded = _python("import json, sys, forensics.reports\n"
                     "print(json.dumps(sorted(m for m in sys.modules if m.startswith('forensics.reports.'))))")
    assert loaded == ["forensics.reports.commands"]  # the table (plain data) and no group module


def test_every_public_name_resolves_to_its_group_modules_object():
    found = _python(
        "import importlib, json, forensics.reports as r\n"
        "out = {}\n"
        "for name in (n for n in r.__all__ if n not in vars(r)):\n"
        "    homes = [g for g in " + repr(GROUPS + ("base",)) + " if name in vars(importlib.import_module('forensics.reports.' + g))]\n"
        "    out[name] = [g for g in homes if getattr(r, name) is vars(importlib.import_module('forensics.reports.' + g))[name]]\n"
        "print(json.dumps({'found': out, 'dir': sorted(set(r.__all__) - set(dir(r)))}))")
    assert found["dir"] == []
    assert len(found["found"]) >= 50
    missing = [name for name, homes in found["found"].items() if not homes]
    assert missing == [], f"names that are not their group module's object: {missing}"


def test_importing_a_group_module_rebinds_no_name_of_the_package():
    # The case: `import forensics.reports.diagnose` then `.DiagnoseReport` was an AttributeError (a swapped
    # module class kept the function under the module's name). The group modules are private now: importing
    # one, in either order, leaves every report function a function and the module reachable by its own name.
    kinds = _python(
        "import json, sys, types\n"
        "import forensics.reports._csr, forensics.reports._decode, forensics.reports._diagnose\n"
        "import forensics.reports as r\n"
        "import forensics.reports._link\n"
        "cls = forensics.reports._diagnose.DiagnoseReport\n"
        "print(json.dumps({'cls': cls is r.DiagnoseReport, 'module_class': type(r).__name__,\n"
        "                  'kinds': {n: [callable(getattr(r, n)), isinstance(getattr(r, n), types.ModuleType),\n"
        "                      getattr(r, n) is getattr(sys.modules['forensics.reports._' + n], n)]\n"
        "                  for n in ('csr', 'decode', 'diagnose', 'link')}}))")
    assert kinds == {"cls": True, "module_class": "module",
                     "kinds": {n: [True, False, True] for n in ("csr", "decode", "diagnose", "link")}}


def test_no_module_of_the_package_is_named_like_one_of_its_names():
    from forensics.reports.commands import namespace

    modules = {p.stem for p in (REPO / "forensics" / "reports").glob("*.py")} - {"__init__"}
    assert modules & set(namespace()) == set()


def test_an_unknown_name_is_an_attribute_error():
    assert _python("import json, forensics.reports as r\nprint(json.dumps(hasattr(r, 'no_such_report')))") is False


def test_diff_of_equal_dumps_loads_only_what_it_uses():
    loaded = _python(
        "import io, json, sys\n"
        "from forensics.cli import main\n"
        "code = main(['diff', 'dumps/libedgetpu/convert_scores.bin', 'dumps/ours/convert_scores.bin'],\n"
        "            stdout=io.StringIO(), stderr=io.StringIO())\n"
        "print(json.dumps([code, sorted(sys.modules)]))")
    code, modules = loaded
    assert code == 0
    unwanted = [m for m in modules if m.startswith(("forensics.reports._runs", "forensics.reports._decode",
                                                    "forensics.reports._model", "forensics.reports._csr",
                                                    "forensics.runs", "forensics.decode", "forensics.model.tflite",
                                                    "forensics.csr", "forensics.cli.runs", "rich.table"))
                and m not in ("forensics.decode", "forensics.decode.modeldumps", "forensics.decode.usecases")]
    # the package, the dump-as-tensor helpers diff's rows are annotated through and diff's use case (their model
    # imports stay inside functions)
    assert unwanted == []
    assert "forensics.reports._buffers" in modules and "forensics.compare.diff" in modules  # the test sees the command run


def test_a_command_builds_its_own_parser_only():
    from forensics.cli import COMMAND_HOMES, _command_parser, build_parser

    every = build_parser()
    for command in COMMAND_HOMES:
        parser = build_parser(command)
        assert list(parser._subparsers._group_actions[0].choices) == [command]
        own, full = _command_parser(parser, command), _command_parser(every, command)
        # the same flags and defaults as in the parser with every command
        assert [a.option_strings for a in own._actions] == [a.option_strings for a in full._actions], command
        assert own._defaults.keys() == full._defaults.keys(), command
