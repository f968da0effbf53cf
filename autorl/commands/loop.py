"""`autorl loop --agent CMD`: keep a coding agent working overnight.

Agent CLIs end their session sooner or later (context full, a turn limit, a crash). The loop re-invokes the
command with a continue-the-loop prompt (from program.md) each time it exits, until the time limit, the
trial limit (new rows in results.tsv since the loop started) or a `STOP` file in the repo root.

The prompt is appended to the command as its last argument (shell-quoted), or substituted for `{prompt}`
when the command contains it; it is also in the environment as AUTORL_PROMPT. Every invocation's output
goes to `.autorl/loop/<n>.log`, and one line per event to `.autorl/loop.log`. With `--confirm-every K`,
`autorl confirm` runs between invocations after every K new keeps, and once more when the loop ends
(`--confirm-factor F`: `autorl confirm --factor F`, the best keep and the baseline trained F times longer).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from autorl.engine.process import end_group
from autorl.io import paths
from autorl.record.ledger import Ledger, LedgerError
from autorl.record.row import AGENT_VAR, LedgerRow

POLL_S = 1.0  # how often the stop conditions are checked while the agent runs
GRACE_S = 60.0  # SIGTERM -> SIGKILL for an agent stopped by a limit or STOP: run.py stops its seeds
# within its own grace (30 s), records the interrupted trial, and exits 143 before this
FAST_EXIT_S = 20.0  # an invocation shorter than this that records no trial counts as a failed start
MAX_FAST_EXITS = 5  # ... and this many in a row end the loop (a broken command must not spin all night)
BACKOFF_S = 2.0  # wait before retrying after a fast exit, doubled each time (at most 60 s)
TRIAL_LIMIT = "trial limit"  # the stop reason of --max-trials, the one that lets the agent mark first
SWARM_CONFIRMS_VAR = "AUTORL_SWARM_CONFIRM_EVERY"  # set by `autorl swarm --confirm-every K` for its loops
MARK_GRACE_S = 120.0  # at the trial limit, how long the agent may still take to mark its last trials

DEFAULT_PROMPT = (
    "You are running the autorl research loop in this repository. Read program.md and follow its loop: "
    "run `uv run autorl status`, then continue experimenting (one hypothesis, edit train.toml, commit, run, "
    "keep or revert, mark). Never edit the harness, never stop on your own."
)
PROMPT_RE = re.compile(r"<!-- loop-prompt -->\s*(.*?)\s*<!-- /loop-prompt -->", re.S)


def loop_prompt(root: Path) -> str:
    """The continue prompt: the block between `<!-- loop-prompt -->` markers in program.md."""
    try:
        m = PROMPT_RE.search((root / "program.md").read_text())
    except OSError:
        m = None
    text = m.group(1).strip() if m else ""
    text = text.strip("`").strip()
    return text or DEFAULT_PROMPT


def build_command(agent: str, prompt: str) -> str:
    quoted = shlex.quote(prompt)
    return agent.replace("{prompt}", quoted) if "{prompt}" in agent else f"{agent} {quoted}"


def count_trials(ledger: Ledger) -> int:
    try:
        return len(ledger.rows())
    except LedgerError:
        return 0  # a malformed file counts as no new trials; run.py reports the problem itself


def ledger_problem(ledger: Ledger) -> str | None:
    """Why run.py would refuse every trial on this ledger (None: it would not): no agent is started on it."""
    try:
        ledger.check()
    except LedgerError as exc:
        return str(exc)
    return None


def run_confirm(root: Path, args: list[str], log_dir: Path, say: Callable[[str], None]) -> int:
    """`autorl <args>` (a confirm) in its own process, its output in log_dir/confirm-<time>.log; its exit."""
    out_path = log_dir / f"confirm-{datetime.now().strftime('%Y%m%d-%H%M%S')}.log"
    log_dir.mkdir(parents=True, exist_ok=True)
    say(f"output in {out_path}")
    with open(out_path, "w") as out:
        argv = [sys.executable, "-m", "autorl.commands.cli", *args]
        return subprocess.call(argv, cwd=root, stdout=out, stderr=out)


def count_keeps(ledger: Ledger) -> int:
    """The ideas kept (a baseline, kept by design, is none): what `--confirm-every K` counts."""
    try:
        return sum(r.decision == "keep" and r.verdict != "baseline" for r in ledger.rows())
    except LedgerError:
        return 0


class Loop:
    def __init__(
        self,
        agent: str,
        hours: float | None,
        max_trials: int | None,
        root: Path | None = None,
        confirm_every: int | None = None,
        confirm_factor: float | None = None,
    ):
        self.agent = agent
        self.confirm_every = confirm_every  # `autorl confirm` after every K new keeps and at the end
        self.confirm_factor = confirm_factor  # ... at this many times the trial's budget (None: at it)
        self.hours = hours
        self.root = root or paths.repo_root()
        self.deadline = time.monotonic() + hours * 3600 if hours else None
        self.max_trials = max_trials
        self.ledger = Ledger(paths.results_file())  # the records' (a swarm's agents share one)
        self.name = os.environ.get(AGENT_VAR, "")  # one agent of a swarm: its own logs
        self.log_dir = self.root / ".autorl" / "loop" / self.name
        self.log_path = self.root / ".autorl" / (f"loop-{self.name}.log" if self.name else "loop.log")
        self.start_trials = count_trials(self.ledger)
        self.keeps_confirmed = count_keeps(self.ledger)  # keeps counted at the last confirmation
        self.signalled = ""  # the name of the signal that stops the loop
        self.limit_at: float | None = None  # when the trial limit was reached while the agent ran

    def log(self, msg: str) -> None:
        line = f"{datetime.now().isoformat(timespec='seconds')} {msg}"
        print(f"[loop] {msg}", flush=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a") as f:
            f.write(line + "\n")

    def new_trials(self) -> int:
        return count_trials(self.ledger) - self.start_trials

    def stop_reason(self) -> str | None:
        if self.signalled:
            return f"{self.signalled} (the loop was told to stop)"
        if (self.root / "STOP").exists():
            return "STOP file"
        if problem := ledger_problem(self.ledger):
            return f"results.tsv cannot take another trial ({problem})"
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return "time limit"
        if self.max_trials is not None and self.new_trials() >= self.max_trials:
            return f"{TRIAL_LIMIT} ({self.max_trials})"
        return None

    def _invoke(self, n: int, command: str, prompt: str) -> tuple[int | None, str | None]:
        """Run the agent once; returns (exit code or None if stopped, stop reason)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        out_path = self.log_dir / f"{n:04d}.log"
        env = {**os.environ, "AUTORL_PROMPT": prompt, "AUTORL_LOOP_INVOCATION": str(n)}
        with open(out_path, "w") as out:
            out.write(f"$ {command}\n")
            out.flush()
            # Own process group: a limit or STOP ends the agent and everything it started.
            proc = subprocess.Popen(
                command,
                shell=True,
                cwd=self.root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            while True:
                try:
                    return proc.wait(timeout=POLL_S), None
                except subprocess.TimeoutExpired:
                    reason = self.stop_reason()
                    if reason and not self.marking(reason):
                        end_group(proc, GRACE_S)
                        return None, reason

    def pending(self) -> list[LedgerRow]:
        """This agent's new trials still `pending` (no `autorl mark` yet)."""
        try:
            new = self.ledger.rows()[self.start_trials :]
        except LedgerError:
            return []
        return [r for r in new if r.decision == "pending" and (not self.name or r.agent == self.name)]

    def marking(self, reason: str) -> bool:
        """Whether the agent, at the trial limit, still marks the trials it ran (its trial counted, its mark
        not yet made): it goes on until none of its measured trials is pending, at most MARK_GRACE_S. Any
        other reason to stop ends it at once."""
        if not reason.startswith(TRIAL_LIMIT):
            return False
        self.limit_at = self.limit_at or time.monotonic()
        if time.monotonic() - self.limit_at > MARK_GRACE_S:
            return False
        return any(r.status == "ok" for r in self.pending())

    def confirm(self, why: str) -> None:
        """`autorl confirm` of the current best kept trial (its own process; output in the loop's log dir)."""
        self.keeps_confirmed = count_keeps(self.ledger)
        code = run_confirm(
            self.root, self.confirm_command(), self.log_dir, lambda m: self.log(f"confirm ({why}): {m}")
        )
        self.log(f"confirm: exit {code}")

    def confirm_command(self) -> list[str]:
        """The `autorl` arguments of the loop's confirmation: at the trial's budget, or --confirm-factor's."""
        return ["confirm", *(["--factor", f"{self.confirm_factor:g}"] if self.confirm_factor else [])]

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.signalled = signal.Signals(signum).name

    def run(self) -> int:
        """The loop; SIGINT or SIGTERM stops it as a limit does: its agent's process group is ended (SIGTERM,
        SIGKILL after GRACE_S: a running trial records an `interrupted` row), nothing of it is left running.
        Exit 0, or 128 + the signal."""
        signals = (signal.SIGINT, signal.SIGTERM)
        main = threading.current_thread() is threading.main_thread()
        previous = {s: signal.signal(s, self._on_signal) for s in signals} if main else {}
        try:
            code = self._run()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        return 128 + signal.Signals[self.signalled] if self.signalled else code

    def _run(self) -> int:
        prompt = loop_prompt(self.root)
        if self.confirm_every:  # one owner of the periodic confirms: the loop (program.md)
            prompt += (
                f" This loop runs `autorl {' '.join(self.confirm_command())}` itself after every "
                f"{self.confirm_every} keeps and at the end: do not run it yourself."
            )
        if self.name:  # `autorl swarm`: other agents share the ledger
            prompt += (
                f" You are {self.name}, one of several agents on this ledger (autorl swarm): `autorl status` "
                "shows their trials in flight (never start the same idea) and the best kept config, whoever "
                "kept it (build on it as its line says); mark your own trials with --run <run_id>."
            )
            if every := os.environ.get(SWARM_CONFIRMS_VAR):  # the swarm owns the confirms, not its loops
                prompt += (
                    f" The swarm runs `autorl confirm` itself after every {every} keeps of all agents and at "
                    "the end: do not run it yourself."
                )
        command = build_command(self.agent, prompt)
        limits = f"{self.hours:g} h" if self.hours else "no time limit"
        self.log(f"start: agent {self.agent!r}; {limits}; max trials {self.max_trials or 'none'}")
        n, fast_exits = 0, 0
        while True:
            reason = self.stop_reason()
            if reason:
                pending = ", ".join(r.run_id for r in self.pending())
                whose = " (all agents')" if self.name else ""
                self.log(
                    f"stop: {reason}; {self.new_trials()} new trials{whose}; {n} invocations"
                    + (f"; not marked: {pending} (autorl mark)" if pending else "")
                )
                if self.confirm_every and count_keeps(self.ledger) > self.keeps_confirmed:
                    self.confirm("the loop ended")
                return 0
            n += 1
            before, started = self.new_trials(), time.monotonic()
            self.log(f"invocation {n}: start (output: {self.log_dir / f'{n:04d}.log'})")
            code, reason = self._invoke(n, command, prompt)
            took, made = time.monotonic() - started, self.new_trials() - before
            self.log(
                f"invocation {n}: "
                + (f"exit {code}" if reason is None else f"stopped ({reason})")
                + f" after {took:.0f} s, {made} new trials"
            )
            if reason is None and took < FAST_EXIT_S and made == 0:
                fast_exits += 1
                if fast_exits >= MAX_FAST_EXITS:
                    self.log(
                        f"stop: the agent exited {fast_exits} times in a row within {FAST_EXIT_S:.0f} s "
                        f"without a trial; check the command and {self.log_dir / f'{n:04d}.log'}"
                    )
                    return 1
                time.sleep(
                    min(BACKOFF_S * 2 ** (fast_exits - 1), 60.0)
                )  # back off before retrying a failing command
            else:
                fast_exits = 0
            if self.confirm_every and count_keeps(self.ledger) - self.keeps_confirmed >= self.confirm_every:
                self.confirm(f"{self.confirm_every} new keeps")


def main(
    agent: str,
    hours: float | None = None,
    max_trials: int | None = None,
    confirm_every: int | None = None,
    confirm_factor: float | None = None,
) -> int:
    root = paths.repo_root()
    if confirm_factor is not None and not confirm_every:
        print("error: --confirm-factor says how the loop confirms: give --confirm-every K", file=sys.stderr)
        return 2
    try:
        from autorl.io.harness import dirty_harness_files  # the runner's check: the same files, same rule
    except ImportError:  # pragma: no cover - the harness module ships with the package
        dirty = []
    else:
        dirty = dirty_harness_files(root)
    if dirty:
        print(
            "error: the harness differs from the last commit; the loop will not start an agent on it:\n  "
            + "\n  ".join(dirty)
            + "\ncommit or revert these files first",
            file=sys.stderr,
        )
        return 2
    if (root / "STOP").exists():
        print(f"error: {root / 'STOP'} exists; remove it to start the loop", file=sys.stderr)
        return 2
    if problem := ledger_problem(Ledger(paths.results_file())):
        print(
            f"error: run.py would refuse every trial, so no agent is started:\n{problem}",
            file=sys.stderr,
        )
        return 2
    return Loop(agent, hours, max_trials, root, confirm_every, confirm_factor).run()
