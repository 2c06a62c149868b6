"""Frozen dataclasses read from and written to JSON: the one reader and writer of the record's types.

`load(cls, data)` checks every value against its field's type and raises Malformed naming the key of
the first one that is not (`smoke.failed`, `pushed.'h/r:t'.digest`); `dump(obj)` gives the JSON back.
The JSON is the one the stages have always written, so a record read and written again is the same:
each object remembers which keys it was read with (`present`), and a field is written when it was
present or holds something other than its default; keys this version does not know (a later
ngcbuild's) are kept in `more` and written back as they were.

Field types: str, int (never a bool), float (an int too), bool, list, list[str], dict, dict[str, T],
another Section, and `T | None`. A field's JSON name is its own unless its metadata says `json`
(`from` is no Python name). A Section's `FLAT` fields hold a Section whose keys lie at the same level
(the build's facts beside its image id, the build beside the record's sections).

A field's metadata may also name the `form` of its text (a digest, an image reference: sections.py
declares them) and, for a dict, the `key_form` of its keys; a value of the right type in another form
raises Malformed with `value` set: build/ may come from another job's artifact, and what a record
holds reaches Dockerfiles, command lines and labels.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import ClassVar

from ngcbuild.core.errors import excerpt

_INTERNAL = ("more", "present")


class Malformed(Exception):
    """A value of the wrong type (or a key missing where it must be there): `key` is its dotted path.
    `refused`: the value was of its type but not of its field's form (`value` holds it)."""

    def __init__(self, key: str, expected: str, value=None, refused: bool = False):
        super().__init__(f"{key}: expected {expected}")
        self.key, self.expected, self.value, self.refused = key, expected, value, refused


@dataclass(frozen=True)
class Form:
    """What a text field must look like: `expected` in words, `accepts` the test."""

    expected: str
    accepts: typing.Callable[[str], bool]
    plural: str = ""  # what keys of this form are, in words (`image references`)


@dataclass(frozen=True)
class Section:
    """Base of every type of the record. `more`: keys this version does not know, kept as they were;
    `present`: the keys it was read with (or made with, by `of`), written again even when empty."""

    FLAT: ClassVar[tuple[str, ...]] = ()

    more: dict = field(default_factory=dict, repr=False, compare=False)
    present: frozenset = field(default=frozenset(), repr=False, compare=False)

    @classmethod
    def of(cls, **values):
        """Made in code: every field given is written, even one holding its default (`pushed: {}`)."""
        return cls(**values, present=frozenset(_json_name(f) for f in _fields(cls)
                                               if f.name in values and f.name not in cls.FLAT))

    def whole(self):
        """The same, every field written (null where it holds None)."""
        return dataclasses.replace(self, present=frozenset(_json_name(f) for f in _fields(type(self))
                                                          if f.name not in self.FLAT))

    @classmethod
    def from_json(cls, data, key: str = ""):
        return load(cls, data, key)

    def to_json(self) -> dict:
        return dump(self)


def load(cls, data, key: str = ""):
    """`data` (parsed JSON) as a `cls`, or Malformed naming the first key that does not fit."""
    if not isinstance(data, dict):
        raise Malformed(key or "(the whole file)", "an object")
    hints = _hints(cls)
    values, used = {}, set()
    for f in _fields(cls):
        if f.name in cls.FLAT:
            inner = _section_of(hints[f.name])
            keys = _keys(inner)
            if keys & data.keys():
                values[f.name] = load(inner, {k: data[k] for k in keys if k in data}, key)
            used |= keys
            continue
        name = _json_name(f)
        used.add(name)
        if name in data:
            values[f.name] = _value(hints[f.name], data[name], _join(key, name), f.metadata.get("form"),
                                    f.metadata.get("key_form"))
    present = frozenset(name for name in data if name in used and not _is_flat_key(cls, hints, name))
    return cls(**values, more={k: v for k, v in data.items() if k not in used}, present=present)


def dump(obj: Section) -> dict:
    """The JSON object of `obj`: what it was read with, changed as the code changed it."""
    out = dict(obj.more)
    for f in _fields(type(obj)):
        value = getattr(obj, f.name)
        if f.name in type(obj).FLAT:
            if value is not None:
                out.update(dump(value))
            continue
        name = _json_name(f)
        if name in obj.present or value != _default(f):
            out[name] = _json(value)
    return out


def _json(value):
    if isinstance(value, Section):
        return dump(value)
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    return value


_SIMPLE = {str: "a string", int: "a whole number", float: "a number", bool: "true or false",
           list: "a list", dict: "an object"}


def _value(kind, value, key: str, form: Form | None = None, key_form: Form | None = None):
    """`value` checked against the field type `kind` (and converted where it is a Section), its text
    (the items of a list, the values of a dict) against `form`, a dict's keys against `key_form`."""
    args = typing.get_args(kind)
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _value(inner, value, key, form, key_form)
    origin = typing.get_origin(kind) or kind
    if isinstance(origin, type) and issubclass(origin, Section):
        return load(origin, value, key)
    if origin is int:
        ok = type(value) is int
    elif origin is float:
        ok = type(value) in (int, float)
    else:
        ok = isinstance(value, origin)
    if not ok:
        raise Malformed(key, _describe(kind))
    if origin is list and args:
        return [_value(args[0], item, f"{key}.{i}", form) for i, item in enumerate(value)]
    if origin is dict and args:
        for name in value:
            if key_form is not None and not key_form.accepts(name):
                raise Malformed(key, f"keys that are {key_form.plural}", value=name, refused=True)
        return {name: _value(args[1], item, _join(key, name), form) for name, item in value.items()}
    if origin is str:
        _check_form(form, value, key)
    return value


def _check_form(form: Form | None, text: str, key: str) -> None:
    if form is not None and not form.accepts(text):
        raise Malformed(key, form.expected, value=text, refused=True)


def _describe(kind) -> str:
    origin, args = typing.get_origin(kind) or kind, typing.get_args(kind)
    if origin is list and args == (str,):
        return "a list of strings"
    if origin is dict and args and args[1] is str:
        return "an object of strings"
    return _SIMPLE.get(origin, "an object")


def _join(key: str, name: str) -> str:
    # a name from the file (a reference, a platform) is shown escaped and short
    shown = name if name.isidentifier() else excerpt(name, 60)
    return f"{key}.{shown}" if key else shown


def _fields(cls):
    return [f for f in dataclasses.fields(cls) if f.name not in _INTERNAL]


def _json_name(f) -> str:
    return f.metadata.get("json", f.name)


def _default(f):
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _keys(cls) -> set[str]:
    """Every JSON key a `cls` reads at its own level, those of its flat fields included."""
    hints = _hints(cls)
    keys = set()
    for f in _fields(cls):
        keys |= _keys(_section_of(hints[f.name])) if f.name in cls.FLAT else {_json_name(f)}
    return keys


def _is_flat_key(cls, hints, name: str) -> bool:
    return any(name in _keys(_section_of(hints[flat])) for flat in cls.FLAT)


def _section_of(kind):
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    return args[0] if args else kind


_HINTS: dict = {}


def _hints(cls) -> dict:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]
