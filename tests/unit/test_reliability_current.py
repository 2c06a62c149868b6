"""RELIABILITY.md is up to date with what the tests hold, checked cheaply (no test of it is run).

A test run writes no project file: the figures of a whole run go to build/reliability/, and
RELIABILITY.md is refreshed by one command (`invoke reliability`, or `--from-run` after a whole run).
So this test says when that command is due: RELIABILITY.md is out of date when it counts other tests
than the suite holds (the tests marked `reliability`, as pytest collects them), another corpus of
broken inputs, other hostile cases per class than tests/corpus/hostile.py makes, or planted defects
other than the catalogue (smoke/mutants.yaml) for a release it has a table of."""

import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from ngcbuild.smoke import mutants

from ..conftest import REPO
from ..corpus.corpus import load_cases
from ..corpus.hostile import cases

REFRESH = "out of date: refresh it with `invoke reliability` (after a whole run: `invoke reliability --from-run`)"


@pytest.fixture(scope="module")
def report() -> str:
    return (REPO / "RELIABILITY.md").read_text(encoding="utf-8")


def _figure(report: str, label: str) -> str:
    found = re.search(rf"^\| {re.escape(label)} \| ([^|]+) \|", report, re.M)
    assert found, f"RELIABILITY.md has no row '{label}'"
    return found.group(1).strip()


def _collected(*args: str) -> list[str]:
    """The node ids pytest collects with `args` (a child pytest: collection only, no test runs)."""
    env = {**os.environ, "NGCBUILD_FIGURES": os.devnull}  # the child's figures are nobody's
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_it_counts_the_reliability_tests_the_suite_holds(report):
    passed, failed, skipped = map(int, _figure(report, "tests passed / failed / skipped").split(" / "))
    held = len(_collected("-m", "reliability", "tests"))
    assert passed + failed + skipped == held, f"RELIABILITY.md counts {passed + failed + skipped} reliability " \
                                              f"tests, the suite holds {held}: {REFRESH}"


def test_it_counts_the_corpus_of_broken_inputs(report):
    corpus = load_cases()
    assert int(_figure(report, "broken inputs in the corpus (manifests, constraints files, arguments)")) == \
        len(corpus), REFRESH
    assert int(_figure(report, "runs of them through `invoke build` and `invoke push`")) == 2 * len(corpus), REFRESH


# the tests that record hostile figures of their own beside hostile.py's cases, one row each
OWN_FIGURES = ("tests/corpus/test_interrupts.py", "tests/corpus/test_hostile_index.py")
# engine tests, not marked `reliability` (minutes each), that record one hostile figure each: counted in the
# figures of a whole run (`invoke reliability --from-run`), not in those of `invoke reliability`
WHOLE_RUN_FIGURES = (
    "tests/integration/test_mutants.py::test_an_interrupted_mutate_stops_its_workers_and_leaves_nothing",
    "tests/integration/test_attestation.py::test_an_interrupted_promote_leaves_the_old_state_or_the_whole_new_one",
)


def test_it_counts_the_hostile_cases_of_every_class(report):
    """Each case of hostile.py is one row of its class; the tests of OWN_FIGURES (interrupts, a hostile
    index) add one each, to classes they name themselves, and in a whole run's figures WHOLE_RUN_FIGURES too."""
    rows = dict(re.findall(r"^\| ([a-z][^|]*?) \| (\d+) \| \d+ \| \d+ \| \d+ \| \d+ \| \d+ \| \d+ \|$",
                           report, re.M))
    table = {klass: int(n) for klass, n in rows.items()}
    made = Counter(case.klass for case in cases())
    own = {klass for path in OWN_FIGURES for klass in re.findall(r'klass="([^"]+)"', (REPO / path).read_text())}
    assert set(made) <= set(table), f"classes {sorted(set(made) - set(table))}: {REFRESH}"
    assert set(table) - set(made) <= own, f"classes {sorted(set(table) - set(made) - own)}: {REFRESH}"
    short = {k: (table[k], n) for k, n in made.items() if table[k] < n}
    assert not short, f"(in RELIABILITY.md, in hostile.py): {short}: {REFRESH}"
    recorded = len(_collected("-m", "reliability", *OWN_FIGURES))
    if "Written by the whole test run" in report:
        recorded += len(_collected(*WHOLE_RUN_FIGURES))  # each still a test of the suite, or this fails
    assert sum(table.values()) == sum(made.values()) + recorded, REFRESH
    assert int(_figure(report, "hostile inputs (links, special files, file-system state, arguments, git refs...)")) \
        == sum(table.values()), REFRESH


def test_its_tables_of_planted_defects_name_the_whole_catalogue(report):
    catalogue = {mutant.id for mutant in mutants.load_catalogue()}
    sections = re.findall(r"<!-- mutants:([\w.-]+):begin -->(.*?)<!-- mutants:\1:end -->", report, re.S)
    assert sections, "RELIABILITY.md holds no table of planted defects (`ngcbuild mutate`, then `invoke reliability`)"
    for release, text in sections:
        listed = set(re.findall(r"^\| `([\w.-]+)` \|", text, re.M))
        absent = re.search(r"^Not applicable to .*?: (.*)\.$", text, re.M)
        named = listed | set(re.findall(r"`([\w.-]+)`", absent.group(1) if absent else ""))
        assert named == catalogue, f"the table of {release} names {sorted(named ^ catalogue)} otherwise than " \
                                   f"smoke/mutants.yaml: run `ngcbuild mutate --release {release}`, then {REFRESH}"
