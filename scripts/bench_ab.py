"""Old vs new trainer code, side by side: steps per second over a short fixed budget, and the same numbers.

    uv run python scripts/bench_ab.py --old /tmp/q-old [--rounds 3] [--ppo-seconds 15] [--llm-seconds 20]
        [--kinds ppo llm llm-hf]

For a refactoring of the trainers' loops (issue 29): `--old` is a checkout of the code before the change (e.g.
`git worktree add /tmp/q-old main`), the new code is this checkout. Each round runs the old tree, then the
new one (A B A B ...), each in a fresh `python` of this venv with the tree first on PYTHONPATH, so machine
load hits both alike (one process per version and round runs both trainers, one after the other). Two
trainers:

- ppo: autorl.classic.ppo.PPO on classic.toml (one torch thread), `--ppo-seconds` of `run()`: PPO updates
  per second and env steps per second;
- llm: the embedded GRPO Trainer on train.toml with the shipped tiny model (models/tiny-default), stopped
  after `--llm-seconds` of training: optimizer steps per second (the sampler train.toml picks: on 2 free
  cores the hf-process sampler in a second process);
- llm-hf (`--kinds ppo llm-hf`): the same with the in-process sampler, so that the CPU time is all in one
  process.

Wall-clock steps per second and steps per CPU-second of the process (robust when other jobs share the
cores; for `llm` the sampler process's CPU is not counted).

Prints every run, then per trainer the medians and the ratio new/old. Same seed in every run: the losses of
the updates both versions reached must be equal (a refactoring changes no number); a difference is printed
as MISMATCH and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SEED = 1


def work_ppo(seconds: float) -> dict:
    import torch

    from autorl.classic.config import load_classic_config
    from autorl.classic.ppo import PPO

    torch.set_num_threads(1)
    cfg = load_classic_config(Path("classic.toml")).model
    ppo = PPO(cfg, SEED)
    losses: list[float] = []
    env_steps = 0
    start, cpu = time.perf_counter(), time.process_time()
    for u in ppo.run(stop=lambda: time.perf_counter() - start >= seconds):
        losses.append(u.loss)
        env_steps = u.env_steps
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    ppo.close()
    return {
        "steps": len(losses),
        "seconds": elapsed,
        "cpu": cpu,
        "env_steps": env_steps,
        "losses": losses,
    }


def work_llm(seconds: float, sampler: str | None = None) -> dict:
    import autorl.engine.progress
    from autorl.llm.config import load_train_config
    from autorl.llm.embedded.backend import build_spec
    from autorl.llm.embedded.train import Trainer

    spec = build_spec(load_train_config(Path("train.toml"), "embedded").model)
    spec = spec.model_copy(update={"model_path": str(HERE / "models" / "tiny-default"), "max_steps": None})
    if sampler:
        spec = spec.model_copy(update={"sampler": sampler})
    started: list[float] = []
    cpu: list[float] = []
    emit = autorl.engine.progress.emit

    def on_event(event: str, **fields) -> None:  # the training clock starts at `ready`, as in a trial
        if event == "ready":
            started.append(time.perf_counter())
            cpu.append(time.process_time())
        emit(event, **fields)

    autorl.engine.progress.emit = on_event
    with tempfile.TemporaryDirectory() as run_dir:
        trainer = Trainer(spec, Path(run_dir), SEED)

        def arm() -> None:
            while not started:
                time.sleep(0.01)
            time.sleep(seconds)
            trainer.request_stop()

        timer = threading.Thread(target=arm, daemon=True)
        timer.start()
        with open(os.devnull, "w") as quiet, _redirect_stdout(quiet):
            trainer.run()
        elapsed, cpu_s = time.perf_counter() - started[0], time.process_time() - cpu[0]
        rows = [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]
    return {
        "steps": trainer.step,
        "seconds": elapsed,
        "cpu": cpu_s,
        "losses": [r["loss"] for r in rows],
    }


class _redirect_stdout:
    def __init__(self, f):
        self.f, self.fd = f, None

    def __enter__(self):
        sys.stdout.flush()
        self.fd = os.dup(1)
        os.dup2(self.f.fileno(), 1)

    def __exit__(self, *exc):
        sys.stdout.flush()
        os.dup2(self.fd, 1)
        os.close(self.fd)


def run_one(tree: Path, work: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--work", *work]
    out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"{work} in {tree} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare(kind: str, runs: dict[str, list[dict]]) -> bool:
    for clock in ("seconds", "cpu"):
        rates = {v: [r["steps"] / r[clock] for r in rs] for v, rs in runs.items()}
        med = {v: statistics.median(x) for v, x in rates.items()}
        unit = "steps/s" if clock == "seconds" else "steps per CPU-second"
        print(
            f"{kind}: {unit} old {[round(x, 2) for x in rates['old']]} median {med['old']:.2f}; "
            f"new {[round(x, 2) for x in rates['new']]} median {med['new']:.2f}; ratio new/old "
            f"{med['new'] / med['old']:.3f}"
        )
    if kind == "ppo":
        sps = {v: statistics.median(r["env_steps"] / r["seconds"] for r in rs) for v, rs in runs.items()}
        print(f"ppo: env steps/s median old {sps['old']:.0f} new {sps['new']:.0f}")
    same = True
    for old, new in zip(runs["old"], runs["new"], strict=True):
        n = min(len(old["losses"]), len(new["losses"]))
        if old["losses"][:n] != new["losses"][:n]:
            print(f"{kind}: MISMATCH in the first {n} losses")
            same = False
    if same:
        n = min(min(len(r["losses"]) for r in rs) for rs in runs.values())
        print(f"{kind}: the losses of the first {n} steps are identical in old and new")
    return same


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", type=Path, help="checkout of the code before the change")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--ppo-seconds", type=float, default=15.0)
    p.add_argument("--llm-seconds", type=float, default=20.0)
    p.add_argument("--kinds", nargs="+", choices=("ppo", "llm", "llm-hf"), default=["ppo", "llm"])
    p.add_argument("--work", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.work:  # kind=seconds ...: one process runs each trainer in turn
        work = {
            "ppo": work_ppo,
            "llm": work_llm,
            "llm-hf": lambda sec: work_llm(sec, "hf"),
        }
        result = {kind: work[kind](float(sec)) for kind, sec in (w.split("=") for w in args.work)}
        print(json.dumps(result))
        return 0
    if args.old is None:
        p.error("--old is required")
    kinds = args.kinds
    work = [f"{kind}={args.ppo_seconds if kind == 'ppo' else args.llm_seconds}" for kind in kinds]
    runs: dict[str, dict[str, list[dict]]] = {kind: {"old": [], "new": []} for kind in kinds}
    for i in range(args.rounds):
        for version, tree in (("old", args.old.resolve()), ("new", HERE)):
            result = run_one(tree, work)
            for kind in kinds:
                r = result[kind]
                runs[kind][version].append(r)
                print(
                    f"{kind} round {i + 1} {version}: {r['steps']} steps in {r['seconds']:.1f}s "
                    f"= {r['steps'] / r['seconds']:.2f}/s ({r['cpu']:.1f} CPU-s)",
                    flush=True,
                )
    ok = True
    for kind in kinds:
        ok = compare(kind, runs[kind]) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
