"""The fixed-harness check: which files count, the hash, and the refusal of a modified harness."""

from __future__ import annotations

import subprocess
from pathlib import Path

from autorl.io.harness import commit_short, dirty_harness_files, harness_hash, uncommitted


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def make_repo(root: Path) -> Path:
    (root / "autorl").mkdir()
    (root / "autorl" / "eval.py").write_text("N = 1000\n")
    (root / "run.py").write_text("print('run')\n")
    (root / "train.toml").write_text("max_steps = 10\n")
    (root / "classic.toml").write_text("env_id = 'CartPole-v1'\n")
    (root / ".gitignore").write_text("runs/\nresults.tsv\n")
    git(root, "init", "-q")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    return root


def test_agent_files_and_generated_files_are_not_harness(tmp_path):
    root = make_repo(tmp_path)
    before = harness_hash(root)
    (root / "train.toml").write_text("max_steps = 20\n")
    (root / "classic.toml").write_text("env_id = 'BipedalWalker-v3'\n")
    (root / "runs").mkdir()
    (root / "runs" / "x.log").write_text("log")
    (root / "results.tsv").write_text("a\tb\n")
    assert dirty_harness_files(root) == []
    assert harness_hash(root) == before


def test_modified_harness_file_is_named_and_changes_the_hash(tmp_path):
    root = make_repo(tmp_path)
    before = harness_hash(root)
    (root / "autorl" / "eval.py").write_text("N = 10  # an easier eval\n")
    assert dirty_harness_files(root) == ["autorl/eval.py"]
    assert harness_hash(root) != before


# a page, a study's log, a test, a study script, a note at the root: tracked, never read by a trial
NOT_SCORED_FILES = (
    "docs/statistics.md",
    "studies/x/pool.log",
    "tests/test_x.py",
    "scripts/s.py",
    "NOTES.md",
)


def test_pages_and_recorded_evidence_keep_the_hash_and_are_still_refused_when_edited(tmp_path):
    """A page, a study, a test or a study script changes no score: committing one keeps the research context
    (the hash); an uncommitted edit is refused as any tracked file's is. The eval's settings are scored."""
    root = make_repo(tmp_path)
    for path in NOT_SCORED_FILES:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("v1\n")
    (root / "eval.toml").write_text("num_examples = 500\n")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "pages")
    before = harness_hash(root)
    for path in NOT_SCORED_FILES:
        (root / path).write_text("v2\n")
    assert harness_hash(root) == before
    assert dirty_harness_files(root) == sorted(NOT_SCORED_FILES)
    (root / "eval.toml").write_text("num_examples = 50\n")
    assert harness_hash(root) != before


def test_new_module_in_the_package_counts_as_dirty(tmp_path):
    root = make_repo(tmp_path)
    (root / "autorl" / "sneaky.py").write_text("x = 1\n")
    (root / "notes.txt").write_text("scratch file outside the harness code\n")
    assert dirty_harness_files(root) == ["autorl/sneaky.py"]


def test_commit_short_outside_git(tmp_path):
    assert commit_short(tmp_path) == "nogit"
    assert dirty_harness_files(tmp_path) == []
    root = make_repo(tmp_path / "repo") if (tmp_path / "repo").mkdir() is None else None
    assert root is not None and len(commit_short(root)) == 7


def test_uncommitted_says_whether_the_commit_holds_the_agents_config(tmp_path):
    """The agent's config edited, or new and never added, is not what HEAD holds; outside git nothing is."""
    root = make_repo(tmp_path / "repo") if (tmp_path / "repo").mkdir() is None else tmp_path
    assert not uncommitted(root, root / "train.toml")
    (root / "train.toml").write_text("max_steps = 20\n")
    assert uncommitted(root, root / "train.toml") and not uncommitted(root, root / "classic.toml")
    (root / "mine.toml").write_text("max_steps = 5\n")
    assert uncommitted(root, root / "mine.toml")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "idea")
    assert not uncommitted(root, root / "train.toml")
    (tmp_path / "elsewhere.toml").write_text("max_steps = 5\n")
    assert not uncommitted(root, tmp_path / "elsewhere.toml")  # outside the repository: git cannot tell
    assert not uncommitted(tmp_path / "repo" / "..", tmp_path / "x.toml")  # tmp_path itself is no repo
