"""No import cycles in the package: the import graph is read from the sources (every `import` and
`from ... import`, at module level and inside functions, but not those under `if TYPE_CHECKING:`; in a
module that calls `import_module`, every string that names a module of the package, and every f-string that
begins with a package's dotted prefix, counts as an import of those modules)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers.paths import ROOT

PACKAGE = ROOT / "tfgpu_tui"


def module_files() -> dict[str, Path]:
    """Each module of the package by dotted name."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imported(tree: ast.AST, modules: dict[str, Path], module_level: bool) -> set[str]:
    """The package's modules a module's source imports."""
    found: set[str] = set()
    pending = list(ast.iter_child_nodes(tree))
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue  # for the type checker only: never imported at run time
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        if not (module_level and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))):
            pending.extend(ast.iter_child_nodes(node))
    if calls_import_module(tree):
        found |= named_in_strings(tree, modules)
    return found & modules.keys()


def calls_import_module(tree: ast.AST) -> bool:
    """Whether the source calls `importlib.import_module` (or `import_module`) anywhere."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
            if name == "import_module":
                return True
    return False


def named_in_strings(tree: ast.AST, modules: dict[str, Path]) -> set[str]:
    """The package's modules that the source's strings name: ``"tfgpu_tui.ui.hosts"`` (or
    ``"tfgpu_tui.ui.hosts:HostsTab"``), and every module under the prefix of
    ``f"tfgpu_tui.commands.{name}"``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value.split(":")[0]
            if name in modules:
                found.add(name)
        elif isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            if isinstance(first, ast.Constant) and str(first.value).endswith("."):
                prefix = str(first.value)
                found.update(name for name in modules if name.startswith(prefix))
    return found


def cycles(module_level: bool) -> list[list[str]]:
    """Every cycle a depth-first walk of the import graph meets, each as the modules along it."""
    modules = module_files()
    graph = {
        name: imported(ast.parse(path.read_text(encoding="utf-8")), modules, module_level) - {name}
        for name, path in modules.items()
    }
    found: list[list[str]] = []
    state: dict[str, str] = {}

    def walk(module: str, stack: list[str]) -> None:
        state[module] = "open"
        stack.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                found.append([*stack[stack.index(target) :], target])
            elif target not in state:
                walk(target, stack)
        stack.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            walk(module, [])
    return found


def test_the_walk_finds_the_modules_and_their_imports() -> None:
    modules = module_files()
    assert "tfgpu_tui.ui.monitor" in modules and "tfgpu_tui.gpu.sampler" in modules
    tree = ast.parse((PACKAGE / "ui" / "hosts.py").read_text(encoding="utf-8"))
    assert "tfgpu_tui.ui.tab_base" in imported(tree, modules, module_level=True)
    assert "tfgpu_tui.ui.host_detail" in imported(tree, modules, module_level=False)  # imported in a method


def test_modules_loaded_by_name_count_as_imports() -> None:
    modules = module_files()
    cli = ast.parse((PACKAGE / "cli.py").read_text(encoding="utf-8"))
    # f"tfgpu_tui.commands.{name}", in a function
    assert "tfgpu_tui.commands.gpus" in imported(cli, modules, module_level=False)
    app = ast.parse((PACKAGE / "ui" / "app.py").read_text(encoding="utf-8"))
    assert "tfgpu_tui.ui.hosts" in imported(app, modules, module_level=True)  # TabSpec's module string


def test_no_cycle_among_module_level_imports() -> None:
    assert cycles(module_level=True) == []


def test_no_cycle_at_all() -> None:
    assert cycles(module_level=False) == []
