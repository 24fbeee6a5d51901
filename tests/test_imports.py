"""The package's import graph: no cycles, and `import activerank` stays light."""

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "activerank"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str, modules) -> set:
    """Modules of this package imported at module level (imports inside functions are deliberate lazy loads)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in tree.body:
        if isinstance(node, ast.If):  # `if TYPE_CHECKING:` blocks are for type checkers only
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("activerank"):
                subs = {f"{target}.{a.name}" for a in node.names} & set(modules)
                # `from . import x` of a submodule x depends on x, not on the (initializing) package
                out |= subs if subs else {target}
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("activerank"))
    return out


def test_no_import_cycles():
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {m: {t for t in _imports(p, m, modules) if t in modules and t != m} for m, p in modules.items()}
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_import_activerank_loads_no_heavy_dependency():
    code = ("import sys, activerank; heavy = ['sklearn', 'pandas', 'scipy', 'matplotlib', 'lightgbm', 'mord', "
            "'numba', 'dask']; print([h for h in heavy if h in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_cli_help_loads_no_heavy_dependency():
    code = ("import sys\nfrom activerank.cli import build_parser\nbuild_parser()\n"
            "heavy = ['sklearn', 'pandas', 'scipy', 'matplotlib', 'lightgbm', 'mord']\n"
            "print([h for h in heavy if h in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
