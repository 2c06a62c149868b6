"""The package tree is the pipeline (ARCHITECTURE.md): imports flow one way, every package says what
it owns, and no module reaches into another's private names."""

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "src" / "ngcbuild"
# What each package may import besides itself: the stages before it. `cli` calls every stage.
MAY_IMPORT = {
    "core": set(),
    "manifest": {"core"},
    "render": {"core", "manifest"},
    "engine": {"core", "manifest", "render"},
    "smoke": {"core", "manifest", "render", "engine"},
    "publish": {"core", "manifest", "render", "engine"},
    "docs": {"core", "manifest"},
    "tools": {"core", "manifest", "render", "engine", "publish", "smoke", "docs"},
    "workflow": {"core"},
    "cli": {"core", "manifest", "render", "engine", "smoke", "publish", "docs", "tools", "workflow"},
}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if len(parts) > 1 and "checks" not in parts:  # the in-image checks import nothing of ours
            yield parts[0], path


def _imports(path: Path):
    """(module, names) of every `from ngcbuild... import` in the file, lazy ones too."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: resolve against the file's package
                base = list(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
                module = ".".join(base[: len(base) - node.level + 1] + ([module] if module else []))
            if module == "ngcbuild" or module.startswith("ngcbuild."):
                yield module, [alias.name for alias in node.names]


def test_every_package_says_what_it_owns():
    for package in MAY_IMPORT:
        init = PACKAGE / package / "__init__.py"
        assert ast.get_docstring(ast.parse(init.read_text())), f"{package}/__init__.py has no docstring"


@pytest.mark.parametrize("package, path", list(_modules()), ids=lambda v: str(v).rsplit("/ngcbuild/", 1)[-1])
def test_imports_flow_one_way_and_private_names_stay_home(package, path):
    for module, names in _imports(path):
        parts = module.split(".")
        target = parts[1] if len(parts) > 1 else None
        if target is None:  # `from ngcbuild import x`
            continue
        assert target == package or target in MAY_IMPORT.get(package, set()), \
            f"{path.name} ({package}/) imports {module}: {package}/ may import only {sorted(MAY_IMPORT[package])}"
        private = [n for n in names if n.startswith("_")]
        assert not private, f"{path.name} imports private names {private} from {module}"
