"""Read untrusted YAML into plain data, or say exactly what is wrong with it.

`yaml.safe_load` alone accepts a duplicate key silently (the last one wins, so a second `version:`
quietly replaces the first), expands aliases without limit (a few hundred bytes of "billion laughs"
become 10^9 values for the validator to walk) and overflows the interpreter's stack on deep nesting.
Here the document is composed into nodes first, checked, and only then constructed.
"""

from __future__ import annotations

import yaml

from ngcbuild.core.errors import excerpt

# What a manifest could reasonably hold, with a wide margin: counts every value after expanding
# aliases, so a small file cannot make the validator walk millions of values.
MAX_VALUES = 100_000
MAX_DEPTH = 64


class YamlFloat(float):
    """A float that remembers how it was written: YAML reads `20.10` as 20.1, and a message that says
    "quote it" must show what the user typed."""

    source: str

    def __new__(cls, value: float, source: str):
        number = super().__new__(cls, value)
        number.source = source
        return number


class _Loader(yaml.SafeLoader):
    def construct_yaml_float(self, node):
        return YamlFloat(super().construct_yaml_float(node), str(node.value))


_Loader.add_constructor("tag:yaml.org,2002:float", _Loader.construct_yaml_float)


def number_hint(value) -> str:
    """'YAML read 20.10 as a number: quote it, '20.10'', in the words the user wrote."""
    text = getattr(value, "source", None) or repr(value)
    return f"YAML read {text} as a number: quote it, '{text}'"


class YamlProblem(Exception):
    """`key` is the dotted key path where the problem is ('' for the whole file)."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key, self.message = key, message


def load(text: str):
    """Parse one YAML document. Returns None for an empty document."""
    try:
        # The reader checks every character as it is created: a NUL byte fails here.
        loader = _Loader(text)
    except yaml.YAMLError as exc:
        raise YamlProblem("", "invalid YAML: " + _describe(exc)) from None
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise YamlProblem("", f"values are nested too deeply; expected at most {MAX_DEPTH} levels") from None
        except yaml.YAMLError as exc:
            raise YamlProblem("", "invalid YAML: " + _describe(exc)) from None
        if node is None:
            return None
        _check(node, (), [0])
        try:
            return loader.construct_document(node)
        except yaml.YAMLError as exc:
            raise YamlProblem("", "invalid YAML: " + _describe(exc)) from None
    finally:
        loader.dispose()


def _check(node: yaml.Node, path: tuple[str, ...], count: list[int]) -> None:
    """Depth, expanded size and unique keys, walking the node graph as the constructor would."""
    count[0] += 1
    if count[0] > MAX_VALUES:
        raise YamlProblem("", f"more than {MAX_VALUES} values (after expanding aliases); "
                              "expected a manifest of at most a few thousand values")
    if len(path) > MAX_DEPTH:
        raise YamlProblem(".".join(path[:3]) + "...",
                          f"values are nested too deeply; expected at most {MAX_DEPTH} levels")
    if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:timestamp":
        try:  # YAML reads 2026-13-45 as a date and the constructor fails with a bare ValueError
            yaml.constructor.SafeConstructor().construct_yaml_timestamp(node)
        except ValueError as exc:
            raise YamlProblem(".".join(path), f"{excerpt(node.value, 40)} is not a date ({exc}); expected a day "
                                              "YYYY-MM-DD such as 2026-12-31") from None
    if isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _check(item, (*path, str(index)), count)
    elif isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key, line = key_node.value, key_node.start_mark.line + 1
                if key == "<<" and key_node.tag == "tag:yaml.org,2002:merge":
                    raise YamlProblem(".".join(path), f"line {line}: merge keys (<<) are not supported; "
                                                      "expected plain keys (use `extends:` to share parts)")
                if key in seen:
                    raise YamlProblem(".".join((*path, key)),
                                      f"duplicate key at line {line} (first at line {seen[key]}); "
                                      "expected each key once")
                seen[key] = line
            else:
                key = "?"
            _check(value_node, (*path, key), count)


def _describe(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.reader.ReaderError):
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        return f"character U+{code:04X} at position {exc.position} is not allowed in YAML; expected printable text"
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return where + problem
