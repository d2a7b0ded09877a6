"""The package's import contract: no cycles, each subpackage imports only lower layers, and nothing
inside the package imports its face (``mdsd_fast/__init__.py``) or the command line.

The layers, highest first (``|`` separates independent peers, which may not import each other)::

    cli
    extract | report | served
    trees | audit | engines | lossy
    verifiers | intervals
    bound | logs
    inputs
    data | limits | _render | _isa | _version | _torch | _workers
    _files
    _core | _cpu | _core_avx2 (compiled)

A module may import modules of its own room (subpackage) and of any lower line; the C++ headers
follow the same rule over their folders (``CPP_LAYERS``). The face, its two
documented aliases (``constraints``, ``sparse``) and ``__main__`` are imported by nothing inside the
package. The graph is read from the source: every ``import`` statement that runs, deferred ones
inside functions included, so the test needs no import of the package and cannot be fooled by an
import that happens to be cached. Imports under ``if TYPE_CHECKING:`` never run and are left out
(they name a type for an annotation), but they too may not reach a higher layer.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "python" / "mdsd_fast"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli",),
    ("extract", "report", "served"),
    ("trees", "audit", "engines", "lossy"),
    ("verifiers", "intervals"),
    ("bound", "logs"),
    ("inputs",),
    ("data", "limits", "_render", "_isa", "_version", "_torch", "_workers"),
    ("_files",),
    ("_core", "_cpu", "_core_avx2"),
)
#: Modules that only the face imports: the face itself, its documented aliases and ``python -m``.
FACE = {"mdsd_fast", "mdsd_fast.constraints", "mdsd_fast.sparse", "mdsd_fast.__main__"}
COMPILED = {"mdsd_fast._core", "mdsd_fast._cpu", "mdsd_fast._core_avx2"}


def _modules() -> dict[str, Path]:
    out = {}
    for f in sorted(PKG.rglob("*.py")):
        parts = ("mdsd_fast", *f.relative_to(PKG).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


MODULES = _modules()
KNOWN = set(MODULES) | COMPILED


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside ``if TYPE_CHECKING:`` blocks."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def _imports(mod: str, path: Path, *, typing_only: bool = True) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import of a package module in ``path`` (with
    ``typing_only=False``, without the imports under ``if TYPE_CHECKING:``)."""
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), str(path))
    skip = set() if typing_only else _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "mdsd_fast":
                    yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and node.module.split(".")[0] == "mdsd_fast":
                target = node.module
            else:
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                yield (sub if sub in KNOWN else target), node.lineno


#: The modules each module imports at run time.
GRAPH = {m: sorted({t for t, _ in _imports(m, p, typing_only=False)}) for m, p in MODULES.items()}


def _room(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer(room: str) -> int:
    for i, line in enumerate(LAYERS):
        if room in line:
            return len(LAYERS) - i
    raise KeyError(room)


def test_every_room_has_a_layer() -> None:
    rooms = {_room(m) for m in MODULES if m not in FACE}
    assert not {r for r in rooms if not any(r in line for line in LAYERS)}, "a room with no layer: add it to LAYERS"


def test_imports_resolve() -> None:
    missing = [(m, t) for m, ts in GRAPH.items() for t in ts if t not in KNOWN]
    assert not missing, f"imports of package modules that do not exist: {missing}"


def test_no_cycles() -> None:
    """Tarjan's strongly connected components of the module graph: every one is a single module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH.get(v, []):
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
            if len(comp) > 1 or v in GRAPH.get(v, []):
                cycles.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert cycles == [], f"import cycles: {cycles}"


@pytest.mark.parametrize("mod", sorted(m for m in MODULES if m not in FACE))
def test_layers(mod: str) -> None:
    room = _room(mod)
    bad = []
    for target, line in _imports(mod, MODULES[mod]):
        if target in FACE:
            bad.append(f"line {line}: imports the package face or an alias ({target})")
            continue
        troom = _room(target)
        if troom != room and _layer(troom) >= _layer(room):
            bad.append(f"line {line}: {room} may not import {troom} ({target})")
    assert not bad, f"{mod}: " + "; ".join(bad)


def test_face_imports_only_what_it_exports() -> None:
    """The face is the top: it may import any room (that is its job), and nothing imports it."""
    importers = [m for m, ts in GRAPH.items() if m not in FACE and any(t in FACE for t in ts)]
    assert importers == []


#: The C++ core's folders under cpp/include/mdsd/, highest first; a header includes only its own
#: folder's headers and lower lines (peers on one line do not include each other).
CPP_LAYERS: tuple[tuple[str, ...], ...] = (
    ("engines", "trees"),
    ("verifiers", "intervals"),
    ("bound",),
    ("race", "inputs"),
    ("core",),
)
CPP = PKG.parents[1] / "cpp" / "include" / "mdsd"


def _cpp_layer(folder: str) -> int:
    for i, line in enumerate(CPP_LAYERS):
        if folder in line:
            return len(CPP_LAYERS) - i
    raise KeyError(f"cpp/include/mdsd/{folder}/ has no layer: add it to CPP_LAYERS")


def test_cpp_includes_point_down() -> None:
    headers = sorted(CPP.rglob("*.hpp"))
    assert len(headers) > 40  # the scan sees the headers
    bad = []
    for h in headers:
        room = h.relative_to(CPP).parts[0]
        for i, line in enumerate(h.read_text().splitlines(), 1):
            if line.startswith('#include "mdsd/'):
                target = line.split('"')[1].split("/")[1]
                if target != room and _cpp_layer(target) >= _cpp_layer(room):
                    bad.append(f"{h.relative_to(CPP)}:{i} includes {target}/")
    assert bad == [], bad
