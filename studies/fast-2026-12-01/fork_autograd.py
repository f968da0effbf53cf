"""Why a forked seed's backward failed after a training compile in its parent, and what keeps it working
(autorl/llm/embedded/prewarm.py). Each way runs in a fresh interpreter (autograd's engine starts once a
process): it uses the engine as the way says, prints the process's native threads, then forks a child that
runs a plain CPU backward and says whether it could.

    .venv/bin/python studies/fast-2026-12-01/fork_autograd.py

Ways: `fake-first`, the engine's first use a backward under fake tensors (what torch.compile's AOTAutograd
does when it traces a training step's backward); `plain-first`, a plain CPU backward, then the same;
`compile`, a training step compiled (inductor) and run forward and backward; `plain-then-compile`, a plain
CPU backward first, then that.
"""

from __future__ import annotations

import os
import subprocess
import sys

WAYS = ("fake-first", "plain-first", "compile", "plain-then-compile")


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def one_way(way: str) -> None:
    import torch

    before = threads()
    if way.startswith("plain"):
        x = torch.ones(3, requires_grad=True)
        (x * 2).sum().backward()
    if way in ("fake-first", "plain-first"):
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode():
            x = torch.ones(3, requires_grad=True)
            torch.autograd.grad((x * 2).sum(), x)
    else:
        step = torch.compile(lambda x: (x * 2).sin().sum())
        step(torch.ones(3, requires_grad=True)).backward()
    after = threads()
    pid = os.fork()
    if pid == 0:
        try:
            x = torch.ones(3, requires_grad=True)
            (x * 3).sum().backward()
            said = "ok"
        except RuntimeError as exc:
            said = f"RuntimeError: {str(exc)[:90]}"
        print(f"{way}: native threads {before} -> {after}; a forked child's backward: {said}", flush=True)
        os._exit(0)
    os.waitpid(pid, 0)


def main() -> None:
    if len(sys.argv) > 1:
        one_way(sys.argv[1])
        return
    import torch

    print(f"# torch {torch.__version__}", flush=True)
    for way in WAYS:
        subprocess.run([sys.executable, __file__, way], check=True, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
