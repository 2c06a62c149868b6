"""What the smoke suite wrote in its out/ folder is read as hostile input (smoke/suite_output.py): the
image's own code wrote it, so a link to a host file, a FIFO, a huge file or figures of the wrong shape are
one SmokeFailed line, and a host file's content never reaches build/ or a message."""

import json
import os

import pytest

from ngcbuild.core.errors import SmokeFailed
from ngcbuild.smoke import suite_output
from ngcbuild.smoke.perf import perf_report, read_measured, render_perf
from ngcbuild.workspace.release_dir import JUNIT, PERF_MEASURED

SECRET = "s3cr3t-host-file"
GOOD = {"device": {"name": "NVIDIA H200", "count": 1}, "torch": "2.11", "cuda": "13.0",
        "figures": {"bf16_gemm": {"value": 700.5, "unit": "TFLOPS", "spread": 0.002, "burst": 720.0}}}


@pytest.fixture
def out(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def test_what_the_suite_wrote_is_read(out):
    (out / JUNIT).write_bytes(b"<testsuites/>")
    (out / PERF_MEASURED).write_text(json.dumps(GOOD))
    assert suite_output.read_output(out, JUNIT, suite_output.JUNIT_LIMIT) == b"<testsuites/>"
    measured = read_measured(out)
    assert measured == GOOD
    assert "bf16_gemm" in render_perf(perf_report("r", "sha256:x", measured))


def test_nothing_written_is_none(out):
    assert suite_output.read_output(out, JUNIT, suite_output.JUNIT_LIMIT) is None
    assert read_measured(out) is None


def test_a_link_to_a_host_file_is_refused_unread(out, tmp_path):
    host_file = tmp_path / "config.json"
    host_file.write_text(SECRET)
    for name in (JUNIT, PERF_MEASURED):
        (out / name).symlink_to(host_file)
    with pytest.raises(SmokeFailed, match=f"the smoke suite's {JUNIT} was refused: .*link to a file outside") as caught:
        suite_output.read_output(out, JUNIT, suite_output.JUNIT_LIMIT)
    assert SECRET not in str(caught.value)
    with pytest.raises(SmokeFailed, match="link to a file outside") as caught:
        read_measured(out)
    assert SECRET not in str(caught.value)


def test_a_fifo_a_folder_and_a_huge_file_are_refused_at_once(out):
    os.mkfifo(out / JUNIT)  # no writer: a blocking read would hang
    with pytest.raises(SmokeFailed, match="not a regular file"):
        suite_output.read_output(out, JUNIT, suite_output.JUNIT_LIMIT)
    (out / PERF_MEASURED).mkdir()
    with pytest.raises(SmokeFailed, match="not a regular file"):
        read_measured(out)
    (out / PERF_MEASURED).rmdir()
    with open(out / PERF_MEASURED, "wb") as sparse:
        sparse.truncate(suite_output.FIGURES_LIMIT * 1024)  # a GiB that takes no disk
    with pytest.raises(SmokeFailed, match="bytes"):
        read_measured(out)


@pytest.mark.parametrize("text, says", [
    ("{", "not valid JSON|not JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"device": "H200", "figures": {}}', "device: expected an object with a name and a count"),
    ('{"device": {"name": "H200", "count": 1}, "figures": []}', "figures: expected an object of figures"),
    ('{"device": {"name": "H200", "count": 1}, "figures": {"x": {"value": "fast", "unit": "s"}}}',
     "figures.'x': expected an object with a numeric value and a unit"),
    ('{"device": {"name": "H200", "count": 1}, "figures": {"x": {"value": 1, "unit": "s", "spread": "a"}}}',
     "figures.'x'.spread: expected a number"),
    ('{"device": null, "no_gpu_reason": 7}', "no_gpu_reason: expected text"),
    ("[" * 100000 + "]" * 100000, "nested|deep"),
])
def test_figures_of_the_wrong_shape_are_one_line(out, text, says):
    (out / PERF_MEASURED).write_text(text)
    with pytest.raises(SmokeFailed, match=says) as caught:
        read_measured(out)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 400
