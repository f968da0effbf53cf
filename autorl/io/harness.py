"""The fixed harness: everything in the repo but the files the agent edits and what trials generate.

A trial refuses to run when a harness file differs from the last commit (the agent must never "improve"
a score by editing the eval, the runner or the seeds), and every ledger row records the harness hash so
only trials of the same harness are compared. The hash covers what can change a score (the package, the
environments, the eval and trial settings, the model recipes, the locked dependencies): not the pages, the
recorded evidence, the tests or the study scripts, which no trial imports or runs, so committing a study or
fixing a typo in a page keeps the research context (`NOT_SCORED`). Editing them is still refused while a
trial runs, as any tracked file is.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

# What the agent may edit, and what trials write. Everything else tracked by git is harness.
AGENT_FILES = ("train.toml", "classic.toml")
GENERATED = ("results.tsv", "runs/", "progress.png", "STOP")
# Untracked files under these count as harness changes (a new module there runs inside the harness).
CODE_DIRS = ("autorl/", "environments/", "tests/")
MODULE_SUFFIXES = (".py", ".pyc", ".so")  # what `import name` finds in a directory on sys.path
# Tracked files no trial reads, imports or runs: pages, recorded sessions and studies, tests, study scripts,
# example configs (a trial's config is hashed by itself), CI. Left out of the harness hash only.
NOT_SCORED = ("docs/", "studies/", "tests/", "scripts/", "examples/", ".ci/")
NOT_SCORED_SUFFIXES = (".md",)


def git(root: Path, *args: str, stdin: str | None = None) -> str:
    """`git ARGS` in `root`, `stdin` fed to it: its stdout (CalledProcessError when it fails). The package's
    one git runner."""
    done = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True, input=stdin)
    return done.stdout


def is_git_repo(root: Path) -> bool:
    try:
        return git(root, "rev-parse", "--is-inside-work-tree").strip() == "true"
    except (subprocess.CalledProcessError, FileNotFoundError):
        return False


def _is_harness(path: str) -> bool:
    return path not in AGENT_FILES and not any(
        path == g or (g.endswith("/") and path.startswith(g)) for g in GENERATED
    )


def scored(path: str) -> bool:
    """Whether a harness file can change a score (it is in the harness hash)."""
    return not path.startswith(NOT_SCORED) and not path.endswith(NOT_SCORED_SUFFIXES)


def commit_short(root: Path) -> str:
    """The short commit of HEAD, or 'nogit' outside a repository / before the first commit."""
    try:
        return git(root, "rev-parse", "--short=7", "HEAD").strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "nogit"


def uncommitted(root: Path, path: Path) -> bool:
    """Whether `path` (the agent's config) differs from the last commit, or is not committed at all: a
    trial of it would be recorded under a commit that does not hold it. False outside git."""
    if not is_git_repo(root):
        return False
    try:
        return bool(git(root, "status", "--porcelain", "--", str(path)).strip())
    except (subprocess.CalledProcessError, FileNotFoundError):
        return False


def harness_hash(root: Path) -> str:
    """Hash of the harness files that can change a score (`scored`), as they are in the working tree (12 hex
    digits).

    Uses git's blob ids of tracked files (the working-tree content for modified ones), so it is cheap.
    Outside git it hashes the package and the top-level scripts directly.
    """
    digest = hashlib.sha256()
    if is_git_repo(root):
        files = [f for f in git(root, "ls-files", "-z").split("\0") if f and _is_harness(f) and scored(f)]
        existing = [f for f in files if (root / f).is_file()]
        blobs = git(root, "hash-object", "--stdin-paths", stdin="\n".join(existing)) if existing else ""
        for name, blob in zip(existing, blobs.split(), strict=True):
            digest.update(f"{name}\0{blob}\n".encode())
    else:
        for path in sorted([*root.glob("autorl/**/*.py"), *root.glob("*.py"), *root.glob("eval.toml")]):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def importable(root: Path, path: str) -> bool:
    """Could Python import this untracked file while the harness runs?

    The repo root is on sys.path (`uv run run.py` puts the script's directory first, `python -m` the working
    directory), so a root-level module (a `difflib.py` shadows the standard library) or a file of a root-level
    package counts, as does anything under the package, the environments and the tests.
    """
    if path.startswith(CODE_DIRS):
        return True
    top, sep, _ = path.partition("/")
    if not sep:
        return path.endswith(MODULE_SUFFIXES)
    return top.isidentifier() and (root / top / "__init__.py").is_file() and path.endswith(MODULE_SUFFIXES)


def dirty_harness_files(root: Path) -> list[str]:
    """Harness files that differ from the last commit, plus untracked files the harness would import.

    Untracked, non-ignored files that Python could import (`importable`) count: a new module can change the
    harness as much as an edited one.
    """
    if not is_git_repo(root):
        return []
    out = git(root, "status", "--porcelain", "-z", "--untracked-files=all")
    dirty = []
    entries = out.split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if not entry:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":  # rename/copy: the next entry is the source path
            i += 1
        if code == "??" and not importable(root, path) and path != "eval.toml":
            continue
        if _is_harness(path):
            dirty.append(path)
    return sorted(dirty)
