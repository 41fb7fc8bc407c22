"""Tolerance policy: how far B may be from A and still pass, per tensor, and the verdict that follows.

A tolerance is an absolute tolerance `atol` in LSB (`1lsb`, integer buffers: the quantized code) or in
dequantized units (`0.01`), a relative tolerance `rtol` (an element passes when |b - a| <= atol + rtol * |a|,
numpy's allclose), and which statistic must pass (`check`): `max` (every element), `p99` (99 % of the
elements, nearest rank) or `mean` (mean |b - a| <= atol + rtol * mean |a|). An LSB tolerance applies to
integer buffers only; float buffers are compared with a tolerance in units (atol 0 unless one is given).

Verdicts: MATCH (bit-identical as configured), WITHIN TOLERANCE (different, but the check passes), DIFFER.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from forensics.core import serial
from forensics.core.errors import InputError
from forensics.core.verdict import Verdict

CHECKS = ("max", "mean", "p99")
MATCH, WITHIN, DIFFER = Verdict.MATCH, Verdict.WITHIN, Verdict.DIFFER
TRUNCATED, HEAD_WINDOW = Verdict.TRUNCATED, Verdict.HEAD_WINDOW  # forensics.core.verdict says what they mean
VERDICTS = (MATCH, WITHIN, DIFFER)


@dataclass(frozen=True)
class Tolerance(serial.Serial):
    """One tolerance: atol (in LSB when `lsb`, else in units), rtol, and the statistic that must pass."""

    atol: float = 0.0
    lsb: bool = field(default=True, metadata=serial.json("atol_unit", encode=lambda lsb: "lsb" if lsb else "value",
                                                          decode=lambda unit: unit == "lsb"))
    rtol: float = 0.0
    check: str = "max"

    def __post_init__(self):
        if self.check not in CHECKS:
            raise InputError(f"check must be one of {', '.join(CHECKS)}, got {self.check!r}")
        for name in ("atol", "rtol"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise InputError(f"{name} must be a non-negative number, got {value}")

    @property
    def exact(self) -> bool:
        return self.atol == 0 and self.rtol == 0

    def atol_units(self, *, integer: bool, scale: float | None) -> float:
        """The absolute tolerance in the units the statistics are in (dequantized, or raw codes)."""
        if not self.lsb:
            return self.atol
        if not integer:
            return 0.0  # an LSB tolerance means nothing for floats: they are compared exactly
        return self.atol * (scale if scale is not None else 1.0)

    def lsb_threshold(self) -> int | None:
        """The whole-LSB threshold a byte diff can filter its listing with, when this tolerance is one."""
        if self.lsb and self.rtol == 0 and self.check == "max" and float(self.atol).is_integer():
            return int(self.atol)
        return None

    def describe(self) -> str:
        parts = []
        if self.atol:
            parts.append(f"atol {_number(self.atol)}{' LSB' if self.lsb else ''}")
        if self.rtol:
            parts.append(f"rtol {_number(self.rtol)}")
        if self.check != "max":
            parts.append(f"check {self.check}")
        return ", ".join(parts) or "exact"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


_LSB = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*lsb\s*$", re.IGNORECASE)


def parse_atol(text: str, param: str = "atol") -> tuple[float, bool]:
    """`1lsb` -> (1.0, True); `0.01` -> (0.01, False). `param`: the parameter the text came from."""
    match = _LSB.match(text)
    try:
        value, lsb = (float(match.group(1)), True) if match else (float(text), False)
    except ValueError:
        raise InputError(f"expected a number of LSB like 1lsb or a value like 0.01, got {text!r}", param=param,
                         value=text) from None
    if not (math.isfinite(value) and value >= 0):
        raise InputError(f"expected a non-negative number, got {text!r}", param=param, value=text)
    return value, lsb


def parse_rtol(text: str, param: str = "rtol") -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"expected a number like 0.01, got {text!r}", param=param, value=text) from None
    if not (math.isfinite(value) and value >= 0):
        raise InputError(f"expected a non-negative number, got {text!r}", param=param, value=text)
    return value


def parse_spec(text: str, base: "Tolerance") -> Tolerance:
    """A per-tensor SPEC: `2lsb`, `0.01`, or `atol=2lsb,rtol=0.01,check=p99` (unnamed fields from `base`)."""
    fields = {"atol": base.atol, "lsb": base.lsb, "rtol": base.rtol, "check": base.check}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise InputError(f"empty field in tolerance {text!r}")
        key, sep, value = part.partition("=")
        if not sep:
            key, value = "atol", part
        key = key.strip().lower()
        if key not in ("atol", "rtol", "check"):
            raise InputError(f"unknown tolerance field {key!r} in {text!r} (atol, rtol, check)")
        try:  # an error names this SPEC's field, not the --atol / --rtol options
            if key == "atol":
                fields["atol"], fields["lsb"] = parse_atol(value)
            elif key == "rtol":
                fields["rtol"] = parse_rtol(value)
            else:
                fields["check"] = value.strip().lower()
        except InputError as exc:
            raise InputError(f"{key} of {text!r}: {exc.reason}", param="tolerance", value=text) from None
    return Tolerance(**fields)


@dataclass(frozen=True)
class TolerancePolicy:
    """The default tolerance and per-tensor overrides (by tensor name, or `stage:tensor`)."""

    default: Tolerance = Tolerance()
    per_tensor: tuple[tuple[str, Tolerance], ...] = ()

    @property
    def exact(self) -> bool:
        return self.default.exact and all(t.exact for _, t in self.per_tensor)

    def for_buffer(self, stage: str, tensor: str) -> Tolerance:
        for name, tol in self.per_tensor:
            if name in (tensor, f"{stage}:{tensor}"):
                return tol
        return self.default

    def check_names(self, keys) -> None:
        """InputError naming a per-tensor tolerance that matches no (stage, tensor) of the runs."""
        keys = list(keys)
        known = {t for _, t in keys} | {f"{s}:{t}" for s, t in keys}
        for name, _ in self.per_tensor:
            if name not in known:
                have = ", ".join(sorted({t for _, t in keys}))
                raise InputError(f"tolerance for {name!r}: the runs have no such tensor (they have {have})")

    def to_dict(self) -> dict:
        return {"default": self.default.to_dict(), "tensors": {n: t.to_dict() for n, t in self.per_tensor}}


def make_policy(*, tolerance: int | None = None, atol: str | None = None, rtol: str | float | None = None,
                check: str | None = None, per_tensor=()) -> TolerancePolicy:
    """The policy from the parameters: `tolerance` K is an atol of K LSB (the older spelling of atol=Klsb);
    `per_tensor` holds (name, spec) pairs whose unnamed fields come from the default."""
    if tolerance is not None and atol is not None:
        raise InputError("give {tolerance} K (LSB) or {atol}, not both", params=True)
    value, lsb = (float(tolerance), True) if tolerance is not None else (parse_atol(atol) if atol else (0.0, True))
    if check is not None and check not in CHECKS:
        raise InputError(f"must be one of {', '.join(CHECKS)}, got {check!r}", param="check", value=check)
    rt = parse_rtol(rtol) if isinstance(rtol, str) else float(rtol or 0.0)
    default = Tolerance(atol=value, lsb=lsb, rtol=rt, check=check or "max")
    seen, items = set(), []
    for name, spec in per_tensor:
        if not name:
            raise InputError(f"tolerance {name}={spec}: name a tensor (TENSOR=SPEC)")
        if name in seen:
            raise InputError(f"two tolerances for {name!r}")
        seen.add(name)
        items.append((name, parse_spec(spec, default)))
    return TolerancePolicy(default, tuple(items))


def lsb_delta(a, b, dtype, keep=None) -> int:
    """The largest |b - a| of integer elements given as their raw bytes (uint8 arrays of whole elements, in
    `dtype`'s byte order), in LSB of the quantized code: int8 0x00 -> 0xff is 1 LSB, not 255. `keep` (one bool per
    element) leaves elements out (pad lanes). The one LSB rule of every command: an LSB tolerance applies to
    integer elements only (floats are compared exactly, see Tolerance.atol_units)."""
    import numpy as np

    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        raise ValueError(f"an LSB delta needs integer elements, not {dtype}")
    x, y = np.asarray(a).view(dtype), np.asarray(b).view(dtype)
    if keep is not None:
        x, y = x[keep], y[keep]
    if not x.size:
        return 0
    wide = np.int64 if dtype.itemsize < 8 or dtype.kind == "i" else np.float64
    return int(np.abs(x.astype(wide) - y.astype(wide)).max())


def passes(stats, tol: Tolerance, atol_units: float) -> bool:
    """Whether statistics computed with this tolerance pass its check."""
    if stats.nonfinite_mismatch:
        return False
    if tol.check == "max":
        return stats.violations == 0
    if tol.check == "p99":
        n = stats.count
        return stats.violations <= n - math.ceil(0.99 * n - 1e-9)
    return stats.min_atol is not None and stats.min_atol <= atol_units


def judge(*, equal: bool, comparable: bool = True, stats=None, tol: Tolerance | None = None,
          atol_units: float = 0.0) -> Verdict:
    """MATCH when equal; WITHIN TOLERANCE when the statistics pass; else DIFFER (also when not comparable)."""
    if equal and comparable:
        return MATCH
    if not comparable or stats is None or tol is None:
        return DIFFER
    return WITHIN if passes(stats, tol, atol_units) else DIFFER
