"""What an NGC release holds beyond versions: the start-up text printed once, a PyTorch built with the
LAPACK, MPI, MKL, NVSHMEM and cuSPARSELt the manifest promises (stack.torch_with), torchvision's compiled ops and
image decoders, one copy of each Python distribution. No GPU needed. Runs on every release's Python,
3.6 included (no f-string `=`, no importlib.metadata, no subprocess capture_output)."""

import os
import re
import subprocess
import sys
from collections import defaultdict

import pytest

LICENSE_LINE = "governed by the NVIDIA Deep Learning Container License"


def _entrypoint_output(expected):
    result = subprocess.run([expected["entrypoint"], "true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.image
def test_start_up_text_is_printed_once(expected):
    """The image's snippets replace the base image's: a base's own license text must not print too."""
    out = _entrypoint_output(expected)
    wanted = sum(LICENSE_LINE in line for line in expected["banner"])
    assert out.count(LICENSE_LINE) == wanted, \
        "the license line is printed %d times, the manifest's banner has it %d times:\n%s" % (
            out.count(LICENSE_LINE), wanted, out)
    assert out.count("== PyTorch ==") == 1, \
        "the banner is printed %d times at start-up (once expected):\n%s" % (out.count("== PyTorch =="), out)


def _torch_with(expected):
    return expected.get("stack", {}).get("torch_with", [])


def test_torch_has_lapack_where_the_manifest_promises_it(expected):
    if "lapack" not in _torch_with(expected):
        pytest.skip("the manifest does not list stack.torch_with: lapack")
    import torch

    # torch.inverse runs LAPACK's getrf/getri on the CPU; a build without LAPACK raises here.
    matrix = torch.tensor([[4.0, 7.0], [2.0, 6.0]], dtype=torch.float64)
    product = torch.matmul(matrix, torch.inverse(matrix))
    assert torch.allclose(product, torch.eye(2, dtype=torch.float64)), product


def test_torch_has_mpi_where_the_manifest_promises_it(expected):
    if "mpi" not in _torch_with(expected):
        pytest.skip("the manifest does not list stack.torch_with: mpi")
    assert _has_capability("mpi"), "PyTorch was built without MPI"


def test_torch_has_mkl_where_the_manifest_promises_it(expected):
    if "mkl" not in _torch_with(expected):
        pytest.skip("the manifest does not list stack.torch_with: mkl")
    assert _has_capability("mkl"), \
        "PyTorch was built without MKL (torch.backends.mkl.is_available() is False): %s" % _blas_line()


def _blas_line():
    import torch

    found = [line.strip() for line in torch.__config__.show().splitlines() if "BLAS" in line]
    return "; ".join(found) or "torch.__config__.show() names no BLAS"


def test_torch_has_nvshmem_where_the_manifest_promises_it(expected):
    if "nvshmem" not in _torch_with(expected):
        pytest.skip("the manifest does not list stack.torch_with: nvshmem")
    assert _has_capability("nvshmem"), \
        "PyTorch cannot use NVSHMEM (torch.distributed._symmetric_memory.is_nvshmem_available() is False)"


def test_torch_has_cusparselt_where_the_manifest_promises_it(expected):
    """NGC's notes: "builds pytorch with cuSPARSELt turned-on" (since 24.06). A source build that did not find
    the library turns it off with a warning only: this is where that shows."""
    if "cusparselt" not in _torch_with(expected):
        pytest.skip("the manifest does not list stack.torch_with: cusparselt")
    assert _has_capability("cusparselt"), \
        "PyTorch was built without cuSPARSELt (torch.backends.cusparselt.is_available() is False)"


def _has_capability(capability):
    """Whether the image's PyTorch has a capability a build may link or leave out."""
    import torch

    if capability == "lapack":
        try:
            torch.inverse(torch.eye(2, dtype=torch.float64))
        except RuntimeError:
            return False
        return True
    if capability == "mpi":
        import torch.distributed as dist

        return dist.is_available() and dist.is_mpi_available()
    if capability == "mkl":
        return torch.backends.mkl.is_available()
    if capability == "nvshmem":
        try:
            from torch.distributed import _symmetric_memory
        except ImportError:
            return False
        return bool(getattr(_symmetric_memory, "is_nvshmem_available", lambda: False)())
    if capability == "cusparselt":
        # compiled in or not (torch._C._has_cusparselt); PyTorch before 2.1 has no such backend at all
        backend = getattr(torch.backends, "cusparselt", None)
        return bool(backend is not None and backend.is_available())
    raise ValueError("no probe for %s" % capability)


def _torch_without(expected):
    return expected.get("stack", {}).get("torch_without", [])


@pytest.mark.parametrize("capability", ["lapack", "mpi", "mkl", "nvshmem", "cusparselt"])
def test_torch_lacks_what_the_manifest_builds_it_without(expected, capability):
    """What the notes say this image's PyTorch is built without (25.12: MPI turned off, OpenBLAS where NGC
    links MKL) is absent: a build that picked HPC-X's MPI up from the base would be another image than the
    notes describe."""
    if capability not in _torch_without(expected):
        pytest.skip("the manifest does not list stack.torch_without: %s" % capability)
    said = {"lapack": "torch.inverse runs on the CPU", "mpi": "torch.distributed.is_mpi_available() is True",
            "nvshmem": "torch.distributed._symmetric_memory.is_nvshmem_available() is True",
            "cusparselt": "torch.backends.cusparselt.is_available() is True"}
    assert not _has_capability(capability), \
        "PyTorch has %s, which the manifest says the build is without (stack.torch_without): %s" % (
            capability, _blas_line() if capability == "mkl" else said[capability])


@pytest.mark.image
def test_each_command_the_manifest_promises_is_on_path_in_its_folder(expected):
    """NGC's images put TensorRT's trtexec on PATH from /opt/tensorrt/bin; a command the manifest lists
    (stack.commands) is found on PATH, there, and executable."""
    import shutil

    commands = expected.get("stack", {}).get("commands", {})
    if not commands:
        pytest.skip("the manifest of %s lists no command on PATH (stack.commands)" % expected["release"])
    wrong = {}
    for name, folder in sorted(commands.items()):
        path = os.path.join(folder, name)
        found = shutil.which(name)
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            wrong[name] = "%s is not an executable file" % path
        elif found is None or os.path.realpath(found) != os.path.realpath(path):
            wrong[name] = "PATH finds %s, not %s (PATH=%s)" % (found, path, os.environ.get("PATH"))
    assert not wrong, "commands the manifest promises on PATH: %s" % wrong


@pytest.mark.component("torchvision")
def test_torchvision_compiled_ops_run():
    import torch
    import torchvision

    boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 10.0, 10.0], [20.0, 20.0, 30.0, 30.0]])
    scores = torch.tensor([0.9, 0.8, 0.7])
    kept = torchvision.ops.nms(boxes, scores, 0.5)  # a C++ op: fails if built against another torch
    assert kept.tolist() == [0, 2]


def _distributions():
    """Canonical name -> the dist-info/egg-info folders that hold it, over every site folder on sys.path
    (site-packages and dist-packages: the smoke suite's own mounted tools are not the image's)."""
    found = defaultdict(set)
    for folder in sys.path:
        site = os.path.basename(folder) in ("site-packages", "dist-packages")
        if not site or not os.path.isdir(folder):
            continue
        for entry in os.listdir(folder):
            match = re.match(r"^(.+?)-[0-9][^-]*(-py[0-9.]+)?(-.+)?\.(dist-info|egg-info)$", entry)
            if match:
                name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
                found[name].add(os.path.join(os.path.realpath(folder), entry))
    return found


def test_each_distribution_is_installed_once():
    """A second copy (conda's and pip's of the same package) leaves pip and imports disagreeing."""
    duplicated = dict((name, sorted(paths)) for name, paths in _distributions().items() if len(paths) > 1)
    assert not duplicated, "installed more than once: %s" % duplicated


@pytest.mark.image
def test_workspace_holds_the_rendered_files(expected):
    """/workspace holds the license and README the manifest renders, each as rendered."""
    import hashlib

    wanted = expected.get("workspace", {})
    if not wanted:
        pytest.skip("the manifest of %s puts no files under /workspace" % expected["release"])
    wrong = {}
    for name, digest in sorted(wanted.items()):
        path = os.path.join(expected["workdir"], name)
        if not os.path.isfile(path):
            wrong[path] = "missing"
            continue
        with open(path, "rb") as handle:
            if hashlib.sha256(handle.read()).hexdigest() != digest:
                wrong[path] = "not the rendered text"
    assert not wrong, "/workspace: %s" % wrong


# A 3x2 PNG of (10, 200, 30) and an 8x8 JPEG (quality 95, no chroma subsampling) of (200, 40, 90), made
# with Pillow; torchvision decodes them with libpng and libjpeg where its build found them.
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFNAAAAFUlEQVR4nGPkOiHHwMDAwMDAxAADABEIAPSNR5i4AAAAAElFTkSuQmCC")
JPEG = ("/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAIBAQEBAQIBAQECAgICAgQDAgICAgUEBAMEBgUGBgYFBgYGBwkIBgcJBwYGCAsICQoKCgoKBggL"
        "DAsKDAkKCgr/2wBDAQICAgICAgUDAwUKBwYHCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgr/wAAR"
        "CAAIAAgDAREAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEG"
        "E1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWG"
        "h4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEB"
        "AQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYk"
        "NOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0"
        "tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwD53rnP9MD/2Q==")
# torchvision.io's decoders (read_image, decode_png, decode_jpeg) came in 0.8.
IMAGE_IO_SINCE = (0, 8)


@pytest.mark.component("torchvision")
def test_torchvision_decodes_a_png_and_a_jpeg(expected):
    """torchvision's setup.py only warns when it finds no libpng or libjpeg: the build then lacks
    decode_png, decode_jpeg and read_image. Both decode here, to the pixels that were encoded."""
    import base64

    version = expected["components"]["torchvision"]
    if tuple(int(part) for part in re.findall(r"[0-9]+", version)[:2]) < IMAGE_IO_SINCE:
        pytest.skip("torchvision %s predates torchvision.io's image decoders (0.8)" % version)
    import torch
    from torchvision import io

    decoded = {}
    for kind, data, decode in (("PNG", PNG, io.decode_png), ("JPEG", JPEG, io.decode_jpeg)):
        raw = torch.frombuffer(bytearray(base64.b64decode(data)), dtype=torch.uint8) \
            if hasattr(torch, "frombuffer") else torch.tensor(list(base64.b64decode(data)), dtype=torch.uint8)
        try:
            decoded[kind] = decode(raw)
        except Exception as exc:  # a build without the library: the op is missing or says so
            pytest.fail("torchvision %s cannot decode a %s: %s: %s" % (version, kind, type(exc).__name__,
                                                                      str(exc).strip().splitlines()[0][:300]),
                        pytrace=False)
    png, jpeg = decoded["PNG"], decoded["JPEG"]
    assert tuple(png.shape) == (3, 2, 3) and png[:, 0, 0].tolist() == [10, 200, 30], png
    assert tuple(jpeg.shape) == (3, 8, 8), jpeg.shape
    pixel = jpeg[:, 3, 3].tolist()
    assert all(abs(pixel[i] - wanted) <= 4 for i, wanted in enumerate([200, 40, 90])), pixel
