"""What users install, tested as they use it: build the sdist and the wheel, check that the sdist holds what the
tests need, install the wheel into a fresh venv outside the clone and run `forensics demo`, a short smoke set on the
files the package ships and the bundled notebook there, from a folder that is not the clone (.ci/run runs it).

  python tools/check_wheel.py [--extras all] [--keep]

Exit 0 when every check passed; each failing check prints one line and the output it got.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DISTRIBUTION = "npu-forensics"


def run(argv, *, cwd=None, env=None, timeout=900) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True,
                          encoding="utf-8", errors="replace", timeout=timeout)


class Checks:
    def __init__(self):
        self.failed = self.done = 0

    def check(self, what: str, ok: bool, detail: str = "") -> bool:
        self.done += 1
        print(f"{'ok  ' if ok else 'FAIL'} {what}", flush=True)
        if not ok:
            self.failed += 1
            if detail:
                print("     " + detail.strip().replace("\n", "\n     ")[:4000])
        return ok


def _git_files() -> list[str] | None:
    r = run(["git", "ls-files"], cwd=REPO)
    return r.stdout.split("\n")[:-1] if r.returncode == 0 else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default="all", help="the extras to install the wheel with (default all; '' none)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    args = parser.parse_args(argv)
    checks = Checks()
    work = tempfile.mkdtemp(prefix="forensics-wheel-")
    start = time.monotonic()
    try:
        dist = os.path.join(work, "dist")
        r = run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", dist, REPO])
        if not checks.check("python -m build: the sdist and the wheel", r.returncode == 0, r.stdout + r.stderr):
            return 1
        wheel = next(os.path.join(dist, n) for n in os.listdir(dist) if n.endswith(".whl"))
        sdist = next(os.path.join(dist, n) for n in os.listdir(dist) if n.endswith(".tar.gz"))
        for scratch in ("build", "npu_forensics.egg-info"):  # what setuptools leaves in the clone
            shutil.rmtree(os.path.join(REPO, scratch), ignore_errors=True)

        with tarfile.open(sdist) as tar:
            held = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
        tracked = _git_files()
        if tracked is not None:
            missing = sorted(set(tracked) - held - {".gitignore"})
            checks.check(f"the sdist holds every tracked file ({len(tracked)})", not missing, " ".join(missing[:40]))
        with zipfile.ZipFile(wheel) as whl:
            names = whl.namelist()
            texts = [whl.read(n).decode("utf-8", "replace") for n in names if n.endswith(".py")]
        checks.check("the wheel ships the story's dumps", all(
            f"forensics/data/dumps/{d}/{f}" in names for d in ("libedgetpu", "ours", "broken")
            for f in ("input.bin", "convert_scores.bin", "Squeeze1.bin", "convert_scores.json")))
        checks.check("no path into the clone in the package", not any(REPO in text for text in texts))

        venv = os.path.join(work, "venv")
        r = run([sys.executable, "-m", "venv", venv])
        bindir = os.path.join(venv, "Scripts" if os.name == "nt" else "bin")
        python = os.path.join(bindir, "python")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
        target = wheel + (f"[{args.extras}]" if args.extras else "")
        r = run([python, "-m", "pip", "install", "--quiet", target], env=env, timeout=1800)
        if not checks.check(f"pip install {os.path.basename(target)} into a fresh venv", r.returncode == 0,
                            r.stdout + r.stderr):
            return 1
        elsewhere = os.path.join(work, "elsewhere")
        os.mkdir(elsewhere)
        forensics = [os.path.join(bindir, "forensics")]

        r = run([python, "-c", "import forensics, importlib.metadata as m; print(forensics.__file__); "
                               f"print(m.version({DISTRIBUTION!r}))"], cwd=elsewhere, env=env)
        where, version = (r.stdout.split("\n") + ["", ""])[:2]
        checks.check("the installed package is imported, not the clone's", where.startswith(venv), r.stdout + r.stderr)
        r = run(forensics + ["--version"], cwd=elsewhere, env=env)
        checks.check(f"forensics --version says the metadata's {version}",
                     r.stdout.strip() == f"forensics {version} ({DISTRIBUTION})", r.stdout + r.stderr)
        r = run(forensics + ["demo", "--no-color", "--width", "100"], cwd=elsewhere, env=env)
        checks.check("forensics demo tells the story from another folder, exit 0",
                     r.returncode == 0 and "MATCH | 2 files, 307,200 bytes each, CRC32 0x0bc3f483" in r.stdout
                     and "$ forensics diagnose dumps/libedgetpu/convert_scores.bin dumps/broken/convert_scores.bin"
                     in r.stdout, r.stdout[-2000:] + r.stderr)

        r = run([python, "-c", "from forensics import reports; print(reports.story_dumps())"], cwd=elsewhere, env=env)
        dumps = r.stdout.strip()
        checks.check("reports.story_dumps() is inside the venv", dumps.startswith(venv), r.stdout + r.stderr)
        d = lambda path: os.path.join(dumps, *path.split("/"))  # noqa: E731
        smoke = [  # (expected exit, argv), on the files the package ships
            (0, ["crc", d("libedgetpu/input.bin"), d("ours/input.bin")]),
            (1, ["crc", d("libedgetpu/input.bin"), d("broken/input.bin"), "--chunk", "960"]),
            (0, ["diff", d("libedgetpu/convert_scores.bin"), d("ours/convert_scores.bin")]),
            (1, ["diff", d("libedgetpu/convert_scores.bin"), d("broken/convert_scores.bin"), "--limit", "3"]),
            (0, ["anchors", d("ours/convert_scores.bin"), "--nonuniform", "--deps", d("face_ssd")]),
            (0, ["decode", d("ours/Squeeze1.bin"), d("ours/convert_scores.bin"), "--deps", d("face_ssd")]),
            (0, ["decode", d("ours/Squeeze1.bin"), d("ours/convert_scores.bin"), "--model",
                 d("face_ssd/face_ssd_tail.tflite")]),
            (0, ["link", d("link/tiny_edgetpu.tflite"), "--check", d("link/libedgetpu_0_0.bin")]),
            (1, ["link", d("link/tiny_edgetpu.tflite"), "--check", d("link/seed_driver_0_0.bin")]),
        ]
        for expected, argv in smoke:
            r = run(forensics + argv + ["--json"], cwd=elsewhere, env=env)
            checks.check(f"forensics {argv[0]} ... exits {expected}", r.returncode == expected,
                         f"exit {r.returncode}\n{r.stderr}")

        if run([python, "-c", "import nbclient, ipykernel"], env=env).returncode == 0:
            notebook = os.path.join(REPO, "notebooks", "investigation.ipynb")
            code = ("import sys, nbformat, nbclient\n"
                    "nb = nbformat.read(sys.argv[1], as_version=4)\n"
                    "nbclient.NotebookClient(nb, timeout=300, kernel_name='python3',\n"
                    "                        resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
                    "print('cells', len(nb.cells))\n")
            r = run([python, "-c", code, notebook, elsewhere], cwd=elsewhere, env=env)
            checks.check("the bundled notebook runs on the installed package", r.returncode == 0,
                         r.stdout[-1500:] + r.stderr[-3000:])
        checks.check("nothing was written into the folder the commands ran from", os.listdir(elsewhere) == [],
                     " ".join(os.listdir(elsewhere)))
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    # (not the "N passed, N failed" form: the suite's own closing line is the count of tests)
    outcome = f"{checks.failed} of {checks.done} checks FAILED" if checks.failed else f"all {checks.done} checks ok"
    print(f"check_wheel: {outcome} ({time.monotonic() - start:.0f} s)")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
