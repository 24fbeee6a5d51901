"""The layers of docs/architecture.md hold for every import statement, inside functions too.

Independent of import-linter: every ``import``/``from ... import`` in the package is parsed, resolved to a
module, and checked (1) against the layer order declared in ``pyproject.toml`` (no upward import), and
(2) for circles between modules (none).
"""

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "activerank"


def _modules() -> dict:
    out = {}
    for path in PKG.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _edges(mods: dict) -> dict:
    edges: dict = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                if node.level:
                    base = base[:len(base) - (node.level - 1)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                targets = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in mods else prefix for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t.startswith("activerank") and t != mod:
                    edges[mod].add(t)
    return edges


def _layer_of(layers: list):
    def find(mod: str):
        for i, layer in enumerate(layers):
            for name in layer:
                if mod == name or mod.startswith(name + "."):
                    return i, name
        return None
    return find


def test_no_module_imports_a_higher_layer():
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    layers = [[n.strip() for n in entry.split("|")] for entry in contract["layers"]]
    find = _layer_of(layers)
    mods = _modules()
    upward = []
    for mod, targets in _edges(mods).items():
        me = find(mod)
        for t in targets:
            other = find(t)
            if me is None or other is None:
                continue
            # layers are listed top first: a lower index is a higher layer; siblings in one layer are independent
            if other[0] < me[0] or (other[0] == me[0] and other[1] != me[1]):
                upward.append(f"{mod} -> {t}")
    unlayered = sorted({m.split(".")[1] for m in mods if m != "activerank" and find(m) is None})
    assert not upward, upward
    assert not unlayered, f"modules outside every layer: {unlayered}"


def test_no_import_circles():
    mods = _modules()
    edges = _edges(mods)
    edges.pop("activerank", None)  # the package's lazy attribute table (PEP 562) is not a layer
    for m in edges:
        edges[m].discard("activerank")
    index, low, stack, on, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    assert not circles, circles
