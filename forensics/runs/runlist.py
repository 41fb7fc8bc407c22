"""Runs named on a command line: each a run, or a folder of runs standing for its runs in natural order of their
names (`run-2` before `run-10`, as a driver's loop numbers them), wherever they are (paths or fsspec URLs)."""

from __future__ import annotations

import os
import re

from forensics.core.errors import InputError
from forensics.runs import remote
from forensics.runs.run import MANIFEST


def natural_key(name: str) -> tuple:
    """`run-10` after `run-2`: digit runs compare as numbers, the rest as text (case-folded, then as written)."""
    parts = re.split(r"(\d+)", name)
    return tuple((0, int(p), p) if p.isdigit() else (1, p.casefold(), p) for p in parts if p), name


def _is_run(location: str) -> bool:
    if remote.is_url(location):
        return remote.run_files(location).size(MANIFEST) is not None
    return os.path.isfile(os.path.join(location, MANIFEST))


def _runs_in(location: str) -> list[str]:
    """The runs directly inside a folder (path or URL), in natural order of their names."""
    if remote.is_url(location):
        found = remote.find_runs(location, MANIFEST)
    else:
        try:
            names = os.listdir(location)
        except OSError as exc:
            raise InputError(f"cannot list: {exc.strerror or exc}", location) from None
        found = [os.path.join(location, n) for n in names
                 if not n.startswith(".") and os.path.isfile(os.path.join(location, n, MANIFEST))]
    return sorted(found, key=lambda p: natural_key(p.partition("::")[0].rstrip("/\\").replace("\\", "/")
                                                  .rsplit("/", 1)[-1]))


def expand_runs(locations) -> list[str]:
    """Every run the locations name, in order: a run as given, a folder as its runs (natural order). InputError
    for a location that is neither (naming it), and for a folder that holds no run."""
    out = []
    for location in locations:
        location = os.fspath(location)
        if not remote.is_url(location) and not os.path.exists(location):
            raise InputError("no such run or folder of runs", location)
        if _is_run(location):
            out.append(location)
            continue
        if not remote.is_url(location) and not os.path.isdir(location):
            raise InputError("is not a run (a directory with manifest.json) or a folder of runs", location)
        runs = _runs_in(location)
        if not runs:
            raise InputError("holds no run (a run is a directory with manifest.json) and is none", location)
        out.extend(runs)
    return out
