"""How long `run.py --ray local` takes to end after SIGINT, 2 s after its first seed started (what
tests/test_ray.py's signal test does): prints the run's last lines with their arrival times.

usage: .venv/bin/python studies/suite-2026-11-28/ray_stop_timeline.py TREE  (TREE: a checkout to run, whose
run.py is started with this interpreter)"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

tree = Path(sys.argv[1]).resolve()
tmp = Path(tempfile.mkdtemp(prefix="ray-stop-"))
root = tmp / "root"
root.mkdir()
(root / "classic.toml").write_text("total_env_steps = 10000000\nnum_envs = 8\nnum_steps = 32\n")
env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_") and k != "PYTHONDONTWRITEBYTECODE"}
env |= {"HOME": str(tmp), "AUTORL_ROOT": str(root), "AUTORL_TEST_RAY": uuid.uuid4().hex}
args = ["--track", "classic", "--allow-dirty-harness", "--seeds", "2", "--budget", "60", "--ray", "local"]
proc = subprocess.Popen(
    [sys.executable, "run.py", *args], cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    text=True,
)  # fmt: skip
t0 = time.monotonic()
lines: list[tuple[float, str]] = []


def read() -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append((time.monotonic() - t0, line))


reader = threading.Thread(target=read, daemon=True)
reader.start()
while not any((root / "runs").glob("*/seed-*/run.log")) and proc.poll() is None:
    time.sleep(0.2)
time.sleep(2)
sent = time.monotonic() - t0
proc.send_signal(signal.SIGINT)
proc.wait()
ended = time.monotonic() - t0
reader.join(5)
for t, line in lines:
    if t > sent - 1 and not re.match(r"[a-z_/]+: ", line):  # not the summary block
        print(f"{t:7.2f} {line}", end="")
print(f"{tree}: SIGINT at {sent:.2f} s, exit {proc.returncode} at {ended:.2f} s: {ended - sent:.1f} s later")
shutil.rmtree(tmp, ignore_errors=True)
