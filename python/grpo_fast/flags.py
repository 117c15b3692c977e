"""Options from their types: a dataclass's fields as ``argparse`` flags, and values
from command-line text or config files (TOML, JSON) checked against the same
types, with the same messages (:class:`~grpo_fast.errors.InvalidInputError`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import types
import typing
from pathlib import Path
from typing import Any, Literal

from grpo_fast.errors import InvalidInputError

__all__ = [
    "NEGATIVE_NUMBER",
    "Repeat",
    "add_dataclass_flags",
    "check_value",
    "config_from_file",
    "flag",
    "parse_text",
]

# argparse takes "-1e-5" for an option unless it looks like a negative number;
# its own pattern misses exponents.
NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


# ---------------------------------------------------------------------- typed values
def _members(hint: Any) -> tuple[Any, ...]:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(hint)
    return (hint,)


def _describe(hint: Any) -> str:
    names = {int: "an int", float: "a number", str: "a string", bool: "true or false"}
    if typing.get_origin(hint) is Literal:
        return f"one of {typing.get_args(hint)}"
    if hint is type(None):
        return "none"
    if typing.get_origin(hint) is dict or hint is dict:
        return "a table"
    return names.get(hint, getattr(hint, "__name__", str(hint)))


def _bad(name: str, hint: Any, value: Any) -> InvalidInputError:
    kinds = " or ".join(_describe(m) for m in _members(hint))
    return InvalidInputError(f"{name} must be {kinds}, got {value!r}")


def parse_text(name: str, hint: Any, text: str) -> Any:
    """A flag's text as a value of type ``hint`` (``"none"`` for an ``Optional``'s None)."""
    members = _members(hint)
    if type(None) in members and text.lower() in ("none", "null"):
        return None
    for m in members:
        if m is type(None):
            continue
        if typing.get_origin(m) is Literal:
            if text in typing.get_args(m):
                return text
        elif m is str:
            return text
        elif m is bool:
            if text.lower() in ("true", "false"):
                return text.lower() == "true"
        elif m is int:
            try:
                return int(text)
            except ValueError:
                pass
        elif m is float:
            try:
                return float(text)
            except ValueError:
                pass
    raise _bad(name, hint, text)


def check_value(name: str, hint: Any, value: Any) -> Any:
    """A config file's value checked against ``hint`` (text is read as a flag's would be)."""
    if typing.get_origin(hint) is tuple:
        (elem, *_rest) = typing.get_args(hint)
        items = value if isinstance(value, list | tuple) else [value]
        return tuple(check_value(name, elem, v) for v in items)
    members = _members(hint)
    for m in members:
        if m is type(None) and value is None:
            return None
        if typing.get_origin(m) is Literal and value in typing.get_args(m):
            return value
        if m is bool and isinstance(value, bool):
            return value
        if m is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if m is float and isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if m is str and isinstance(value, str):
            return value
        if (m is dict or typing.get_origin(m) is dict) and isinstance(value, dict):
            return value
    if isinstance(value, str):
        return parse_text(name, hint, value)
    raise _bad(name, hint, value)


class Repeat(argparse.Action):
    """``append`` whose first use replaces the default instead of adding to it."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        items = getattr(namespace, self.dest, None)
        items = [] if items is None or items is self.default else items
        setattr(namespace, self.dest, [*items, values])


def _type_converter(name: str, hint: Any) -> Any:
    def convert(text: str) -> Any:
        try:
            return parse_text(name, hint, text)
        except InvalidInputError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    convert.__name__ = _describe(hint)
    return convert


def add_dataclass_flags(parser: argparse.ArgumentParser, cls: type) -> None:
    """One flag per field of the dataclass ``cls``, typed by its annotation.

    ``bool``: ``--x`` / ``--no-x``; ``Literal``: its values; ``X | None``:
    ``none`` for None; ``tuple[X, ...]``: the flag repeated. Unset flags stay
    out of the namespace (a config file's value then stands).
    """
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        shown = ", ".join(map(str, default)) if isinstance(default, tuple) else default
        help_text = f.metadata.get("help", "") + (f" (default: {shown})" if shown != "" else "")
        kw: dict[str, Any] = {"default": argparse.SUPPRESS, "help": help_text}
        names = [flag(f.name), *f.metadata.get("aliases", ())]
        if hint is bool:
            parser.add_argument(*names, action=argparse.BooleanOptionalAction, **kw)
            continue
        if typing.get_origin(hint) is tuple:
            kw.update(action="append", metavar=f.metadata.get("metavar", f.name.upper()))
            hint = str  # one element's text
        else:
            literal = [m for m in _members(hint) if typing.get_origin(m) is Literal]
            if literal:
                kw["metavar"] = "{" + ",".join(typing.get_args(literal[0])) + "}"
        parser.add_argument(*names, type=_type_converter(f.name, hint), **kw)


# ---------------------------------------------------------------------- config files
def _load_toml(text: str) -> Any:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the backport (grpo-fast[train] depends on it)
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads(text)


def config_from_file(path: str, cls: type) -> dict[str, Any]:
    """The options in a TOML or JSON file, checked against ``cls``'s field types."""
    p = Path(path)
    if p.suffix.lower() in (".yaml", ".yml"):
        raise InvalidInputError(
            f"config file {path!r}: YAML is not supported; write the options as TOML (.toml) "
            "or JSON (.json)"
        )
    if p.suffix.lower() not in (".toml", ".json"):
        raise InvalidInputError(f"config file {path!r}: expected a .toml or .json file")
    if not p.is_file():
        raise InvalidInputError(f"config file {path!r} does not exist")
    try:
        values = (
            _load_toml(p.read_text()) if p.suffix.lower() == ".toml" else json.loads(p.read_text())
        )
    except ValueError as e:
        raise InvalidInputError(f"config file {path!r} is not valid {p.suffix[1:]}: {e}") from None
    if not isinstance(values, dict):
        raise InvalidInputError(f"config file {path!r} must hold a table/object of options")
    hints = typing.get_type_hints(cls)
    out = {}
    for key, value in values.items():
        name = key.replace("-", "_")
        if name not in hints:
            raise InvalidInputError(f"{path}: unknown option {key!r}; known: {sorted(hints)}")
        try:
            out[name] = check_value(name, hints[name], value)
        except InvalidInputError as e:
            raise InvalidInputError(f"{path}: {e}") from None
    return out
