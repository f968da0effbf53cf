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
