"""What expected.json tells the GPU checks: the manifest's GPU features and the components in the image."""

import json

from ngcbuild.core.project import Project
from ngcbuild.manifest.loader import load_release
from ngcbuild.render.context import render_files

from ..conftest import REPO
from ..helpers import DEV_CONSTRAINTS, GOOD, error

WITH_GPU = GOOD.replace("pip:\n", "gpu:\n  min_compute_capability: '7.5'\n  features: [mempool]\npip:\n") + """\
  nccl:
    version: 2.28.9
    install: base
"""


def expected_of(scratch, text):
    scratch.manifest("r1", text)
    scratch.constraints("r1", DEV_CONSTRAINTS)
    project = Project.at(scratch.root)
    return json.loads(render_files(project, load_release(project, "r1")).files["expected.json"])


def test_gpu_features_and_components_in_the_image_reach_expected_json(scratch):
    expected = expected_of(scratch, WITH_GPU)
    assert expected["gpu"]["features"] == ["mempool"]
    assert expected["gpu"]["nccl"] == "2.28.9" and expected["gpu"]["min_compute_capability"] == "7.5"
    assert expected["components_in_image"] == ["nccl", "pytorch"]


def test_dev_promises_no_gpu_feature():
    project = Project.at(REPO)
    expected = json.loads(render_files(project, load_release(project, "dev")).files["expected.json"])
    assert expected["gpu"]["features"] == [] and expected["components_in_image"] == ["pytorch"]


def test_an_unknown_gpu_feature_is_an_error(scratch):
    message = error(scratch, WITH_GPU.replace("[mempool]", "[mempools]"))
    assert "gpu.features" in message and "mempool" in message


def _repo_expected(name):
    project = Project.at(REPO)
    return json.loads(render_files(project, load_release(project, name)).files["expected.json"])


def test_cuda_dev_expects_its_stack_from_the_manifest_and_the_catalog():
    stack = _repo_expected("cuda-dev")["stack"]
    # torch reports the local version PyPI's CUDA build carries, not the distribution's version
    assert stack["modules"]["pytorch"] == {"module": "torch", "version": "2.11.0+cu130", "import_warnings": []}
    assert stack["modules"]["dali"] == {"module": "nvidia.dali", "version": "1.53.0", "import_warnings": []}
    assert set(stack["modules"]) == {"pytorch", "triton", "torchvision", "dali"}
    # every library the linker must find comes from a component in the image; TensorRT is left out
    assert stack["libraries"] == {"cuda": "libcudart", "cublas": "libcublas", "cudnn": "libcudnn",
                                  "nccl": "libnccl", "cusparselt": "libcusparseLt", "nvshmem": "libnvshmem_host"}
    assert stack["cuda_home"] == "/usr/local/cuda"
    assert stack["cuda_wheels"] == "/usr/local/lib/python3.11/dist-packages/nvidia"
    # what ldd may leave unresolved is named in the manifest, each with its reason
    assert "libcuda.so.1" in stack["unresolved_ok"] and "libtorch.so" not in stack["unresolved_ok"]


def test_a_release_without_cuda_home_expects_none():
    stack = _repo_expected("dev")["stack"]
    assert stack["cuda_home"] is None and stack["libraries"] == {}
    assert stack["modules"] == {"pytorch": {"module": "torch", "version": "2.13.0+cpu", "import_warnings": []}}


def test_25_12_expects_the_base_images_cuda_home_its_labels_and_torch_first_on_the_library_path():
    """Issue 34: 25.12 had no CUDA_HOME, overwrote cuDNN's 4-part label with 9.17.0, and left torch's lib off
    LD_LIBRARY_PATH; the smoke suite now checks each (nvcc in CUDA_HOME, the base's labels, the path)."""
    expected = _repo_expected("25.12")
    assert expected["env"]["CUDA_HOME"] == "/usr/local/cuda" and expected["stack"]["cuda_home"] == "/usr/local/cuda"
    assert expected["stack"]["cuda_wheels"] is None
    assert expected["base_labels"] == {"com.nvidia.cudnn.version": "9.17.0", "com.nvidia.nccl.version": "2.28.9",
                                       "com.nvidia.tensorrt.version": "10.14.1.48"}
    assert not set(expected["base_labels"]) & set(expected["labels"])
    # torch/lib first, then the forward-compat link (there only while compat is enabled: issue 53)
    assert expected["env_prepend"] == {"LD_LIBRARY_PATH": ["/usr/local/lib/python3.12/dist-packages/torch/lib",
                                                           "/usr/local/cuda/compat/lib"],
                                       "PATH": ["/opt/tensorrt/bin"]}
    assert expected["cuda_compat"] == {"link": "/usr/local/cuda/compat/lib", "libraries": "/usr/local/cuda/compat/lib.real"}
    assert "LD_LIBRARY_PATH" not in expected["env"]
    assert expected["env"]["MODEL_OPT_VERSION"] == "0.40.0"


def test_cuda_dev_env_is_ngc_run_time_contract():
    env = _repo_expected("cuda-dev")["env"]
    assert env["CUDA_HOME"] == "/usr/local/cuda" and env["PATH"].startswith("/usr/local/cuda/bin:")
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all" and env["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility"
    assert (env["CUDA_VERSION"], env["CUDNN_VERSION"], env["NCCL_VERSION"]) == ("13.0.2", "9.19.0.56", "2.28.9")
    # no version variable for what the image lacks
    assert "TRT_VERSION" not in env


def test_gpu_families_reach_expected_json_and_old_releases_stop_before_newer_families():
    assert _repo_expected("20.02")["gpu"]["families"] == ["Pascal", "Volta", "Turing"]
    assert _repo_expected("20.12")["gpu"]["families"] == ["Pascal", "Volta", "Turing", "Ampere"]
    assert "Hopper" in _repo_expected("25.12")["gpu"]["families"]
    assert _repo_expected("dev")["gpu"]["families"] == []  # no GPU: no limit to state


def test_an_unknown_gpu_family_is_an_error(scratch):
    message = error(scratch, WITH_GPU.replace("features: [mempool]", "families: [Hoper]"))
    assert "gpu.families" in message and "Hopper" in message, message


def test_a_message_the_manifest_accepts_at_import_reaches_the_suite_and_the_notes(scratch):
    """components.NAME.import_warnings: the smoke suite's import check accepts the fragment, and the release
    notes say it with its reason among the known issues."""
    from ngcbuild.docs.notes import render_notes
    from ngcbuild.manifest.series import Series

    scratch.copy_release("dev")
    path = scratch.root / "manifests" / "dev.yaml"
    path.write_text(path.read_text().replace(
        "    source: the PyTorch CPU wheel of the wheelhouse our machines carry\n",
        "    source: the PyTorch CPU wheel of the wheelhouse our machines carry\n"
        "    import_warnings:\n      'Skipping import of cpp extensions': built for another torch (a planted reason)\n"))
    project = Project.at(scratch.root)
    expected = json.loads(render_files(project, load_release(project, "dev")).files["expected.json"])
    assert expected["stack"]["modules"]["pytorch"]["import_warnings"] == ["Skipping import of cpp extensions"]
    notes = render_notes(Series.load(project), "dev", project)
    issues = notes[notes.index("## Known Issues"):]
    assert ('importing PyTorch prints "Skipping import of cpp extensions": built for another torch (a planted '
            'reason)') in issues


def test_25_12_as_a_user_touches_it():
    """Issue 42: trtexec on PATH where NGC has it, MPI turned off in the build and checked absent with MKL and
    NVSHMEM (the notes say the image lacks them), python3 -m venv (python3.12-venv, as NGC installs it)."""
    expected = _repo_expected("25.12")
    assert expected["stack"]["commands"] == {"trtexec": "/opt/tensorrt/bin"}
    assert expected["stack"]["torch_without"] == ["mpi", "mkl", "nvshmem"]
    assert expected["stack"]["torch_with"] == ["lapack", "cusparselt"]  # NVIDIA's notes: cuSPARSELt turned on
    dockerfile = render_files(Project.at(REPO), load_release(Project.at(REPO), "25.12")).files["Dockerfile"].decode()
    assert 'USE_MPI="0"' in dockerfile and "python3.12-venv=3.12.3-1ubuntu0.18" in dockerfile
    assert 'PATH="/opt/tensorrt/bin${PATH:+:${PATH}}"' in dockerfile
    # 20.x: NGC linked conda's MKL, these images OpenBLAS
    assert _repo_expected("20.12")["stack"]["torch_without"] == ["mkl"]


def test_a_capability_both_promised_and_left_out_is_an_error(scratch):
    message = error(scratch, WITH_GPU + "stack:\n  torch_with: [lapack]\n  torch_without: [mpi, lapack]\n")
    assert "stack" in message and "lapack in both torch_with and torch_without" in message, message
