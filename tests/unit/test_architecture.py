"""The package tree is the pipeline (ARCHITECTURE.md): imports flow one way, every package says what
it owns, and no module reaches into another's private names."""

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "src" / "ngcbuild"
# What each package may import besides itself: the stages before it. `cli` calls every stage.
MAY_IMPORT = {
    "core": set(),
    # the image as data, formats only: engine/ saves and loads it, registry/ reads it, publish/ and supply/ write it
    "image": {"core"},
    "workspace": {"core"},
    "registry": {"core", "image"},
    "manifest": {"core"},
    "verify": {"core", "manifest"},
    "render": {"core", "manifest", "workspace"},
    "engine": {"core", "image", "manifest", "render", "workspace", "registry"},
    # the smoke suite's pytest lock is the one resolver's (resolver/pure_wheels.py)
    "smoke": {"core", "manifest", "render", "engine", "workspace", "resolver"},
    "supply": {"core", "image", "manifest", "render", "engine", "workspace", "registry"},
    "publish": {"core", "image", "manifest", "render", "engine", "workspace", "registry", "supply"},
    "docs": {"core", "manifest", "workspace"},
    # the one resolver (uv) with its index setting, clean room and deadline: reads through verify's reader
    "resolver": {"core", "manifest", "verify"},
    # derived releases: resolved (verify's targets, the one resolver; an image base read by running it)
    # before render; rendered (render/derived.py), built and smoked as every release is
    "derive": {"core", "manifest", "verify", "resolver", "engine", "workspace", "registry"},
    "workflow": {"core"},
    # the monthly proposal: resolves through verify, renders and describes it as the documents do
    # (a derived release's bump re-resolves its lock through derive's resolve)
    "bump": {"core", "manifest", "verify", "resolver", "render", "docs", "workspace", "derive"},
    "cli": {"core", "image", "workspace", "registry", "manifest", "verify", "resolver", "render", "engine", "smoke",
            "supply", "publish", "docs", "workflow", "derive", "bump"},
}

def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if len(parts) > 1 and "checks" not in parts:  # the in-image checks import nothing of ours
            yield parts[0], path


def _top_level_imports(path: Path):
    """The first name of every module the file imports (`import x.y`, `from x.y import z`)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.module.split(".")[0]


def _imports(path: Path):
    """(module, names) of every `from ngcbuild... import` in the file, lazy ones too."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: resolve against the file's package
                base = list(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
                module = ".".join(base[: len(base) - node.level + 1] + ([module] if module else []))
            if module == "ngcbuild" or module.startswith("ngcbuild."):
                yield module, [alias.name for alias in node.names], [alias.asname for alias in node.names]


def test_every_package_says_what_it_owns():
    for package in MAY_IMPORT:
        init = PACKAGE / package / "__init__.py"
        assert ast.get_docstring(ast.parse(init.read_text())), f"{package}/__init__.py has no docstring"


@pytest.mark.parametrize("package, path", list(_modules()), ids=lambda v: str(v).rsplit("/ngcbuild/", 1)[-1])
def test_imports_flow_one_way_and_private_names_stay_home(package, path):
    for module, names, _ in _imports(path):
        parts = module.split(".")
        target = parts[1] if len(parts) > 1 else None
        if target is None:  # `from ngcbuild import x`
            continue
        assert target == package or target in MAY_IMPORT.get(package, set()), \
            f"{path.name} ({package}/) imports {module}: {package}/ may import only {sorted(MAY_IMPORT[package])}"
        private = [n for n in names if n.startswith("_")]
        assert not private, f"{path.name} imports private names {private} from {module}"


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p).rsplit("/ngcbuild/", 1)[-1])
def test_the_product_never_imports_the_checkouts_tools_or_tests(path):
    """dev/ and tests/ exist only in a checkout (the wheel has src/ngcbuild only)."""
    imported = set(_top_level_imports(path)) & {"dev", "tests", "tasks"}
    assert not imported, f"{path.name} imports {sorted(imported)}, which an installed ngcbuild does not have"
    assert not re.search(r'/ *"tests["/]', path.read_text()), f"{path.name} makes a path into tests/: the product never writes there"


def test_the_wheel_holds_the_product_only():
    """setuptools finds packages under src/ only: dev/ (the project's tools) stays out of the wheel."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert config["tool"]["setuptools"]["packages"]["find"]["where"] == ["src"]
    assert not (REPO / "src" / "dev").exists() and not (REPO / "src" / "tests").exists()


@pytest.mark.parametrize("path", [p for _, p in _modules()], ids=lambda p: str(p).rsplit("/ngcbuild/", 1)[-1])
def test_one_name_per_thing(path):
    """None of our modules or names is imported under another name (`reuse as context_cache`)."""
    for module, names, renamed in _imports(path):
        aliased = [f"{name} as {alias}" for name, alias in zip(names, renamed, strict=True) if alias]
        assert not aliased, f"{path.name} imports from {module}: {aliased}"


def _product_modules():
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "checks" not in p.relative_to(PACKAGE).parts]


def test_the_image_formats_stand_on_core_alone():
    """image/ is the image as data: no engine, no registry, no network, nothing of a later stage."""
    found = [f"{path.name}: {module}" for path in sorted((PACKAGE / "image").glob("*.py"))
             for module, _, _ in _imports(path) if module.split(".")[1:2] not in (["core"], ["image"])]
    assert not found, f"image/ imports beside core/: {found}"


# The prefixes of an image format's media types (manifests, lists, configs, layers, the OCI empty config).
MEDIA_PREFIXES = ("application/vnd.oci.", "application/vnd.docker.distribution", "application/vnd.docker.container.image",
                  "application/vnd.docker.image.rootfs")


def _strings_beside(home: str):
    """(module, line, value) of every string literal in the product's modules but `home`."""
    for path in _product_modules():
        rel = path.relative_to(PACKAGE).as_posix()
        if rel != home:
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    yield rel, node.lineno, node.value


def test_every_media_type_of_an_image_is_declared_once():
    """image/media.py declares them; registry/, publish/, supply/ and the save's reader use its names."""
    found = [f"{rel}:{line} {value[:60]!r}" for rel, line, value in _strings_beside("image/media.py")
             if any(prefix in value for prefix in MEDIA_PREFIXES)]
    assert not found, f"media types spelled out beside image/media.py: {found}"


def test_every_file_name_of_build_r_is_declared_once():
    """workspace/release_dir.py names each file of build/R/; every other module uses its constant."""
    from ngcbuild.workspace import release_dir

    names = {*release_dir.OUTPUTS, release_dir.DOCKERFILE, release_dir.EXPECTED}
    allowed = {("engine/base_image.py", release_dir.DOCKERFILE)}  # the base image's own context, in a temp folder
    found = [f"{rel}:{line} {value!r}" for rel, line, value in _strings_beside("workspace/release_dir.py")
             if value in names and (rel, value) not in allowed]
    assert not found, f"build/R/ file names spelled out again (use workspace/release_dir.py): {found}"


# Modules that write a file themselves, and where: everything else ngcbuild makes goes through the one
# whole-file writer (core/outputs.write_file; build/R/ through workspace.release_dir.ReleaseDir.write).
WRITES_ITSELF = {
    "core/outputs.py": "the one writer: a temporary file beside the name, fsync, rename",
    "workspace/atomic_dir.py": "a new folder of its own (mkdtemp), swapped in whole",
    "engine/base_image.py": "the base image's build context, in a temporary folder",
    "smoke/runner.py": "what the suite's container mounts, in a temporary folder",
    "smoke/host.py": "what the host's suite reads, in a temporary folder",
    "smoke/staging.py": "the locked pytest unpacked into the staging folder (temporary)",
    "resolver/uv.py": "uv's requirements and constraints, in its temporary folder",
    "bump/proposal_files.py": "the scratch copy of the project a proposal is verified in (temporary)",
    "bump/nvidia.py": "the draft in the scratch copy (temporary)",
    "verify/sdist.py": "a source archive unpacked to build its metadata, in a temporary folder",
    "publish/promote.py": "skopeo's private auth file, in a temporary folder",
    "core/console.py": "a closed stdout or stderr reopened on its own descriptor (no file is named)",
    # streamed layers and blobs, written as the engine's save streams them (one pass, never whole in memory)
    "image/layer_tar.py": "a layer rewritten as it streams, into its caller's temporary folder",
    "engine/release_image.py": "the save's layers spooled and rewritten, in its caller's temporary folder",
    "engine/compare.py": "an image without a recipe: the save's layers spooled, in compare's temporary folder",
    "publish/layer_blobs.py": "each layer compressed as the save streams it, in push's temporary folder",
    "publish/variant.py": "each layer's zstd blob, made as its gzip blob streams from the registry, in a scratch folder",
}


# A mode that writes ("w", "wb", "a", "x", "r+b", tarfile's "w:gz"), wherever an open() takes it.
_WRITING_MODE = re.compile(r"[rwxabt+]{1,4}(:\w*)?")


def _opens_to_write(node: ast.Call) -> bool:
    """open(path, "wb"), Path.open("wb"), gzip/tarfile.open(path, "w..."), any of them with mode=...,
    and os.open with O_CREAT or O_WRONLY; not a tarfile written into a stream it is handed (fileobj=:
    no file is opened there, and whoever opened that stream is held to this rule)."""
    text = ast.unparse(node)
    if any(k.arg == "fileobj" for k in node.keywords):
        return False
    if "O_CREAT" in text or "O_WRONLY" in text:
        return "devnull" not in text
    modes = [*node.args, *(k.value for k in node.keywords if k.arg == "mode")]
    return any(isinstance(m, ast.Constant) and isinstance(m.value, str) and _WRITING_MODE.fullmatch(m.value)
               and set(m.value) & set("wxa+") for m in modes)


@pytest.mark.parametrize("call, writes", [
    ("path.open('wb')", True), ("Path(p).open(mode='a')", True), ("open(p, 'w')", True), ("open(p, 'r+b')", True),
    ("gzip.open(p, 'wb')", True), ("tarfile.open(p, 'w:gz')", True), ("os.open(p, os.O_WRONLY | os.O_CREAT)", True),
    ("path.open('rb')", False), ("open(p)", False), ("open('w.txt')", False), ("tarfile.open(fileobj=f, mode='w')", False),
    ("os.open(os.devnull, os.O_WRONLY)", False),
])
def test_the_one_writer_rule_sees_every_open_that_writes(call, writes):
    assert _opens_to_write(ast.parse(call).body[0].value) is writes


def test_files_are_written_through_the_one_writer():
    writes = {"write_text", "write_bytes", "fdopen", "mkstemp"}
    found = []
    for path in _product_modules():
        rel = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            text = ast.unparse(node)
            opened = name == "open" and _opens_to_write(node)
            if (name in writes or opened) and rel not in WRITES_ITSELF:
                found.append(f"{rel}:{node.lineno} {text[:60]}")
    assert not found, f"files written beside the one writer (core/outputs.write_file): {found}"


def _test_modules():
    tests = REPO / "tests"
    return [p for p in sorted(tests.rglob("test_*.py")) if "corpus/cases" not in p.as_posix()]


@pytest.mark.parametrize("path", _test_modules(), ids=lambda p: p.relative_to(REPO / "tests").as_posix())
def test_no_test_module_imports_from_another(path):
    """Helpers and fixtures shared by tests live in one place (a conftest.py or a helper module such as
    tests/corpus/hostile.py), never in a test module another imports: pytest would collect its tests
    twice over, and a fixture imported by name shadows the conftest's."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = [module.rsplit(".", 1)[-1], *(alias.name for alias in node.names)] if node.level else \
                [*module.split(".")]
            if node.level or module.startswith("tests."):
                found += [f"{'.' * node.level}{module}" for part in names if part.startswith("test_")][:1]
    assert not found, f"{path.name} imports from another test module: {found}"


def test_no_import_circles():
    """No module of ours imports, through any chain of imports (lazy ones too), one that imports it
    (dev/tree.py counts the tree: `python -m dev.tree`)."""
    from dev.tree import counts

    assert counts()["circles"] == []


@pytest.mark.parametrize("path", [p for _, p in _modules()], ids=lambda p: str(p).rsplit("/ngcbuild/", 1)[-1])
def test_every_name_a_module_imports_of_ours_exists(path):
    """A lazy import (inside a function) fails only when that function runs: a name moved or renamed
    elsewhere would be found by the first user who runs the command, so every one is looked up here."""
    import importlib

    for module, names, _ in _imports(path):
        imported = importlib.import_module(module)
        for name in names:
            if not hasattr(imported, name):
                importlib.import_module(f"{module}.{name}")  # a submodule: ModuleNotFoundError if not
