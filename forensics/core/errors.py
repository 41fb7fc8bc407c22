"""The one error family of forensics: user-facing problems with inputs, flags and formats.

Everything a user can cause (a missing file, a bad flag, a corrupt model) raises a subclass of
`ForensicsError`; the CLI prints its message as one line on stderr and exits 2. Internal bugs are
ordinary Python exceptions and deliberately *not* part of this family.
"""

from __future__ import annotations

from forensics.core import exitcodes


class ForensicsError(Exception):
    """Root of every error a user can cause. `str(error)` is the one line a library user reads.

    The library names parameters, not command-line flags: a message made with `params=True` is a template
    whose `{name}` (or `{name:METAVAR}`) fields are parameters. `str()` spells them as the parameter names
    (`give input_size or feature_maps, not both`, `give model=MODEL or deps=DIR`); the CLI calls `worded()`
    to spell them as its flags (`give --input-size or --feature-maps, not both`, `give --model MODEL or
    --deps DIR`).
    """

    exit_code = exitcodes.ERROR

    def __init__(self, message: str = "", *, params: bool = False, prefix: str | None = None,
                 param: str | None = None, value=None):
        # Structure, not a template over user text: `reason` is what is wrong, `param` the parameter it is about
        # (spelled as a flag by worded()), `value` what the user gave (never formatted into a template).
        self.reason = message
        self.param = param
        self.value = value
        self.template = message if params else None
        self.prefix = prefix
        super().__init__(self._spelled(_parameter_name))

    def _spelled(self, spell) -> str:
        reason = _spell(self.template, spell) if self.template is not None else self.reason
        if self.param is not None:
            reason = f"{spell(self.param, '')}: {reason}"
        return f"{self.prefix}: {reason}" if self.prefix else reason

    def worded(self, spell) -> str:
        """The message with each parameter spelled by `spell(name, metavar)` (metavar may be "")."""
        return self._spelled(spell)


def _parameter_name(name: str, metavar: str) -> str:
    return f"{name}={metavar}" if metavar else name


class _Field:
    def __init__(self, name, spell):
        self.name, self.spell = name, spell

    def __format__(self, spec: str) -> str:
        return self.spell(self.name, spec)


class _Fields(dict):
    def __init__(self, spell):
        super().__init__()
        self.spell = spell

    def __missing__(self, name):
        return _Field(name, self.spell)


def _spell(template: str, spell) -> str:
    try:
        return template.format_map(_Fields(spell))
    except (ValueError, IndexError):  # a value put into the template had braces of its own: say it as it is
        return template


def verbatim(text) -> str:
    """Text from outside (a name, a path) put into a `params=True` template as it is: its braces are not fields."""
    return str(text).replace("{", "{{").replace("}", "}}")


class InputError(ForensicsError):
    """A file or flag is unusable: missing, unreadable, empty, wrong size, malformed JSON, bad value."""

    def __init__(self, message: str, path: str | None = None, *, params: bool = False, param: str | None = None,
                 value=None):
        self.path = str(path) if path is not None else None
        super().__init__(message, params=params, prefix=self.path, param=param, value=value)


class FormatError(ForensicsError):
    """Bytes that do not parse: carries the byte offset and the path into the structure.

    `FormatError("vector length 4294967295 runs past the end", offset=0x1c,
    where=["Model", "subgraphs", "0", "tensors"], path="model.tflite")` reads as
    `model.tflite: at 0x1c in Model -> subgraphs -> 0 -> tensors: vector length ... runs past the end`.
    """

    def __init__(self, message: str, *, offset: int | None = None, where=(), path: str | None = None):
        self.reason = message
        self.offset = offset
        self.where = tuple(str(w) for w in where)
        self.path = str(path) if path is not None else None
        super().__init__(self._compose())

    def _compose(self) -> str:
        parts = []
        if self.path:
            parts.append(f"{self.path}:")
        if self.offset is not None:
            parts.append(f"at 0x{self.offset:x}")
        if self.where:
            parts.append("in " + " -> ".join(self.where) + ":")
        elif self.offset is not None:
            parts[-1] += ":"
        parts.append(self.reason)
        return " ".join(parts)

    def with_path(self, path: str) -> "FormatError":
        """The same error, naming the file it came from (set at the boundary that knows the file)."""
        return FormatError(self.reason, offset=self.offset, where=self.where, path=path)


class DependencyError(ForensicsError):
    """An optional component (LiteRT, libedgetpu, Pillow, pandas) is needed and not available."""


class reading:  # noqa: N801 - used as a context manager, reads as prose: `with reading(path, "a .tflite file"):`
    """Convert the OSErrors of opening and reading `path` into one-line InputErrors (the one boundary).

    `expected` finishes the sentence "is a directory, expected ...", e.g. "a .tflite file"; `what` names
    the file in "no such ..." (e.g. "model file").
    """

    def __init__(self, path, expected: str = "a file", what: str = "file"):
        self.path = str(path)
        self.expected = expected
        self.what = what

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is None or not isinstance(exc, OSError):
            return False
        if isinstance(exc, FileNotFoundError):
            raise InputError(f"no such {self.what}", self.path) from None
        if isinstance(exc, IsADirectoryError):
            raise InputError(f"is a directory, expected {self.expected}", self.path) from None
        if isinstance(exc, PermissionError):
            raise InputError("cannot read: permission denied", self.path) from None
        raise InputError(f"cannot read: {exc.strerror or exc}", self.path) from None
