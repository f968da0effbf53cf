"""Every relative link and image of README.md, program.md, docs/ and studies/ resolves to a file git holds
(a file the working tree has but git ignores is missing on a fresh clone: the README's first picture once
was)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")  # markdown [text](target) and ![alt](target)


def committed() -> set[str]:
    run = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True)
    return set(run.stdout.splitlines())


def broken_links(page: str, text: str, files: set[str]) -> list[str]:
    """The relative targets of `page` (a repository path) that are neither a committed file nor a folder
    holding one; web addresses and in-page anchors are not checked here."""
    folders = {str(Path(f).parent) for f in files} | {str(p) for f in files for p in Path(f).parents}
    out = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        path = os.path.normpath(Path(page).parent / target.split("#")[0])
        if path not in files and path not in folders:
            out.append(f"{page}: {target}")
    return out


def test_every_relative_link_and_image_of_the_pages_is_a_committed_file():
    files = committed()
    pages = [
        "README.md",
        "program.md",
        *sorted(f for f in files if f.startswith(("docs/", "studies/")) and f.endswith(".md")),
    ]
    broken = [b for page in pages for b in broken_links(page, (REPO / page).read_text(), files)]
    assert broken == []


def test_a_link_to_a_file_git_does_not_hold_is_found():
    files = {"README.md", "docs/a.md", "studies/sessions/x/README.md", "studies/sessions/x/session.log"}
    text = "![chart](progress.png) [log](session.log) [up](../../../docs/a.md) [web](https://x.org/y)"
    text += " [here](#top)"
    assert broken_links("studies/sessions/x/README.md", text, files) == [
        "studies/sessions/x/README.md: progress.png"
    ]
    assert broken_links("README.md", "[d](studies/sessions/x) [m](docs/a.md#part) [n](docs/b.md)", files) == [
        "README.md: docs/b.md"
    ]


# ---- module names in the pages and the package's docstrings ---------------------------------------------

MODULE_PATH = re.compile(r"\bautorl/[\w/]+\.py")
DOTTED = re.compile(r"\bautorl(?:\.\w+)+")
NOT_MODULES = {"autorl.invalid"}  # the stand-in agent's e-mail domain


def top_level_names(module: Path) -> set[str]:
    """What `module` defines or imports at its top level (read, not imported)."""
    import ast

    names = set()
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def stale_names(text: str, root: Path) -> list[str]:
    """The `autorl/x/y.py` paths and `autorl.x.y[.name]` names in `text` that no longer exist under `root`: a
    file or module gone, or a name its module no longer defines."""
    out = [p for p in MODULE_PATH.findall(text) if not (root / p).is_file()]
    for dotted in set(DOTTED.findall(text)) - NOT_MODULES:
        parts = dotted.split(".")
        for i in range(len(parts), 1, -1):
            base = root.joinpath(*parts[:i])
            module = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
            if module.is_file():
                if i < len(parts) and parts[i] not in top_level_names(module):
                    out.append(dotted)
                break
        else:
            out.append(dotted)
    return sorted(out)


def test_every_module_the_pages_and_docstrings_name_still_exists():
    """The map of who lives where is docs/architecture.md, but pages and docstrings name modules too: every
    path and dotted name they give (down to the name a module defines) still exists, so a move or a rename
    that leaves one stale fails here."""
    files = committed()
    texts = [f for f in files if f.endswith(".py") and f.startswith("autorl/")]
    texts += ["README.md", "program.md", *(f for f in files if f.startswith("docs/") and f.endswith(".md"))]
    stale = {f: found for f in sorted(texts) if (found := stale_names((REPO / f).read_text(), REPO))}
    assert stale == {}


def test_a_stale_module_name_is_found(tmp_path):
    (tmp_path / "autorl" / "engine").mkdir(parents=True)
    (tmp_path / "autorl" / "engine" / "seed.py").write_text("def run_seed():\n    pass\n")
    text = "autorl/engine/seed.py, autorl/engine/gone.py, autorl.engine.seed.run_seed, autorl.engine.seed.old"
    assert stale_names(text, tmp_path) == ["autorl.engine.seed.old", "autorl/engine/gone.py"]
