"""The Python package's imports point one way (docs/architecture.md, "Python
layers"): a module imports only from lower layers or from its own package.
Parses every module under python/aqmlab (imports inside functions too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "python" / "aqmlab"

#: Bottom to top. A module's layer is that of its longest listed prefix.
LAYERS: list[tuple[str, ...]] = [
    ("aqmlab._engine", "aqmlab.judging", "aqmlab.console", "aqmlab._plot_options", "aqmlab.columns",
     "aqmlab.busiest", "aqmlab.bench_table"),  # no aqmlab imports
    # bounded reads and atomic writes; which sources the engine was built from; the HTML pages' shared frame
    ("aqmlab._io", "aqmlab._paths", "aqmlab._provenance", "aqmlab.htmlpage"),
    ("aqmlab.scenario",),  # scenario files, validation through the engine, atomic writes
    ("aqmlab.resources",),  # the resource guard
    ("aqmlab.latency",),  # latency views of one run: their data and figures (registered in aqmlab.plots)
    ("aqmlab.plots", "aqmlab.report"),  # figures and the HTML page of one run (a Result named in annotations only)
    ("aqmlab.results",),  # one run's results; Result.plot and save draw through plots and report
    ("aqmlab.windows",),  # per-window statistics of one run
    ("aqmlab.compare", "aqmlab.sweep_report", "aqmlab.panels"),  # views over several runs
    ("aqmlab.runner",),  # points, the content-hash cache, the local and dask backends
    ("aqmlab.tables",),  # runs/flows tables and statistics over replications
    ("aqmlab.sweep",),  # sweep files and grids, SweepResult, the sweep function
    ("aqmlab.bench", "aqmlab.reproduce", "aqmlab.validation", "aqmlab.export"),  # library commands
    ("aqmlab.validation.command", "aqmlab.reproduce.docgen", "aqmlab.validation.docgen"),  # commands' parts, doc tools
    ("aqmlab.cli",),  # the command line: main and the parser, cli.common, one module per command
    ("aqmlab.__main__", "aqmlab._docgen"),  # entry points above it
]

#: Known upward edges, each with its reason; the test fails if one disappears
#: (so the list only shrinks) or a new one appears. None are left.
ALLOWED: dict[tuple[str, str], str] = {}


def layer_of(mod: str) -> int:
    best, where = -1, None
    for i, names in enumerate(LAYERS):
        for n in names:
            if (mod == n or mod.startswith(n + ".")) and len(n) > best:
                best, where = len(n), i
    if where is None:
        raise AssertionError(f"{mod} has no declared layer: add it to LAYERS in tests/test_layers.py")
    return where


def module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node except those under `if TYPE_CHECKING:`: a type named in an
    annotation only is not an import at run time (plots names the Result it
    draws; results imports plots)."""
    out: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            test = child.test if isinstance(child, ast.If) else None
            if test is not None and ast.unparse(test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                todo += child.orelse
                continue
            todo.append(child)
    return out


def imports(source: str) -> set[str]:
    out: set[str] = set()
    for node in _runtime_nodes(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "aqmlab":
            out.add(node.module)
            if node.module == "aqmlab":  # from aqmlab import x: x is a module or a facade name
                out |= {f"aqmlab.{a.name}" for a in node.names if a.name in {"_engine", "sweep", "scenario", "results"}}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "aqmlab"}
    return out


def upward_edges(sources: dict[str, str]) -> set[tuple[str, str]]:
    bad = set()
    for mod, src in sources.items():
        if mod == "aqmlab":
            continue  # the package facade re-exports lazily from everywhere
        for dep in imports(src):
            if dep == "aqmlab" or dep == mod:
                continue  # the facade (aqmlab.registry(), aqmlab.run) or itself
            same_package = mod.split(".")[:2] == dep.split(".")[:2]
            if not same_package and layer_of(dep) >= layer_of(mod):
                bad.add((mod, dep))
    return bad


def sources() -> dict[str, str]:
    return {module_name(p): p.read_text() for p in sorted(PKG.rglob("*.py"))}


def test_python_imports_point_down() -> None:
    found = upward_edges(sources())
    new = found - set(ALLOWED)
    assert not new, "imports pointing up or sideways: " + ", ".join(f"{a} -> {b}" for a, b in sorted(new))
    gone = set(ALLOWED) - found
    assert not gone, f"fixed, remove from ALLOWED: {sorted(gone)}"


def test_nothing_below_the_cli_imports_it() -> None:
    for mod, src in sources().items():
        if mod != "aqmlab" and layer_of(mod) < layer_of("aqmlab.cli"):
            assert "aqmlab.cli" not in imports(src), mod


@pytest.mark.parametrize(("mod", "planted"), [("aqmlab.scenario", "from aqmlab.sweep import Cache"),
                                             ("aqmlab.runner", "from aqmlab.tables import runs_table"),
                                             ("aqmlab.cli.common", "from aqmlab.__main__ import main"),
                                             ("aqmlab.bench", "    from aqmlab.cli import main"),
                                             ("aqmlab.reproduce.dualq", "import aqmlab.validation"),
                                             ("aqmlab.plots", "from aqmlab.results import Result")])  # fmt: skip
def test_the_checker_catches_a_planted_upward_import(mod: str, planted: str) -> None:
    """A run-time import pointing up is caught (inside a function too); the
    same import under `if TYPE_CHECKING:` is a type name and is not."""
    src = sources()
    src[mod] = src[mod] + "\n\ndef _planted():\n" + ("    " + planted.strip()) + "\n"
    assert any(a == mod for a, _ in upward_edges(src) - set(ALLOWED))


def test_type_checking_imports_are_not_run_time_edges() -> None:
    src = sources()
    src["aqmlab.plots"] += "\n\nif TYPE_CHECKING:\n    from aqmlab.sweep import SweepResult\n"
    assert not [e for e in upward_edges(src) if e[0] == "aqmlab.plots"]
