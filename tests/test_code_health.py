"""Readable code: no function of the project above McCabe complexity 12 (ruff's C90 rule, configured in
pyproject.toml, run here so CI enforces it), no function of run.py -> trial -> seed -> process ->
pool/ray_pool -> result -> ledger longer than a reader can hold at once (issue 29), and the package's shape
that docs/architecture.md states: no module over 600 lines, no import cycle (imports inside functions
included)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TRIAL_PATH = [
    "run.py",
    "autorl/commands/trial.py",
    "autorl/engine/trial_run.py",
    "autorl/record/context.py",
    "autorl/engine/seed.py",
    "autorl/engine/process.py",
    "autorl/engine/pool.py",
    "autorl/engine/ray_pool.py",
    "autorl/engine/result.py",
    "autorl/record/row.py",
    "autorl/record/ledger.py",
]
MAX_LINES = 80


def function_lengths(path: Path) -> list[tuple[str, int, int]]:
    """(name, first line, lines) of every function and method in the file, nested ones included; a
    function's lines run from its `def` to its last line (decorators not counted)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        (node.name, node.lineno, node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None
    ]


def test_function_lengths_are_measured_from_def_to_last_line(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    x = 1\n\n    return x\n\n\nclass C:\n    def g(self):\n        pass\n")
    assert sorted(function_lengths(source)) == [("f", 1, 4), ("g", 8, 2)]


def test_no_function_on_the_trial_path_is_over_80_lines():
    too_long = [
        f"{name} ({rel}:{line}): {length} lines"
        for rel in TRIAL_PATH
        for name, line, length in function_lengths(REPO / rel)
        if length > MAX_LINES
    ]
    assert too_long == [], f"split by responsibility (at most {MAX_LINES} lines each): {too_long}"


def test_no_function_is_above_complexity_12():
    """The lint rule of pyproject.toml ([tool.ruff.lint] C90, mccabe max-complexity 12), run by CI."""
    ruff = Path(sys.executable).with_name("ruff")
    cmd = [str(ruff), "check", "--select", "C90", "--output-format", "concise", "--no-cache", "."]
    run = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, f"split these by responsibility:\n{run.stdout}{run.stderr}"


@pytest.mark.parametrize("check", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_the_whole_tree_is_ruff_clean(check):
    """docs/development.md's lint line (`ruff check .` and `ruff format --check .`): studies' scripts too."""
    ruff = Path(sys.executable).with_name("ruff")
    run = subprocess.run([str(ruff), *check, "--no-cache", "."], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, f"{run.stdout}{run.stderr}"


def test_the_complexity_rule_finds_a_complex_function(tmp_path):
    """The check above can fail: ruff with the project's settings flags a function of complexity 13."""
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(13))
    (tmp_path / "m.py").write_text(f"def f(x):\n{branches}    return -1\n")
    ruff = Path(sys.executable).with_name("ruff")
    cmd = [str(ruff), "check", "--config", str(REPO / "pyproject.toml"), "--select", "C90", "--no-cache"]
    run = subprocess.run([*cmd, str(tmp_path / "m.py")], capture_output=True, text=True)
    assert run.returncode == 1 and "C901 `f` is too complex (14 > 12)" in run.stdout


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for both checks below (one worker runs them, in this order): the second reads the
    package (and torch, numpy, pydantic) from the first's cache instead of checking them again."""
    return tmp_path_factory.mktemp("mypy-cache")


@pytest.mark.xdist_group("mypy")
def test_the_package_type_checks(mypy_cache):
    """mypy over the whole autorl/ package with pyproject.toml's [tool.mypy] (the pydantic plugin, every
    module): a config's type flows from its track's loader (Track[C]) through the engine, which reads it as a
    TrialConfig, into its backend (Backend[C])."""
    mypy = Path(sys.executable).with_name("mypy")
    cmd = [str(mypy), "--cache-dir", str(mypy_cache)]
    run = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0 and "Success: no issues found" in run.stdout, run.stdout[-6000:] + run.stderr


@pytest.mark.xdist_group("mypy")
def test_the_type_check_finds_a_config_passed_where_another_is_expected(tmp_path, mypy_cache):
    """The check above can fail: with the project's settings, the classic track's config handed to an LLM
    backend is an error, and so is a config without what the engine reads of every config."""
    (tmp_path / "m.py").write_text(
        "from pathlib import Path\n"
        "from autorl.classic.config import load_classic_config\n"
        "from autorl.engine.slots import plan\n"
        "from autorl.llm.embedded.backend import EmbeddedBackend\n"
        "cfg = load_classic_config(Path('classic.toml'))\n"
        "EmbeddedBackend().launch(cfg, Path('.'), 0)\n"
        "plan(EmbeddedBackend(), object(), seeds=1)\n"
    )
    mypy = Path(sys.executable).with_name("mypy")
    cmd = [str(mypy), "--config-file", str(REPO / "pyproject.toml"), "--cache-dir", str(mypy_cache)]
    run = subprocess.run([*cmd, str(tmp_path / "m.py")], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 1, run.stdout
    wrong_track = 'Argument 1 to "launch" of "EmbeddedBackend" has incompatible type "LoadedClassicConfig"'
    assert wrong_track in run.stdout
    assert 'Argument 2 to "plan" has incompatible type "object"; expected "TrialConfig"' in run.stdout


# ---- the package's shape: module sizes and import cycles ------------------------------------------------

MAX_MODULE_LINES = 600


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package under `root` by dotted name (a package by its own name)."""
    out = {}
    for path in sorted((root / "autorl").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that runs (at the top or inside a function), not those under
    `if TYPE_CHECKING:`, which only the type checker reads."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for branch in node.orelse for n in _runtime_imports(ast.Module([branch], [])))
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _runtime_imports(node)


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports (`from autorl.x import y` counts autorl.x.y when that is
    a module, else autorl.x)."""
    known = modules(root)
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for node in _runtime_imports(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            graph[name] |= {t for t in targets if t in known and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            component.append(v)
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_is_over_600_lines():
    long = {
        name: n for name, path in modules(REPO).items() if (n := len(path.read_text().splitlines())) > 600
    }
    assert long == {}, f"split by responsibility (at most {MAX_MODULE_LINES} lines a module): {long}"


def test_no_import_cycle_even_through_imports_inside_functions():
    assert cycles(import_graph(REPO)) == []


def test_the_cycle_check_finds_a_cycle_through_a_function_level_import(tmp_path):
    package = tmp_path / "autorl"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from autorl.b import f\n")
    (package / "b.py").write_text("def f():\n    from autorl import a\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from autorl import a\n"
    )
    (package / "d.py").write_text("import autorl.c\n")
    graph = import_graph(tmp_path)
    assert graph["autorl.a"] == {"autorl.b"} and graph["autorl.b"] == {"autorl.a"}
    assert graph["autorl.c"] == set() and graph["autorl.d"] == {"autorl.c"}  # a type-only import is not one
    assert cycles(graph) == [["autorl.a", "autorl.b"]]


# ---- floors: a module imports only from its own floor or below ------------------------------------------

# The package's floors, lowest first (docs/architecture.md): input/output helpers, the record, the trial
# engine, the two tracks, the commands (and the scripted agents). The engine reaches a track only through the
# registry, by name.
FLOORS = {
    "autorl": 0,
    "autorl.io": 0,
    "autorl.record": 1,
    "autorl.engine": 2,
    "autorl.llm": 3,
    "autorl.classic": 3,
    "autorl.commands": 4,
    "autorl.agents": 4,  # scripted agents for tests and demos, beside the commands they drive
}


def floor(module: str) -> int:
    """The floor of a module: that of the longest FLOORS prefix it falls under."""
    owners = [p for p in FLOORS if module == p or module.startswith(p + ".")]
    return FLOORS[max(owners, key=len)]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if floor(b) > floor(a))


def test_every_module_of_the_package_lives_on_a_floor():
    """A new folder is placed on a floor here (and on docs/architecture.md), not silently on floor 0."""
    folders = {p.split(".")[1] for p in FLOORS if "." in p}
    assert [m for m in modules(REPO) if "." in m and m.split(".")[1] not in folders] == []


def test_no_import_climbs_back_up_a_floor_even_inside_a_function():
    assert upward_imports(import_graph(REPO)) == []


def test_the_floor_check_finds_an_upward_import_inside_a_function(tmp_path):
    package = tmp_path / "autorl"
    for sub in ("io", "engine", "commands"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "io" / "paths.py").write_text("def f():\n    from autorl.commands import status\n")
    (package / "engine" / "seed.py").write_text("from autorl.io import paths\n")
    (package / "commands" / "status.py").write_text("from autorl.engine import seed\n")
    assert upward_imports(import_graph(tmp_path)) == ["autorl.io.paths -> autorl.commands.status"]


# ---- docs/architecture.md names every module on its floor ----------------------------------------------

ARCHITECTURE = REPO / "docs" / "architecture.md"


def layout_sections(page: str) -> dict[str, str]:
    """The page's layout block cut at each `autorl/<folder>/` heading line: folder -> its text."""
    block = page.split("```\nrun.py")[1].split("```")[0]
    sections: dict[str, str] = {}
    folder = ""
    for line in block.splitlines():
        if line.startswith("autorl/"):
            folder = line.split()[0].strip("/").split("/")[1]
        if folder:
            sections[folder] = sections.get(folder, "") + line + "\n"
    return sections


def test_the_architecture_page_names_every_module_in_its_folder_and_the_floors_as_the_check_has_them():
    page = ARCHITECTURE.read_text()
    sections = layout_sections(page)
    missing = [
        str(path.relative_to(REPO))
        for path in (REPO / "autorl").rglob("*.py")
        if path.name != "__init__.py"
        and path.name not in sections.get(path.relative_to(REPO / "autorl").parts[0], "")
    ]
    assert missing == [], "docs/architecture.md's layout does not name these where they live"
    table = {  # each folder of a floor's row: | 3 | `autorl/llm/`, `autorl/classic/` | ...
        f"autorl.{name}": int(number)
        for number, cell in re.findall(r"^\| (\d) \| ((?:`autorl/\w+/`(?:, )?)+) \|", page, re.M)
        for name in re.findall(r"`autorl/(\w+)/`", cell)
    }
    assert table == {k: v for k, v in FLOORS.items() if k != "autorl"}


_A_TIME_OF_DAY = re.compile(r"\d\d:\d\d:\d\d")


def test_no_test_id_holds_a_time_of_day(request):
    """Each xdist worker collects the suite for itself and refuses to run if their ids differ; an id built
    from a value that holds the clock (a ledger row's timestamp) differs whenever a second turns between
    two workers' collections. Parametrize such values with explicit ids."""
    ids = [item.nodeid for item in request.session.items]
    assert len(ids) > 1
    assert [i for i in ids if _A_TIME_OF_DAY.search(i)] == []
