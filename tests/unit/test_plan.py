"""plan.py: what a release's image is made of, computed once from the manifest for the templates."""

import pytest

from ngcbuild.core.errors import ManifestError
from ngcbuild.core.project import Project
from ngcbuild.manifest.catalog import Catalog
from ngcbuild.manifest.loader import load_release
from ngcbuild.render.plan import REST_STAGE, plan_image
from tests.conftest import REPO

PROJECT = Project.at(REPO)


def plan_of(name, base=None, project=PROJECT):
    return plan_image(load_release(project, name), Catalog.load(project), base=base)


@pytest.mark.parametrize("name", ["dev", "cuda-dev", "20.12", "25.12"])
def test_every_pin_of_the_constraints_file_is_installed_exactly_once(name):
    plan = plan_of(name)
    staged = [pin for step in plan.builder_steps if step.staged and step.pins for pin in step.pins]
    assert len(staged) == len(set(staged))
    constraints = load_release(PROJECT, name).constraints
    if plan.release.python.install != "conda":
        assert sorted(staged) == sorted(str(p) for p in constraints.pins)


def test_pip_components_come_first_then_the_groups_then_the_rest():
    plan = plan_of("dev")
    names = [step.name for step in plan.builder_steps]
    groups = [n for n in names if n.startswith(REST_STAGE + "-")]
    assert names[-1] == REST_STAGE
    assert names.index("pytorch") < names.index(groups[0])
    assert len(groups) == len(plan.release.pip.layers)


def test_a_mirror_replaces_the_base_and_drops_the_original_digest_label():
    own = plan_of("25.12")
    mirrored = plan_of("25.12", base="mirror.example/nvidia/cuda-dl-base:25.12")
    assert own.names.base_image == own.release.base.image
    assert mirrored.names.base_image == "mirror.example/nvidia/cuda-dl-base:25.12"
    assert mirrored.labels["org.opencontainers.image.base.name"] == mirrored.names.base_image
    if own.release.base.digest:
        assert "org.opencontainers.image.base.digest" in own.labels
    assert "org.opencontainers.image.base.digest" not in mirrored.labels


def test_names_of_the_image():
    names = plan_of("dev").names
    assert (names.release, names.tag, names.repository_path, names.default_platform) == \
        ("dev", "dev-py3", "nvidia/pytorch", "linux/amd64")


def test_env_and_labels_carry_component_versions_from_the_catalog():
    plan = plan_of("cuda-dev")
    catalog = Catalog.load(PROJECT)
    for name, component in plan.release.components.items():
        if component.install in ("pip", "apt", "source", "base"):
            for var in catalog.get(name).env:
                assert plan.env[var] == component.shown_version, var
    assert plan.env["NVIDIA_PYTORCH_VERSION"] == "cuda-dev"
    assert plan.env["CUDA_HOME"] == plan.release.cuda_home.path


def test_a_pip_layer_naming_an_unpinned_package_names_the_key(scratch):
    scratch.copy_release("dev")
    text = (scratch.root / "manifests" / "dev.yaml").read_text()
    text = text.replace("    - [numpy, pillow, pyyaml]", "    - [numpy, not-pinned-anywhere]")
    scratch.manifest("dev", text)
    project = Project.at(scratch.root)
    with pytest.raises(ManifestError, match=r"pip\.layers\.1\.1: 'not-pinned-anywhere' is not pinned"):
        plan_of("dev", project=project)


def test_expected_json_lists_only_components_in_the_image():
    expected = plan_of("cuda-dev").expected()
    left_out = plan_of("cuda-dev").release.left_out
    assert left_out and not set(left_out) & set(expected["components_in_image"])


@pytest.mark.parametrize("name", ["dev", "25.12"])
def test_apt_pins_come_from_the_plan_in_the_manifests_order(name):
    plan = plan_of(name)
    python, builder = plan.release.python, plan.release.builder
    assert plan.python_apt_pins == tuple(f"{p}={v}" for p, v in python.apt_packages.items())
    assert plan.python_builder_apt_pins == tuple(f"{p}={v}" for p, v in python.builder_apt_packages.items())
    assert plan.builder_apt_pins == tuple(f"{p}={v}" for p, v in builder.apt_packages.items())
    assert plan.python_apt_pins or plan.builder_apt_pins  # each release installs some of them
    dockerfile = (REPO / "tests" / "golden" / name / "Dockerfile").read_text()
    for pin in plan.python_apt_pins + plan.python_builder_apt_pins + plan.builder_apt_pins:
        assert f"      {pin} \\\n" in dockerfile


def test_install_commands_are_shaped_once_in_macros():
    """Partials say what they install; how an apt or pip install line looks is written once, in
    macros.j2, so that a change to it (a flag, a cleanup) reaches every release."""
    templates = REPO / "templates" / "image"
    for path in templates.rglob("*.j2"):
        if path.name == "macros.j2":
            continue
        text = path.read_text()
        assert "apt-get install" not in text, f"{path.relative_to(REPO)} writes an apt install by hand"
        if path.name != "requirements.j2":  # the requirements stage installs under a root of its own
            assert "--ignore-installed" not in text, f"{path.relative_to(REPO)} writes a staged pip install by hand"


def test_a_component_partial_exists_only_where_its_step_differs_from_the_method_default():
    """The default partial of a method (methods/pip.j2: the catalog's comment, one staged install) serves
    every component whose step is that; an own partial says something more (flags, a build, a check)."""
    import re

    templates = REPO / "templates" / "image"
    defaults = {path.stem for path in (templates / "methods").glob("*.j2")}
    assert {"pip", "apt"} <= defaults
    plain = re.compile(r"\{% from \"macros.j2\" import [a-z_, ]+ %\}|#.*|\{\{ (pip_stage\(step, plan.python\)|"
                       r"apt_install\(step.pins\)) \}\}|")
    for path in sorted(templates.glob("components/*/*.j2")):
        if path.stem in defaults:
            extra = [line for line in path.read_text().splitlines() if not plain.fullmatch(line.strip())]
            assert extra, f"{path.relative_to(REPO)} is the default {path.stem} step: drop it, the catalog's comment says it"


def test_a_step_without_its_own_partial_uses_the_method_default_with_the_catalog_comment():
    plan = plan_of("25.12")
    step = next(step for step in plan.builder_steps if step.name == "triton")
    assert step.partials == ["components/triton/pip.j2", "methods/pip.j2"]
    assert step.comment == ("Triton 3.5.1, the compiler torch.compile uses on GPUs",)
    dockerfile = (REPO / "tests" / "golden" / "25.12" / "Dockerfile").read_text()
    assert "# Triton 3.5.1, the compiler torch.compile uses on GPUs\nRUN python3 -m pip install --root /stage/triton" \
        in dockerfile


@pytest.mark.parametrize("name", ["20.02", "20.12", "25.12"])
def test_every_builder_step_comes_after_the_steps_that_provide_its_needs(name):
    """20.x built PyTorch before OpenMPI and MAGMA (merge order): its CMake found neither."""
    from ngcbuild.manifest.needs import needs_of, provides_of

    plan = plan_of(name)
    catalog = plan.catalog
    names = [step.name for step in plan.builder_steps]
    for index, step in enumerate(plan.builder_steps):
        if step.component is None:
            continue
        for need in needs_of(step.name, step.component, catalog):
            later = [other.name for other in plan.builder_steps[index + 1:]
                     if other.component is not None and need in provides_of(other.name, other.component, catalog)]
            assert not later, f"{step.name} needs {need}, provided later by {later} ({names})"


def test_20_12_builds_pytorch_after_openmpi_and_magma():
    names = [step.name for step in plan_of("20.12").builder_steps]
    assert names.index("openmpi") < names.index("pytorch") and names.index("magma") < names.index("pytorch")
    # merge order decides the rest: apex stays right after the PyTorch it needs
    assert names.index("apex") == names.index("pytorch") + 1


def _pytorch_needing(scratch, needs: str, base_provides: str = "") -> Project:
    scratch.copy_release("20.12")
    text = (scratch.root / "manifests" / "20.12.yaml").read_text()
    text = text.replace("  pytorch:\n    version:", f"  pytorch:\n    needs: {needs}\n    version:", 1)
    if base_provides:
        text += f"base:\n  provides:\n    {base_provides}\n"
    scratch.manifest("20.12", text)
    return Project.at(scratch.root)


def test_a_need_nothing_provides_names_the_component_and_the_need(scratch):
    project = _pytorch_needing(scratch, "[cuda-compiler, lapack, mpi, magma, nccl-tests]")
    with pytest.raises(ManifestError, match=r"components\.pytorch\.needs: component 'pytorch' needs 'nccl-tests', "
                                            r"which nothing in this release provides"):
        load_release(project, "20.12")


def test_a_need_the_base_provides_with_evidence_is_met(scratch):
    project = _pytorch_needing(scratch, "[cuda-compiler, lapack, mpi, magma, nccl-tests]", "nccl-tests: built into the base image (its Dockerfile)")
    assert "nccl-tests" in load_release(project, "20.12").release.components["pytorch"].needs


def test_a_base_component_without_evidence_provides_nothing(scratch):
    scratch.copy_release("20.12")
    path = scratch.root / "manifests" / "20.12.yaml"
    text = path.read_text()
    text = text.replace("  pytorch:\n    version:", "  pytorch:\n    needs: [cuda-compiler, lapack, mpi, magma, cublas]\n    version:", 1)
    # cuBLAS in the base image, with its source: a need it meets
    scratch.manifest("20.12", text)
    assert load_release(Project.at(scratch.root), "20.12")
    scratch.manifest("20.12", text.replace(
        "    source: NVIDIA PyTorch release notes 20.12 (NVIDIA CUDA 11.1.1 including cuBLAS 11.3.0)\n", "", 1))
    with pytest.raises(ManifestError, match="needs 'cublas'"):
        load_release(Project.at(scratch.root), "20.12")


def test_components_that_need_each_other_are_an_error_naming_them(scratch):
    scratch.copy_release("20.12")
    text = (scratch.root / "manifests" / "20.12.yaml").read_text()
    text = text.replace("    options: [--prefix=/usr/local/mpi,", "    needs: [apex]\n    options: [--prefix=/usr/local/mpi,", 1)
    scratch.manifest("20.12", text)
    with pytest.raises(ManifestError, match=r"components: these components need each other \(a cycle\): "
                                            r"pytorch, apex, openmpi"):
        plan_of("20.12", project=Project.at(scratch.root))


def test_a_promise_of_the_stack_must_be_a_need_of_the_pytorch_build(scratch):
    """25.12 promised torch_with: [lapack] with no LAPACK provider and no need of one."""
    project = _pytorch_needing(scratch, "[cuda-compiler, mpi, magma]")
    with pytest.raises(ManifestError, match=r"stack\.torch_with\.0: promises a PyTorch built with lapack"):
        load_release(project, "20.12")


@pytest.mark.parametrize("name", ["20.02", "20.12", "25.12", "dev", "cuda-dev"])
def test_every_module_the_smoke_suite_imports_is_installed_by_a_step(name):
    """25.12 expected `import tensorrt` of a TensorRT only its base image carried (libraries, no Python API)."""
    plan = plan_of(name)
    installed = {step.name for step in (*plan.runtime_steps, *plan.builder_steps)}
    for component in plan.expected()["stack"]["modules"]:
        assert component in installed, f"{name}: the smoke suite imports {component}'s module, which no step installs"


def test_25_12_installs_the_python_components_nvidia_ships_and_checks_each():
    plan = plan_of("25.12")
    modules = plan.expected()["stack"]["modules"]
    wanted = {"tensorrt_python": ("tensorrt", "10.14.1.48.post1"), "lightning_thunder": ("thunder", "0.2.7.dev20251214"),
              "modelopt": ("modelopt", "0.40.0"), "torchao": ("torchao", "0.15.0+git01374eb5")}
    for component, (module, version) in wanted.items():
        assert modules[component] == {"module": module, "version": version, "import_warnings": []}
    names = [step.name for step in plan.builder_steps]
    assert all(names.index("pytorch") < names.index(c) for c in wanted if c != "tensorrt_python")


def test_25_12_sets_ngc_s_run_time_environment():
    """NGC's 25.10 image (secondary) sets these; 25.12 once lacked them."""
    env = plan_of("25.12").env
    for var in ("TRITON_CUDACRT_PATH", "TRITON_CUDART_PATH", "TRITON_CUPTI_PATH", "TRITON_PTXAS_PATH"):
        assert env[var].startswith("/usr/local/cuda/"), var
    assert env["UCC_CL_BASIC_TLS"] == "^sharp" and env["UCC_EC_CUDA_EXEC_NUM_THREADS"] == "256"
    assert env["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] == "python"


@pytest.mark.parametrize("name", ["20.02", "20.12"])
def test_conda_s_copies_of_what_the_staged_layers_pin_are_uninstalled_before_the_overlay(name):
    """The staged pip, setuptools, wheel, requests... were laid over conda's, whose older metadata stayed."""
    plan = plan_of(name)
    names = plan.overlaid_distributions
    assert {"pip", "setuptools", "wheel", "requests", "urllib3", "certifi", "cffi"} <= set(names)
    assert names[-1] == "pip"  # pip uninstalls itself last
    staged = {n.split("==")[0].lower() for step in plan.staged_steps for n in step.pins}
    assert set(names) == {n.replace("_", "-") for n in staged}
    lines = (REPO / "tests" / "golden" / name / "Dockerfile").read_text().split("\n# --- the image\n", 1)[1]
    uninstall, first_copy = lines.index("-m pip uninstall -y"), lines.index("COPY --from=builder")
    assert uninstall < first_copy and all(f"      {n} \\\n" in lines or f"      {n}\n" in lines for n in names)


def test_a_system_python_has_no_conda_environment_to_clean():
    assert "overlay" not in plan_of("25.12").python_partials


def test_a_source_build_needing_openblas_must_tell_cmake_so(scratch):
    """25.12's PyTorch build once had no BLAS=: CMake then looks for MKL and links no LAPACK."""
    scratch.copy_release("25.12")
    text = (scratch.root / "manifests" / "25.12.yaml").read_text()
    assert "      BLAS: OpenBLAS\n" in text
    scratch.manifest("25.12", text.replace("      BLAS: OpenBLAS\n", "", 1))
    with pytest.raises(ManifestError, match=r"components\.pytorch\.build_env\.BLAS: expected 'OpenBLAS': pytorch is "
                                            r"built from source and needs 'lapack', which openblas provides only"):
        load_release(Project.at(scratch.root), "25.12")


def test_the_source_builds_come_before_every_staged_pip_step(scratch):
    """A staged pip step installs into a layer of its own, which no source build sees; so the source builds
    (and conda's MAGMA) run first, and a pip step after them cannot rebuild them. A source build that needs
    what only a pip step provides is refused: it would not see it."""
    plan = plan_of("25.12")
    methods = [step.component.install if step.component else "rest" for step in plan.builder_steps]
    early = methods[:plan.wheels_at]
    assert set(early) == {"source"} and "source" not in methods[plan.wheels_at:], methods
    scratch.copy_release("25.12")
    text = (scratch.root / "manifests" / "25.12.yaml").read_text()
    scratch.manifest("25.12", text.replace("    needs: [png, jpeg]\n", "    needs: [png, jpeg, triton]\n", 1))
    with pytest.raises(ManifestError, match="components.torchvision.needs: 'triton' is provided by triton, installed "
                                            "with pip into a layer of its own"):
        plan_of("25.12", project=Project.at(scratch.root))
