"""Run every benchmark (benchmarks/bench_*.py, found by name) and print one table of their rows.

  python benchmarks/run_all.py [--only NAME ...] [--args 'NAME=ARGS' ...] [--out results.json]

Each script that writes the common rows (benchmarks/_table.py: it takes `--json`) is run with `--json`; a script
that does not is run as it is and its text is shown, with one row saying it gave no figures. A script that
fails (e.g. its optional dependency or data is missing) gets a row saying so; the others still run.
`--out` keeps the rows with the machine they were measured on, for tools/gen_readme_speed.py.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import platform
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from _table import Row, format_rows  # noqa: E402


def machine() -> dict:
    """What the figures were measured on: CPU model, cores, memory, load, OS, Python."""
    info = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "system": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            names = [line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")]
        if names:
            info["cpu"] = names[0]
    except OSError:
        pass
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            total_kib = int(fh.readline().split()[1])
        info["memory_gib"] = round(total_kib / (1 << 20), 1)
    except (OSError, ValueError, IndexError):
        pass
    if hasattr(os, "getloadavg"):
        info["load_at_start"] = round(os.getloadavg()[0], 2)
    return info


def scripts(only=None) -> list[str]:
    found = sorted(glob.glob(os.path.join(HERE, "bench_*.py")))
    if only:
        found = [p for p in found if os.path.basename(p)[:-3] in only or os.path.basename(p) in only]
    return found


def speaks_rows(path: str) -> bool:
    with open(path, encoding="utf-8") as fh:
        return "_table" in fh.read()


def run_script(path: str, extra: list[str] | None = None) -> list[Row]:
    name = os.path.basename(path)[:-3]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    print(f"== {name}", file=sys.stderr, flush=True)
    if speaks_rows(path):
        proc = subprocess.run([sys.executable, path, "--json", *(extra or [])], stdout=subprocess.PIPE, env=env, cwd=REPO,
                              text=True)
        if proc.returncode == 0:
            try:
                return [Row.from_dict(r) for r in json.loads(proc.stdout.strip().splitlines()[-1])]
            except (ValueError, IndexError, TypeError):
                pass
        return [Row(name, "did not run (see its output above)", float("nan"), "-",
                    note=f"exit {proc.returncode}")]
    proc = subprocess.run([sys.executable, path], env=env, cwd=REPO)  # its text goes straight to the terminal
    return [Row(name, "gave no rows (does not use benchmarks/_table.py; its text is above)", float("nan"), "-",
                note=f"exit {proc.returncode}")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="benchmark names to run (default: all)")
    ap.add_argument("--out", help="write the rows and the machine as JSON here")
    ap.add_argument("--args", action="append", default=[], metavar="NAME=ARGS",
                    help="extra arguments for one benchmark, e.g. 'bench_scale=--pairs 20000' (repeatable)")
    args = ap.parse_args(argv)
    extra = {}
    for item in args.args:
        name, sep, rest = item.partition("=")
        if not sep:
            ap.error(f"--args takes NAME=ARGS, got {item!r}")
        extra[name.removesuffix(".py")] = shlex.split(rest)
    info = machine()
    if extra:
        info["arguments"] = {k: " ".join(v) for k, v in extra.items()}
    rows: list[Row] = []
    for path in scripts(args.only):
        rows.extend(run_script(path, extra.get(os.path.basename(path)[:-3])))
    info["load_at_end"] = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    print()
    print(f"machine: {info['cpu']}, {info['cores']} cores, {info.get('memory_gib', '?')} GiB, {info['system']}, "
          f"python {info['python']}; load average {info.get('load_at_start')} at start, "
          f"{info.get('load_at_end')} at end; {info['date']}")
    print("\n".join(format_rows(rows)))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump({"machine": info, "rows": [vars(r) for r in rows]}, fh, indent=1)
            fh.write("\n")
    return 0  # goals missed are in the table ("met": NO); a benchmark that could not run has its own row


if __name__ == "__main__":
    sys.exit(main())
