"""Fixtures of the in-image smoke suite: expectations rendered from the manifest, the image's own
config, and the GPU gate (skip with a reason, or fail under --require-gpu).

Two kinds of skip, on purpose:
- no GPU visible: the `gpu` fixture skips, and --require-gpu turns that skip into a failure;
- the check does not apply to this release or this device (the manifest does not include the
  component, its PyTorch predates the API, the device lacks the kernels): a skip with the reason in
  every mode, because a GPU runner with an A100 must not fail an FP8 check.
"""

import importlib
import json
import os
import sys
from pathlib import Path
from typing import Optional

import pytest
from gpu_facts import TORCH_API_SINCE, release_at_least, unsupported_family_reason
from processes import run

SMOKE_DIR = Path(os.environ.get("NGCBUILD_SMOKE_DIR", "/opt/ngcbuild"))
EXPECT_DIR = SMOKE_DIR / "expect"
# The shared pure modules (the version rule) are staged beside the expectations (smoke/staging.py).
sys.path.insert(1, str(EXPECT_DIR))
PERF_RESULTS = pytest.StashKey[dict]()


def pytest_addoption(parser):
    parser.addoption("--require-gpu", action="store_true", help="a GPU check that would skip fails instead")
    parser.addoption("--perf", action="store_true", help="also run the performance smoke (marked perf)")
    parser.addoption("--perf-out", default=None, help="write the measured figures as JSON to this file")


def pytest_configure(config):
    config.addinivalue_line("markers", "perf: performance smoke, runs only with --perf")
    config.addinivalue_line("markers", "slow: an expensive check (seconds to minutes): runs after the others")
    config.addinivalue_line("markers", "image: checks the image itself (env, labels, pins); not in host mode")
    config.addinivalue_line("markers", "component(name): applies when the manifest's image carries `name`")
    config.addinivalue_line("markers", "torch_api(name): applies when the manifest's PyTorch has that API")
    config.addinivalue_line("markers", "gpu_feature(name): applies when the manifest lists gpu.features: name")
    config.addinivalue_line("markers", "derived: checks of a derived release's image (test_derived.py)")
    config.stash[PERF_RESULTS] = {}


def pytest_collection_modifyitems(config, items):
    # The expensive checks (marked slow: an ldd of every library, compiling an extension) run last, so
    # that a run stopped at its first failure (-x, as `ngcbuild mutate` runs it) reports a cheap
    # check's failure without paying for them. Every check still runs in a full run.
    items.sort(key=lambda item: item.get_closest_marker("slow") is not None)
    _select_derived(config, items)
    # Without --perf the performance smoke is not part of the run at all (not a skip to count).
    if config.getoption("--perf"):
        return
    kept = [item for item in items if item.get_closest_marker("perf") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


def _select_derived(config, items):
    """The derived checks run for a derived release only; on an image base (whose manifest is not ours,
    so no base expectations exist) they are all that runs."""
    try:
        derived = load_expected().get("derived")
    except FileNotFoundError:
        derived = None
    if derived is None:
        dropped = [item for item in items if item.get_closest_marker("derived") is not None]
    elif not derived.get("base_checks", True):
        dropped = [item for item in items if item.get_closest_marker("derived") is None]
    else:
        return
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]


def load_expected() -> dict:
    return json.loads((EXPECT_DIR / "expected.json").read_text())


# The id of the one check that stands for an empty parameter set (pytest's own would be "NOTSET").
NONE_DECLARED = "none declared"


def each(metafunc, argname: str, values, none_reason: str) -> None:
    """One check per value of `values` (the summary names what is wrong); over no value, one check that
    skips with `none_reason`, in the project's words: pytest's own would be "[NOTSET]" skipped because it
    "got empty parameter set", which says nothing to whoever reads the summary."""
    values = list(values)
    if values:
        metafunc.parametrize(argname, values)
    else:
        skipped = pytest.mark.skip(reason=none_reason)
        metafunc.parametrize(argname, [pytest.param(None, id=NONE_DECLARED, marks=skipped)])


def pytest_runtest_setup(item):
    """Checks that do not apply to this release skip before any fixture (the GPU gate) runs."""
    marks = list(item.iter_markers())
    if not any(m.name in ("component", "torch_api", "gpu_feature") for m in marks):
        return
    expected = load_expected()
    in_image = expected.get("components_in_image", list(expected["components"]))
    for mark in item.iter_markers("component"):
        name = mark.args[0]
        if name not in in_image:
            pytest.skip(f"{name} is not among the components of {expected['release']}: nothing to check")
    for mark in item.iter_markers("torch_api"):
        api = mark.args[0]
        version = expected["components"].get("pytorch")
        if version and not release_at_least(version, TORCH_API_SINCE[api]):
            pytest.skip(f"{api} appeared in PyTorch {TORCH_API_SINCE[api]}; the manifest pins {version}")
    for mark in item.iter_markers("gpu_feature"):
        feature = mark.args[0]
        if feature not in expected["gpu"].get("features", []):
            pytest.skip(f"the manifest of {expected['release']} does not list gpu.features: {feature}")


@pytest.fixture(scope="session")
def expected():
    return load_expected()


@pytest.fixture(scope="session")
def image_config():
    """`Config` of the image under test, as the engine reports it (env, labels, workdir, entrypoint)."""
    return json.loads((EXPECT_DIR / "image.json").read_text())


@pytest.fixture(scope="session")
def installed():
    """Distributions a plain interpreter of the image sees, with the image's environment as it is (the
    mounted pytest is on this process's sys.path only, never in the environment)."""
    output = run([sys.executable, str(Path(__file__).with_name("list_distributions.py"))], check=True)
    return json.loads(output.stdout)


def gpu_absence_reason() -> Optional[str]:
    """None when PyTorch sees a GPU; otherwise why not, in one line."""
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() > 0:
        return None
    return (f"no GPU visible to PyTorch {torch.__version__} (CUDA build: {torch.version.cuda}; "
            f"/dev/nvidiactl {'present' if os.path.exists('/dev/nvidiactl') else 'absent'})")


@pytest.fixture
def gpu(request):
    """torch.cuda, when a GPU is visible; otherwise skip with the reason (fail under --require-gpu)."""
    import torch

    reason = gpu_absence_reason()
    if reason is None:
        # Not a missing GPU but one the release predates: a skip in every mode.
        expected = load_expected()
        devices = [(torch.cuda.get_device_name(i), tuple(torch.cuda.get_device_capability(i)))
                   for i in range(torch.cuda.device_count())]
        unsupported = unsupported_family_reason(devices, expected["gpu"].get("families", []), expected["release"])
        if unsupported:
            pytest.skip(unsupported)
        return torch.cuda
    if request.config.getoption("--require-gpu"):
        pytest.fail(f"--require-gpu: {reason}")
    pytest.skip(reason)


def import_component(component: str, module: str):
    """A component's Python module; where the image carries the component (the manifest says so)
    but the module does not import, the check fails saying that, not with a bare ImportError."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        expected = load_expected()
        version = expected["components"].get(component, "")
        pytest.fail(f"{component} {version} is in the image by the manifest of {expected['release']}, but its "
                    f"Python module does not import: `import {module}`: {exc}", pytrace=False)


@pytest.fixture
def figure(record_property):
    """Record a check's headline figure ("712.4 TFLOP/s") for the JUnit report and the summary table."""
    def record(text: str) -> None:
        record_property("figure", text)
    return record


@pytest.fixture
def perf_results(request):
    """Where performance checks put their measurements (written to --perf-out at the end)."""
    return request.config.stash[PERF_RESULTS]


def pytest_sessionfinish(session):
    path = session.config.getoption("--perf-out")
    if not path or session.config.getoption("--collect-only"):  # nothing was measured
        return
    import torch

    reason = gpu_absence_reason()
    device = None
    if reason is None:
        props = torch.cuda.get_device_properties(0)
        device = {"name": torch.cuda.get_device_name(0), "count": torch.cuda.device_count(),
                  "capability": "{}.{}".format(*torch.cuda.get_device_capability(0)),
                  "memory_bytes": props.total_memory}
    report = {"device": device, "no_gpu_reason": reason, "torch": torch.__version__,
              "cuda": torch.version.cuda, "figures": session.config.stash[PERF_RESULTS]}
    Path(path).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
