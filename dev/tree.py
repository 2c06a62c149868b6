"""The counts of the package tree: `python -m dev.tree` (from a checkout).

Modules and lines per package, the biggest modules, and the import circles between modules of
ngcbuild (every `import`/`from ... import` of ours, lazy ones inside functions too, since a circle
through a lazy import is a circle all the same). The in-image checks (smoke/checks/) import nothing of
ours and are counted apart.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "ngcbuild"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ours `name` imports (a `from package import module` counts as the module)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    found.add(f"{base}.{alias.name}")
                elif base in known:
                    found.add(base)
    return found - {name}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each a circle of imports."""
    index, low, stack, on, groups, counter = {}, {}, [], set(), [], [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def counts() -> dict:
    found = modules()
    product = {n: p for n, p in found.items() if ".smoke.checks" not in n}
    lines = {n: len(p.read_text().splitlines()) for n, p in found.items()}
    graph = {n: imports(n, p, set(product)) for n, p in product.items()}
    per_package = defaultdict(lambda: [0, 0])
    for name in product:
        package = name.split(".")[1] if name.count(".") else "(top)"
        per_package[package][0] += 1
        per_package[package][1] += lines[name]
    biggest = sorted(product, key=lambda n: -lines[n])[:5]
    return {"modules": len(product), "lines": sum(lines[n] for n in product),
            "checks": len(found) - len(product), "packages": dict(sorted(per_package.items())),
            "biggest": [(n, lines[n]) for n in biggest], "circles": circles(graph)}


def main() -> int:
    found = counts()
    print(f"modules: {found['modules']} ({found['lines']} lines), and {found['checks']} in-image check files")
    for package, (n, lines) in found["packages"].items():
        print(f"  {package:10} {n:3} modules {lines:6} lines")
    print("biggest: " + ", ".join(f"{name} ({lines} lines)" for name, lines in found["biggest"]))
    print(f"import circles: {len(found['circles'])}")
    for group in found["circles"]:
        print("  " + " <-> ".join(group))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
