"""The bug kinds: one module each under this package, declaring `KIND` (or several `Kind`s) with its simulate
spelling, its candidates, its finding and its rank. This registry finds them; adding a kind is adding a module
(or, from outside, `register(kind)`)."""

from __future__ import annotations

import importlib
import pkgutil

from forensics.diagnose.kinds.base import Bug, Kind
from forensics.core.errors import InputError

_REGISTRY: dict[str, Kind] = {}
_HELPERS = {"base", "fit"}  # modules here that declare no kind


def register(kind: Kind) -> Kind:
    """Add a kind (a module outside this package, e.g. a link's bugs): simulate parses its spelling and
    diagnose proposes its candidates."""
    if not isinstance(kind, Kind):
        raise TypeError(f"register takes a Kind, not {type(kind).__name__}")
    _REGISTRY[kind.name] = kind
    return kind


def _load() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name in _HELPERS:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, Kind):
                register(value)


_load()


def all_kinds() -> list[Kind]:
    """Every kind, most specific first."""
    return sorted(_REGISTRY.values(), key=lambda k: (k.rank, k.name))


def get(name: str) -> Kind | None:
    return _REGISTRY.get(name)


def names() -> tuple[str, ...]:
    return tuple(k.name for k in all_kinds())


def rank_of(name: str) -> int:
    kind = _REGISTRY.get(name)
    return kind.rank if kind is not None else 99


def group_of(name: str) -> int:
    """Kinds explaining the same bytes in different ways share a group (bits, saturation and requantize with
    signedness): among them the one changing fewer equal bytes wins, then the rank."""
    kind = _REGISTRY.get(name)
    if kind is None:
        return 99
    return kind.group if kind.group is not None else kind.rank


def display_of(name: str) -> int:
    kind = _REGISTRY.get(name)
    return kind.display if kind is not None else 99


def proposers() -> list[Kind]:
    """The kinds that propose candidates, in the order they do."""
    out = [k for k in _REGISTRY.values() if k.candidates is not None]
    return sorted(out, key=lambda k: (k.propose if k.propose is not None else k.rank, k.name))


def bug_help() -> tuple:
    """(kind, usage, description) of every kind simulate can build."""
    return tuple((k.name, k.usage, k.description) for k in sorted(
        (k for k in _REGISTRY.values() if k.parse is not None), key=lambda k: (k.display, k.name)))


def parse_bug(spec: str, size: int, previous=None) -> Bug:
    """`KIND[:PARAMS]` (see bug_help) -> a Bug for a reference of `size` bytes."""
    name, _, rest = spec.partition(":")
    args = rest.split(":") if rest else []
    kind = _REGISTRY.get(name)
    if kind is None or kind.parse is None:
        raise InputError(f"unknown bug kind {name!r}: one of {', '.join(k for k, _, _ in bug_help())}")
    try:
        return kind.parse(args, size, previous)
    except IndexError:
        raise InputError(f"bug {spec!r} is missing parameters: {kind.usage}") from None
