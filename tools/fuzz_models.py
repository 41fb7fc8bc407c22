"""Fuzz the model commands (graph, extract, relayout, decode, link) with mutated .tflite models: no escapes.

An escape is anything but a normal answer or one error line with exit 2: an internal error (exit 3), a
traceback, an exception out of the CLI, several error lines, or a hang (over --timeout seconds). Each mutated
model is run through every command in-process (forensics.cli.main), in --workers processes; escapes are saved
under --save (the model bytes and a line saying how to run it) so that they become regression tests.

    python tools/fuzz_models.py --mutations 10000 [--models DIR] [--seed N]    # `make fuzz`

Seed models: one the project builds itself (an SSD CPU tail: forensics.model.tflite.writer.build_detection_model)
and every .tflite under --models (real Edge TPU models reach the package and relayout code). Mutations, in the
first 64 KiB where the tables are, or at the end: bytes, special 32-bit words (sizes, offsets, -1, 2^31),
truncation, a copied or dropped chunk. A mutation is reproduced from (--seed, its number) alone.
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import os
import random
import signal
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

WORDS = [b"\xff\xff\xff\x7f", b"\x00\x00\x00\x80", b"\x00" * 4, b"\x10\x00\x00\x00", b"\xfc\xff\xff\xff",
         b"\xff\xff\xff\xff", b"\x01\x00\x00\x00", b"\x00\x00\x01\x00"]


class Hang(BaseException):
    """Raised by the alarm: not an Exception, so the CLI's own handlers do not swallow it."""


def mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    limit = min(len(buf), 65536)
    for _ in range(rng.choice((1, 1, 1, 1, 2, 2, 3, 5, 8))):  # mostly one: a model that still parses goes deeper
        if not buf:
            break
        pos = rng.randrange(limit) % len(buf) if rng.random() < 0.9 else rng.randrange(len(buf))
        kind = rng.choice(["byte", "byte", "word", "word", "bits", "truncate", "copy", "drop"])
        if kind == "byte":
            buf[pos] = rng.randrange(256)
        elif kind == "bits":
            buf[pos] ^= 1 << rng.randrange(8)
        elif kind == "word" and pos + 4 <= len(buf):
            buf[pos:pos + 4] = rng.choice(WORDS)
        elif kind == "truncate":
            del buf[max(8, pos):]
        elif kind == "copy":
            src = rng.randrange(len(buf))
            buf[pos:pos] = buf[src:src + rng.randint(1, 64)]
        elif kind == "drop":
            del buf[pos:pos + rng.randint(1, 64)]
    return bytes(buf)


def built_model() -> bytes:
    import numpy as np

    from forensics.model.tflite.writer import build_detection_model

    rng = np.random.default_rng(7)
    anchors = np.concatenate([rng.uniform(0.1, 0.9, (96, 2)), rng.uniform(0.05, 0.5, (96, 2))], axis=1)
    return build_detection_model(anchors.astype(np.float32), num_classes=3, options=dict(max_detections=10))


def _plan(name: str, data: bytes, work: str) -> dict:
    """What each command is given for the unmutated model `name`: dumps of its decode inputs' sizes and a raw
    dump of one Edge TPU output layer (when it has a package), so that mutations reach past the first checks."""
    from forensics.core.errors import ForensicsError
    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.graph import postprocess_info
    from forensics.model.tflite.model import read_model
    from forensics.model.tflite.relayout import layer_map

    plan = {"boxes": 64, "scores": 64, "layer": "convert_scores", "raw": 64}
    try:
        model = read_model(data)
        pp = postprocess_info(model)
        if pp is not None:
            plan["boxes"], plan["scores"] = pp.boxes.size_bytes, pp.scores.size_bytes
        for package in read_packages(model):
            for exe in package.executables:
                for layer in exe.output_layers:
                    plan["layer"] = layer.name
                    plan["raw"] = layer_map(layer, tensor_bytes=model.tensor(layer.name).size_bytes).raw_size
                    break
    except (ForensicsError, AttributeError, ValueError):
        pass
    paths = {}
    for key in ("boxes", "scores", "raw"):
        paths[key] = os.path.join(work, f"{name}.{key}.bin")
        with open(paths[key], "wb") as fh:
            fh.write(bytes((i * 37) & 0xFF for i in range(max(1, min(plan[key], 1 << 24)))))
    return {"layer": plan["layer"], **paths}


def commands(model: str, plan: dict, work: str) -> dict[str, list[str]]:
    from forensics.cli import COMMAND_HOMES

    runs = {
        "graph": ["graph", model, "--json"],
        "extract": ["extract", model, "-o", os.path.join(work, "deps"), "--force"],
        "relayout": ["relayout", plan["raw"], "--model", model, "--layer", plan["layer"], "-o",
                     os.path.join(work, "relayouted.bin")],
        "decode": ["decode", plan["boxes"], plan["scores"], "--model", model, "--json"],
    }
    if "link" in COMMAND_HOMES:  # the driver's view of the package: plan, link a bitstream, parameters, check
        out = os.path.join(work, "linked.bin")
        runs.update({
            "link --plan": ["link", model, "--plan", "--json"],
            "link": ["link", model, "--executable", "0", "-o", out, "--force", "--allow-unlinked"],
            "link --parameters": ["link", model, "--parameters", "-o", out, "--force"],
            "link --check": ["link", model, "--check", plan["raw"]],
        })
    return runs


def _alarm(signum, frame):
    raise Hang()


_STATE: dict = {}


def _init(seeds: dict, seed: int, timeout: float) -> None:
    import warnings

    warnings.simplefilter("ignore")
    work = tempfile.mkdtemp(prefix="forensics-fuzz-")
    plans = {name: _plan(name, data, work) for name, data in seeds.items()}
    _STATE.update(seeds=seeds, names=sorted(seeds), seed=seed, timeout=timeout, work=work, plans=plans)
    if hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, _alarm)
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))  # a runaway allocation is an escape
    except (ImportError, ValueError, OSError):
        pass


def run_one(i: int) -> tuple[list[dict], dict]:
    """Mutation number i through every command; the escapes found and each command's exit code."""
    from forensics.cli import main

    rng = random.Random(f"{_STATE['seed']}:{i}")
    name = _STATE["names"][i % len(_STATE["names"])]
    data = mutate(_STATE["seeds"][name], rng)
    work = _STATE["work"]
    model = os.path.join(work, "mutated.tflite")
    with open(model, "wb") as fh:
        fh.write(data)
    escapes, codes = [], {}
    for command, argv in commands(model, _STATE["plans"][name], work).items():
        out, err = io.StringIO(), io.StringIO()
        what = None
        if hasattr(signal, "SIGALRM"):
            signal.setitimer(signal.ITIMER_REAL, _STATE["timeout"])
        try:
            code = main(argv, stdout=out, stderr=err)
        except Hang:
            what = f"hang (over {_STATE['timeout']} s)"
        except BaseException as exc:  # noqa: BLE001 - anything out of main() is an escape
            what = f"{type(exc).__name__} out of main(): {exc}"
        finally:
            if hasattr(signal, "SIGALRM"):
                signal.setitimer(signal.ITIMER_REAL, 0)
        codes[command] = code if what is None else "escape"
        if what is None:
            lines = err.getvalue().strip("\n").split("\n") if err.getvalue().strip() else []
            errors = [line for line in lines if "error" in line]
            if code not in (0, 1, 2):
                what = f"exit {code}: {err.getvalue().strip()[:300]}"
            elif "Traceback" in err.getvalue():
                what = "traceback"
            elif code == 2 and len(errors) != 1:
                what = f"exit 2 with {len(errors)} error lines: {err.getvalue().strip()[:300]}"
        if what is not None:
            escapes.append({"mutation": i, "seed": _STATE["seed"], "model": name, "command": command,
                            "argv": argv, "what": what, "data": data.hex() if len(data) < 1 << 20 else None})
    return escapes, codes


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mutations", type=int, default=10000)
    p.add_argument("--models", default=os.environ.get("FORENSICS_FUZZ_MODELS"),
                   help="a directory of .tflite models to mutate as well (env FORENSICS_FUZZ_MODELS)")
    p.add_argument("--seed", type=int, default=None, help="default: a random one (printed, to reproduce)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    p.add_argument("--timeout", type=float, default=20.0, help="seconds one command may take")
    p.add_argument("--save", default="fuzz-escapes", help="where escapes are written")
    args = p.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    seeds = {"built_ssd_tail.tflite": built_model()}
    if args.models:
        for name in sorted(os.listdir(args.models)):
            if name.endswith(".tflite"):
                with open(os.path.join(args.models, name), "rb") as fh:
                    seeds[name] = fh.read()
    names = list(commands("M", {"raw": "", "boxes": "", "scores": "", "layer": ""}, ""))
    print(f"fuzz_models: seed {seed}, {args.mutations} mutations of {len(seeds)} models x {len(names)} commands "
          f"({', '.join(names)}), {args.workers} workers", flush=True)
    start = time.monotonic()
    escapes, done, tally = [], 0, {}
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(args.workers, initializer=_init, initargs=(seeds, seed, args.timeout)) as pool:
        for found, codes in pool.imap_unordered(run_one, range(args.mutations), chunksize=16):
            done += 1
            escapes += found
            for command, code in codes.items():
                tally.setdefault(command, {}).setdefault(code, 0)
                tally[command][code] += 1
            if done % 1000 == 0:
                print(f"  {done} mutations, {len(escapes)} escapes, {time.monotonic() - start:.0f} s", flush=True)
    elapsed = time.monotonic() - start
    by_command: dict[str, int] = {}
    for e in escapes:
        by_command[e["command"]] = by_command.get(e["command"], 0) + 1
    print(f"fuzz_models: {done} mutations, {done * len(names)} command runs, {len(escapes)} escapes {by_command or ''} "
          f"in {elapsed:.0f} s (seed {seed})")
    for command, codes in tally.items():  # how far the mutations got: an answer (0/1) or one error line (2)
        print(f"  {command:18} " + ", ".join(f"exit {c}: {n}" for c, n in sorted(codes.items(), key=str)))
    if escapes:
        os.makedirs(args.save, exist_ok=True)
        with open(os.path.join(args.save, f"models-{seed}.jsonl"), "w", encoding="utf-8") as fh:
            for e in escapes:
                fh.write(json.dumps(e) + "\n")
        for e in escapes[:20]:
            print(f"  ESCAPE mutation {e['mutation']} of {e['model']}, {e['command']}: {e['what']}")
        print(f"  all of them with the mutated bytes: {os.path.join(args.save, f'models-{seed}.jsonl')}")
    return 1 if escapes else 0


if __name__ == "__main__":
    sys.exit(main())
