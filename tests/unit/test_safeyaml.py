"""The YAML reader for untrusted manifests: what plain safe_load lets through is refused here."""

import pytest

from ngcbuild.core import safeyaml


def problem(text: str) -> safeyaml.YamlProblem:
    with pytest.raises(safeyaml.YamlProblem) as caught:
        safeyaml.load(text)
    return caught.value


def test_plain_documents_load():
    assert safeyaml.load("a: 1\nb: [x, {c: d}]\n") == {"a": 1, "b": ["x", {"c": "d"}]}
    assert safeyaml.load("") is None and safeyaml.load("# only a comment\n") is None


def test_duplicate_key_names_its_path_and_lines():
    found = problem("a:\n  b: 1\n  c: 2\n  b: 3\n")
    assert found.key == "a.b"
    assert found.message == "duplicate key at line 4 (first at line 2); expected each key once"


def test_alias_expansion_is_bounded():
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, 7)]
    assert "after expanding aliases" in problem("\n".join(lines)).message


def test_small_aliases_still_work():
    assert safeyaml.load("a: &x [1, 2]\nb: *x\n") == {"a": [1, 2], "b": [1, 2]}


@pytest.mark.parametrize("text", ["a: " + "[" * 100 + "]" * 100, "a: " + "[" * 5000 + "]" * 5000, "a: &r [*r]"],
                         ids=["100-levels", "5000-levels", "self-reference"])
def test_deep_or_recursive_nesting_is_refused(text):
    assert "nested too deeply" in problem(text).message


def test_nul_and_merge_keys_are_refused():
    assert "U+0000" in problem("a: b\x00c\n").message
    assert "merge keys" in problem("x: &x {a: 1}\ny:\n  <<: *x\n").message


def test_a_date_that_is_no_day_is_named_with_its_key():
    """YAML reads 2026-13-45 as a timestamp, and its constructor fails with a bare ValueError."""
    with pytest.raises(safeyaml.YamlProblem) as caught:
        safeyaml.load("security:\n  allow:\n    - {id: PYSEC-1, expires: 2026-13-45}\n")
    assert caught.value.key == "security.allow.0.expires"
    assert caught.value.message.startswith("'2026-13-45' is not a date (month must be in 1..12)")
    assert safeyaml.load("expires: 2026-12-31")["expires"].isoformat() == "2026-12-31"
