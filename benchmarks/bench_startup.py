"""Start-up cost of a seed-size command: CPU time of `forensics diff` of two 8 KiB dumps against a Python
process that only imports numpy (the floor of any process that uses numpy), measured in the same run.

  python benchmarks/bench_startup.py [--repeat N] [--json]

Rows (CPU time = user + system of each child process, from resource.getrusage(RUSAGE_CHILDREN); the median of
N runs, the commands run in alternation so that load from other processes falls on all of them alike):
  diff MATCH     `forensics diff` of the story's two 8,136-byte convert_scores (identical: one line)   goal <= 1.3x
  diff DIFFER    the same against the broken driver's (the statistics and four tables)               context
  import         `python -c "import forensics.cli"`: what every command pays before parsing          context
  uncached       diff MATCH where forensics' bytecode is not cached (PYTHONDONTWRITEBYTECODE=1, as some
                 machines set, on a copy of the package without __pycache__): every module compiled    context

Why CPU time and not wall time: on a shared 2-core machine wall time also counts waiting for a core. The
bytecode is cached (in a temporary folder, nothing written into the checkout), as for an installed package:
PYTHONDONTWRITEBYTECODE=1, set on some machines, would recompile every forensics module on every run while
numpy's bytecode is already there.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _table import Table, add_json_flag  # noqa: E402

from bench_core import ENV, FORENSICS, REPO  # noqa: E402  (forensics run as installed: bytecode cached)

A = os.path.join(REPO, "dumps", "libedgetpu", "convert_scores.bin")
SAME = os.path.join(REPO, "dumps", "ours", "convert_scores.bin")
BROKEN = os.path.join(REPO, "dumps", "broken", "convert_scores.bin")


def cpu_once(argv, env, cwd=REPO, accept=(0, 1)) -> float:
    """CPU seconds (user + system) of one child process (`python -m` puts `cwd` first on its path)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode not in accept:
        raise SystemExit(f"benchmark command failed ({r.returncode}): {' '.join(argv)}\n{r.stderr.decode()}")
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21, help="runs of each command (default 21)")
    add_json_flag(parser)
    args = parser.parse_args(argv)
    commands = {
        "numpy": ([sys.executable, "-c", "import numpy"], ENV, REPO),
        "same": (FORENSICS + ["diff", A, SAME], ENV, REPO),
        "differ": (FORENSICS + ["diff", A, BROKEN], ENV, REPO),
        "import": ([sys.executable, "-c", "import forensics.cli"], ENV, REPO),
    }
    with tempfile.TemporaryDirectory() as copy:
        shutil.copytree(os.path.join(REPO, "forensics"), os.path.join(copy, "forensics"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        uncached = dict(os.environ, PYTHONPATH=copy, PYTHONDONTWRITEBYTECODE="1")
        uncached.pop("PYTHONPYCACHEPREFIX", None)
        commands["uncached"] = (FORENSICS + ["diff", A, SAME], uncached, copy)
        for argv_, env, cwd in commands.values():  # compile and cache the bytecode once (where it is cached)
            cpu_once(argv_, env, cwd)
        cpu = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, (argv_, env, cwd) in commands.items():
                cpu[name].append(cpu_once(argv_, env, cwd))
        assert not any(name == "__pycache__" for _, dirs, _ in os.walk(copy) for name in dirs)
    median = {name: statistics.median(v) for name, v in cpu.items()}
    print(f"CPU time (user + system), median of {args.repeat} interleaved runs; python {sys.version.split()[0]}; "
          "bytecode cached as for an installed package")
    baseline = 'python -c "import numpy"'
    with Table(args.json, "bench_startup") as table:
        table.add("forensics diff of two 8 KiB dumps, identical (CPU)", median["same"], baseline=baseline,
                  baseline_value=median["numpy"], goal_ratio=1.3)
        table.add("forensics diff of two 8 KiB dumps, differing: statistics and tables (CPU)", median["differ"],
                  baseline=baseline, baseline_value=median["numpy"])
        table.add("import forensics.cli (CPU)", median["import"], baseline=baseline, baseline_value=median["numpy"],
                  note="what every command pays before it parses its arguments")
        table.add("forensics diff of two 8 KiB dumps, identical, bytecode not cached (CPU)", median["uncached"],
                  baseline=baseline, baseline_value=median["numpy"],
                  note="PYTHONDONTWRITEBYTECODE=1 and no __pycache__: every forensics module is compiled")
        for r in table.rows:
            print(f"{r.figure:76s} {r.value * 1e3:7.1f} ms | {r.baseline_value * 1e3:7.1f} ms | {r.ratio:5.2f}x "
                  f"{r.goal or ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
