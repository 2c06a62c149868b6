"""Property-based tests (hypothesis): the manifest loader, the constraints parser and the argument
validators, fed arbitrary text and mutated versions of real inputs. Every example must end in
success or the clean error (UserError) within a bound of CPU time: never another exception, never a
runaway parse. The bound is on the thread's CPU time, not the clock: on a loaded 2-core machine an
example may wait seconds for a core (CI's engine lane builds beside it), and a fresh clone's first call
imports and compiles modules, so each property calls its function once before the timed examples.

Each test records how many examples it tried, and how they ended, for RELIABILITY.md.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ngcbuild.cli.commands import _fraction
from ngcbuild.core import references
from ngcbuild.core.names import check_release_name
from ngcbuild.core.project import Project
from ngcbuild.engine import options, reuse
from ngcbuild.manifest.constraints import load_constraints
from ngcbuild.manifest.loader import load_release

from ..conftest import REPO, ScratchProject
from ..helpers import FuzzTally

pytestmark = pytest.mark.reliability

EXAMPLES = int(os.environ.get("NGCBUILD_FUZZ_EXAMPLES", "300"))
BOUND_S = 2.0  # CPU seconds per example; the slowest clean answer takes milliseconds
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])
DEV_MANIFEST = (REPO / "manifests" / "dev.yaml").read_text()
DEV_CONSTRAINTS = (REPO / "constraints" / "dev.txt").read_text()
# Characters that matter to YAML, to pins and to shells, so that mutations hit structure.
SPICE = st.sampled_from(list(":-[]{}#&*!|>'\"%@`,?\n\t =.+/\\$;~_0123456789aZ") + ["\x00", "\u2028", "\ufeff"])
SNIPPETS = st.text(alphabet=st.one_of(SPICE, st.characters()), max_size=40)


@pytest.fixture(scope="module")
def fuzz_project(tmp_path_factory) -> ScratchProject:
    project = ScratchProject(tmp_path_factory.mktemp("fuzz") / "project")
    project.copy_release("dev")
    return project


@pytest.fixture
def tally(figures, request):
    made = []

    def make(case: str) -> FuzzTally:
        made.append(FuzzTally(figures, case, bound_s=BOUND_S))
        return made[-1]

    yield make
    for one in made:
        one.record()


def _load(project: ScratchProject, manifest: str, constraints: str = DEV_CONSTRAINTS):
    (project.root / "manifests" / "fz.yaml").write_text(manifest, encoding="utf-8", errors="surrogatepass")
    (project.root / "constraints" / "fz.txt").write_text(constraints, encoding="utf-8", errors="surrogatepass")
    load_release(Project.at(project.root), "fz")


@st.composite
def mutated(draw, text: str) -> str:
    """`text` with a few edits: lines deleted, duplicated or swapped, snippets inserted or replacing
    a value, indentation changed."""
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            lines = [""]
        index = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["delete", "duplicate", "swap", "insert", "replace-value", "indent", "dedent"]))
        line = lines[index]
        if action == "delete":
            del lines[index]
        elif action == "duplicate":
            lines.insert(index, line)
        elif action == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[index], lines[other] = lines[other], lines[index]
        elif action == "insert":
            at = draw(st.integers(0, len(line)))
            lines[index] = line[:at] + draw(SNIPPETS) + line[at:]
        elif action == "replace-value":
            key, sep, _ = line.partition(":")
            lines[index] = (key + sep + " " + draw(SNIPPETS) + "\n") if sep else draw(SNIPPETS) + "\n"
        elif action == "indent":
            lines[index] = "  " + line
        else:
            lines[index] = line.lstrip()
    return "".join(lines)


def test_manifest_loader_on_arbitrary_text(fuzz_project, tally):
    t = tally("manifest loader: arbitrary text")
    t.warm(_load, fuzz_project, DEV_MANIFEST)

    @SETTINGS
    @given(st.text(alphabet=st.one_of(SPICE, st.characters()), max_size=400))
    def run(text):
        t.run(_load, fuzz_project, text)

    run()


def test_manifest_loader_on_mutated_manifests(fuzz_project, tally):
    t = tally("manifest loader: mutated dev manifest")
    t.warm(_load, fuzz_project, DEV_MANIFEST)

    @SETTINGS
    @given(mutated(DEV_MANIFEST))
    def run(text):
        t.run(_load, fuzz_project, text)

    run()
    assert t.counts["accepted"] and t.counts["clean"], t.counts  # the mutations reach both outcomes


def test_constraints_parser_on_arbitrary_and_mutated_text(fuzz_project, tally):
    t = tally("constraints parser: arbitrary and mutated text")
    root = fuzz_project.root
    path = root / "constraints" / "cz.txt"

    def parse(text):
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        load_constraints(path, within=root)

    t.warm(parse, DEV_CONSTRAINTS)

    @SETTINGS
    @given(st.one_of(st.text(alphabet=st.one_of(SPICE, st.characters()), max_size=300), mutated(DEV_CONSTRAINTS)))
    def run(text):
        t.run(parse, text)

    run()
    assert t.counts["accepted"] and t.counts["clean"], t.counts


ARGUMENT = st.one_of(st.text(alphabet=st.one_of(SPICE, st.characters()), max_size=80),
                     st.from_regex(r"[a-z0-9.:\[\]@/-]{0,40}", fullmatch=True))


def test_argument_validators(tmp_path, tally):
    t = tally("argument validators: registry, image, release, label, platform, threshold, CA bundle, wheelhouse")
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("not pem\n")
    checks = [
        lambda v: references.registry_host(v),
        lambda v: references.image_ref(v, "--base"),
        lambda v: check_release_name(v),
        lambda v: reuse.parse_labels([v]),
        lambda v: _fraction(v),
        lambda v: options.options_from(v, None, None, False, environ={}),
        lambda v: options.options_from(None, None, None, False, environ={}, platform=v, labels=[v], base=v),
        lambda v: options.options_from(None, str(tmp_path / v) if "\x00" not in v else v, None, False, environ={}),
        lambda v: options.options_from(None, None, str(tmp_path / v) if "\x00" not in v else v, False, environ={}),
    ]

    for check in checks:
        t.warm(check, "registry.example.com:5000/team/image:1")

    @SETTINGS
    @given(ARGUMENT, st.sampled_from(range(len(checks))))
    def run(value, which):
        t.run(checks[which], value)

    run()

