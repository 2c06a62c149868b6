"""The figures of RELIABILITY.md: counted from what the tests recorded, never assumed."""

from dev.reliability import render, summarize

CLEAN = [
    *({"suite": "corpus", "case": f"c{i} ({command})", "input": f"c{i}", "clean": True, "traceback": False}
      for i in range(40) for command in ("build", "push")),
    {"suite": "fault", "case": "SIGINT mid-build", "clean": True, "traceback": False, "leftovers": 0,
     "leftover_items": []},
    {"suite": "secrets", "case": "dev image", "found": 0},
    *({"suite": "hostile", "case": f"h{i}", "klass": f"class {i % 6}", "clean": True, "traceback": False,
       "hang": False, "secret": False, "leftovers": 0, "message": ""} for i in range(42)),
    *({"suite": "fuzz", "case": f"property {i}", "examples": 100, "accepted": 40, "clean_errors": 60, "errors": 0,
       "hangs": 0} for i in range(3)),
]
PASSED = {"passed": 4, "failed": 0, "skipped": 0}


def test_clean_records_give_a_clean_table():
    summary = summarize(CLEAN, PASSED)
    assert (summary.corpus.tried, summary.corpus.clean, summary.faults.tried, summary.secrets.tried) == (80, 80, 1, 1)
    assert len(summary.corpus.inputs) == 40
    assert summary.ok
    text = render(summary, "today")
    assert "| tracebacks | 0 | 0 |" in text and "| secrets found (registry password, CA bundle) | 0 | 0 |" in text
    assert "| SIGINT mid-build | yes | 0 |" in text and "All figures are as they must be" in text


def test_any_traceback_leftover_secret_or_unclean_case_is_not_ok():
    bad = [
        {"suite": "corpus", "case": "b (build)", "clean": False, "traceback": True, "message": "Traceback ..."},
        {"suite": "fault", "case": "engine killed", "clean": False, "leftovers": 2,
         "leftover_items": ["container 5ff14128f5c5 (Exited (137))", "file .intermediate-containers"]},
        {"suite": "secrets", "case": "push output", "found": 1},
    ]
    summary = summarize(CLEAN + bad, PASSED)
    assert not summary.ok
    assert (summary.corpus.tracebacks, summary.faults.leftovers, summary.secrets.found) == (1, 2, 1)
    text = render(summary, "today")
    assert "SOME FIGURES ARE WRONG" in text and "- b (build): Traceback ..." in text
    assert "| engine killed | **no** | 2 |" in text
    assert "- engine killed: ['container 5ff14128f5c5 (Exited (137))', 'file .intermediate-containers']" in text


def test_nothing_measured_a_small_corpus_or_skipped_tests_are_not_ok():
    assert not summarize([], PASSED).ok
    assert not summarize(CLEAN[2:], PASSED).ok  # 39 inputs
    assert not summarize([r for r in CLEAN if r["suite"] != "hostile"], PASSED).ok
    assert not summarize([r for r in CLEAN if r["suite"] != "fuzz"], PASSED).ok
    assert not summarize(CLEAN, {"passed": 3, "failed": 0, "skipped": 1}).ok


def test_hostile_classes_and_generated_examples_are_rows_and_count():
    bad = [
        {"suite": "hostile", "case": "fifo", "klass": "class 1", "clean": False, "traceback": False, "hang": True,
         "secret": False, "leftovers": 0, "message": "hung (killed after 30s)"},
        {"suite": "hostile", "case": "link", "klass": "class 2", "clean": False, "traceback": True, "hang": False,
         "secret": True, "leftovers": 1, "message": "secret echoed; exit 1, expected 2"},
        {"suite": "fuzz", "case": "property 0", "examples": 100, "accepted": 40, "clean_errors": 59, "errors": 1,
         "hangs": 0},
    ]
    summary = summarize(CLEAN + bad, PASSED)
    assert not summary.ok
    total = summary.hostile_total
    assert (total.cases, total.clean, total.hangs, total.tracebacks, total.secrets, total.leftovers,
            total.wrong_exit) == (44, 42, 1, 1, 1, 1, 1)
    text = render(summary, "today")
    assert "| class 1 | 8 | 7 | 0 | 1 | 0 | 0 | 0 |" in text
    told = {"suite": "hostile", "case": "interrupt", "klass": "class 3", "clean": True, "traceback": False,
            "hang": False, "secret": False, "leftovers": 0, "message": "8 requests waiting; exit 130 0.2s after it"}
    assert summarize(CLEAN + [told], PASSED).hostile_total.wrong_exit == 0  # an exit told, not a wrong one
    assert "| property 0 | 100 | 40 | 59 | 1 | 0 |" in text
    assert "| generated examples (hypothesis: loader, constraints, argument validators) | 300 | |" in text
    assert "- link: secret echoed; exit 1, expected 2" in text
    assert summarize(CLEAN, PASSED).ok
