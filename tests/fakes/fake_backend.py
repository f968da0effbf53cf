"""TEST DOUBLE: a backend whose training child and eval are small scripts, to test the trial runner.

It is not a trainer. The child follows autorl's progress protocol and can be told to train normally,
crash, hang or ignore SIGTERM; "weights" are a file holding a quality number that the fake eval turns
into per-example scores, so the runner's summary, ledger, statistics and crash handling can be checked
end to end in seconds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from autorl.engine.backend import WHOLE_MACHINE, Backend, Collected, Launch, Slot, Snapshot

# A valid train.toml for the test model the fake machine file names (no model is loaded: the backend is a
# test double).
TRAIN_TOML = """\
max_steps = 100
[model]
name = "tiny-test-model"
[orchestrator]
batch_size = 8
group_size = 4
[[orchestrator.train.source]]
name = "arithmetic"
[orchestrator.train.source.env.taskset]
id = "autorl-arithmetic"
"""

CHILD = """
import json, os, signal, sys, time
from pathlib import Path
mode, run_dir, quality = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3])
step_s = float(os.environ.get("FAKE_STEP_S", "0.02"))  # a step's seconds: a machine slower or faster
snapshots = [float(s) for s in sys.argv[4].split(",") if s]  # RunSpec.snapshot_s: seconds, earliest first
rungs = [tuple(map(float, r.split(":"))) for r in sys.argv[5].split(",") if r]  # RunSpec.rungs: (f, s)
rung_quality = quality - 0.03 if mode == "slow_start" else quality  # behind at its rungs, not at its end
def emit(event, **kw):
    print("@@autorl " + json.dumps({"event": event, **kw}), flush=True)
def save():
    (run_dir / "weights").mkdir(exist_ok=True)
    tmp = run_dir / "weights" / "quality.tmp"
    tmp.write_text(str(quality))
    tmp.replace(run_dir / "weights" / "quality.txt")  # atomic, as real trainers save
def on_term(*_):
    save(); emit("saved"); sys.exit(0)
signal.signal(signal.SIGTERM, signal.SIG_IGN if mode == "ignore_term" else on_term)
print("loading model", flush=True)
if mode == "slow_ready":  # a start-up like a first seed's wait for its warm starter (autorl/engine/warm.py)
    time.sleep(1.5)
emit("ready")
started = time.monotonic()
paused, rung_count = 0.0, len(rungs)
if mode == "crash":
    emit("step", step=1, reward=0.1)
    print("Traceback (most recent call last):", flush=True)
    print("RuntimeError: CUDA out of memory (simulated)", flush=True)
    sys.exit(3)
if mode == "grandchild":  # like the sampler process: a child of the trainer that dies with it
    import subprocess
    code = "import time, autorl.engine.process as p; p.die_with_parent(); "
    code += "print('grandchild up', flush=True); "
    code += "time.sleep(600)"
    subprocess.Popen([sys.executable, "-c", code])
if mode == "hang":
    emit("step", step=1, reward=0.1)
    time.sleep(600)
for step in range(1, 10**6):
    time.sleep(step_s)
    reward = (min(step, 25) / 25 if step <= 25 else 0.05) if mode == "collapse" else 0.5  # rise, then fall
    emit("step", step=step, reward=reward)
    with open(run_dir / "metrics.jsonl", "a") as f:
        shares = (0.8, 0.6) if mode == "nosignal" else (0.1, 0.05)  # zero-advantage groups, cut completions
        row = {"step": step, "reward_mean": reward, "zero_adv_frac": shares[0], "truncated_frac": shares[1]}
        row["elapsed_s"] = round(time.monotonic() - started, 4)  # the training clock, as the trainer
        f.write(json.dumps(row) + "\\n")
    if step % 10 == 0 or mode == "ignore_term":
        save()
    if snapshots and time.monotonic() - started >= snapshots[0]:  # as the embedded trainer keeps them
        at_s = snapshots.pop(0)
        snap = run_dir / "snapshots" / f"at-{at_s:g}s"
        snap.mkdir(parents=True)
        (snap / "quality.txt").write_text(str(quality * at_s / (at_s + 1)))  # a curve that rises
        (snap / "snapshot.json").write_text(json.dumps({"at_s": at_s, "step": step}))
        emit("snapshot", step=step, at_s=at_s, path=str(snap))
    if rungs and time.monotonic() - started - paused >= rungs[0][1]:  # as the embedded trainer scores them
        fraction, at_s = rungs.pop(0)
        k = rung_count - len(rungs)
        emit("pause")
        t0 = time.monotonic()
        snap = run_dir / "snapshots" / f"rung-{k}"
        snap.mkdir(parents=True)
        (snap / "quality.txt").write_text(str(rung_quality))
        go = run_dir / f"rung-{k}.go"
        emit("rung", rung=k, fraction=fraction, at_s=at_s, step=step, weights=str(snap), go=str(go))
        while not go.exists():  # a SIGTERM here (the early abort) saves and exits
            time.sleep(0.01)
        paused += time.monotonic() - t0
        emit("resume")
    if mode == "finish" and step == 20:
        save(); emit("done"); sys.exit(0)
"""

EVAL = """
import json, os, sys, time
from pathlib import Path
out, weights = Path(sys.argv[1]), sys.argv[2]
quality = 0.3 if weights == "base" else float((Path(weights) / "quality.txt").read_text())
n = 400
row_delay = float(os.environ.get("FAKE_EVAL_ROW_DELAY", "0"))  # a slow eval: a wide window for races
with open(out, "w") as f:
    for i in range(n):
        score = 1.0 if (i * 0.618034) % 1.0 < quality else 0.0
        f.write(json.dumps({"env": "toy", "example_id": str(i), "sample": 0, "score": score}) + "\\n")
        if row_delay:
            f.flush()
            time.sleep(row_delay)
print(json.dumps({"eval_score": quality}))
"""


class FakeBackend(Backend):
    """`slots`: how many seeds the fake machine runs at once; `modes`: a mode per seed index (else `mode`)."""

    name = "embedded"
    scores_rungs = True  # its child pauses at the trial's rungs as the embedded trainer does

    def __init__(
        self,
        mode: str = "ok",
        quality: float = 0.6,
        scripts_dir: Path | None = None,
        slots: int = 1,
        modes: dict[int, str] | None = None,
    ) -> None:
        self.mode, self.quality, self.slots, self.modes = mode, quality, slots, modes or {}
        self.dir = scripts_dir or Path.cwd()
        (self.dir / "fake_child.py").write_text(CHILD)
        (self.dir / "fake_eval.py").write_text(EVAL)

    def check(self, cfg: Any) -> None:
        pass

    def resolve(self, cfg: Any, run_dir: Path, seed: int, slot: Slot = WHOLE_MACHINE) -> dict[str, Any]:
        return {
            "fake": True,
            "mode": self.mode,
            "seed": seed,
            "snapshot_s": list(getattr(cfg, "snapshot_s", ())),
            "rungs": [list(r) for r in getattr(cfg, "rungs", ())],
        }

    def launch(self, cfg: Any, run_dir: Path, seed: int, slot: Slot = WHOLE_MACHINE) -> Launch:
        mode = self.modes.get(int(run_dir.name.removeprefix("seed-")), self.mode)
        argv = [sys.executable, str(self.dir / "fake_child.py"), mode, str(run_dir), str(self.quality)]
        argv.append(",".join(f"{s:g}" for s in getattr(cfg, "snapshot_s", ())))
        argv.append(",".join(f"{f:g}:{s:g}" for f, s in getattr(cfg, "rungs", ())))
        return Launch(argv=argv, cwd=run_dir, cpus=slot.cpus)

    def plan_slots(self, cfg: Any, machine: Any) -> list[Slot]:
        return [Slot(index=i) for i in range(self.slots)]

    def collect(self, cfg: Any, run_dir: Path) -> Collected:
        weights = run_dir / "weights"
        snapshots = [
            Snapshot(info["at_s"], info["step"], d)
            for d in sorted((run_dir / "snapshots").glob("at-*s"))
            if (info := json.loads((d / "snapshot.json").read_text()))
        ]
        return Collected(
            weights_dir=weights if (weights / "quality.txt").exists() else None, snapshots=snapshots
        )

    def eval_command(
        self,
        cfg: Any,
        weights_dir: Path | None,
        out_path: Path,
        slot: Slot = WHOLE_MACHINE,
        split: str = "eval",
    ) -> Launch:
        argv = [sys.executable, str(self.dir / "fake_eval.py"), str(out_path), str(weights_dir or "base")]
        return Launch(argv=argv, cwd=out_path.parent)
