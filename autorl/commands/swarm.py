"""`autorl swarm --agents N --agent CMD`: several agents at once on one ledger, each in its own git worktree.

Agent i (`agent-<i>`) works in a git worktree, `.autorl/swarm/agent-<i>/`, on its own branch
`<branch>-agent-<i>` made from this checkout's HEAD: its config edits and commits are its own. Everything
recorded is shared: its processes run with AUTORL_RECORDS set to this checkout (one results.tsv, one runs/,
one machine file and prepared model; the worktree's `.autorl` is a link to this one's) and AUTORL_AGENT set
to its name (its rows' `agent` column, its claims, `autorl mark`'s default trial). The swarm runs `autorl
loop` in each worktree with the agent command and the limits; what keeps the verdicts honest across agents:

- one machine's slots are shared, not oversubscribed: a seed holds its cores and GPU share while it runs
  (autorl/engine/lease.py), so an agent's seed waits for another agent's and says how long;
- no config trains twice at once: a trial claims its exact config in its context (autorl/record/claims.py)
  and a second one is refused with the run id that has it; `autorl status` lists the trials in flight;
- every trial is compared with the best kept trial of the context when its comparison is made (whoever kept
  it), and `autorl status` shows every agent's comparisons, keeps, those chance alone explains and those
  confirmed on the sealed test split. `--confirm-every K` confirms the swarm's best once per K new keeps (the
  swarm does it, its agents' prompts say so; their loops do not).

A STOP file in this checkout, `--hours`, `--max-trials` (new rows, all agents') or SIGINT/SIGTERM stop every
agent the way `autorl loop` stops one (its trial records an `interrupted` row); a second signal ends them at
once. The loops' output is in `.autorl/swarm/agent-<i>.log`. At the end: the trials and keeps per agent and
the swarm's comparisons, keeps, keeps expected by chance and keeps confirmed.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from autorl.commands.loop import SWARM_CONFIRMS_VAR, count_keeps, count_trials, ledger_problem, run_confirm
from autorl.engine.process import die_with_parent
from autorl.io import paths
from autorl.io.harness import dirty_harness_files, git, harness_hash, is_git_repo
from autorl.record import throughput
from autorl.record.ledger import Ledger
from autorl.record.row import AGENT_VAR

POLL_S = 1.0  # how often the swarm looks at its agents, the STOP file and the keeps
STOP_GRACE_S = 120.0  # a loop ends its agent within 60 s (autorl/commands/loop.py): then the next step


def say(msg: str) -> None:
    print(f"[swarm] {msg}", flush=True)


@dataclass
class Agent:
    """One agent: its name, its worktree, its loop's log and process."""

    name: str
    worktree: Path
    log: Path
    proc: subprocess.Popen | None = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def swarm_dir() -> Path:
    return paths.state_dir() / "swarm"


def worktree(root: Path, name: str) -> Path:
    """Agent `name`'s worktree: made from HEAD on branch `<branch>-<name>` (the branch kept from an earlier
    swarm when there is one), its `.autorl` a link to the records' state. RuntimeError when an existing one
    runs another harness."""
    wt = swarm_dir() / name
    if not (wt / ".git").exists():
        branch = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
        own = f"{'swarm' if branch == 'HEAD' else branch}-{name}"
        known = git(root, "branch", "--list", own).strip()
        where = [str(wt), own] if known else ["-b", own, str(wt), "HEAD"]
        git(root, "worktree", "add", "--quiet", *where)
    if harness_hash(wt) != harness_hash(root):
        theirs = git(wt, "rev-parse", "--abbrev-ref", "HEAD").strip()
        raise RuntimeError(
            f"{wt} (branch {theirs}) runs another harness than this "
            f"checkout: merge this checkout's commit into it, or remove it (git worktree remove --force {wt})"
        )
    link = wt / ".autorl"
    if not link.exists() and not link.is_symlink():
        link.symlink_to(paths.state_dir(), target_is_directory=True)
    return wt


def agent_env(agent: Agent, confirm_every: int | None = None) -> dict[str, str]:
    """The agent's environment: its worktree as the repo root, this checkout's records, its name (and, when
    the swarm confirms, how often: its loop tells the agent not to); uv runs in this checkout's environment
    without syncing it (a worktree has no .venv of its own)."""
    env = {
        **os.environ,
        "AUTORL_ROOT": str(agent.worktree),
        paths.RECORDS_VAR: str(paths.records_root()),
        AGENT_VAR: agent.name,
    }
    env.pop(SWARM_CONFIRMS_VAR, None)
    if confirm_every:
        env[SWARM_CONFIRMS_VAR] = str(confirm_every)
    if sys.prefix != sys.base_prefix:  # running in a virtual environment: the agents' `uv run` uses it
        env["UV_PROJECT_ENVIRONMENT"] = sys.prefix
        env["UV_NO_SYNC"] = "1"
    return env


def problem(root: Path) -> str | None:
    """Why the swarm cannot start (nothing is started then)."""
    if not is_git_repo(root):
        return f"{root} is not a git repository: each agent needs a worktree of it"
    if dirty := dirty_harness_files(root):
        return "the harness differs from the last commit:\n  " + "\n  ".join(dirty) + "\ncommit or revert it"
    if (root / "STOP").exists():
        return f"{root / 'STOP'} exists; remove it to start the swarm"
    if (why := ledger_problem(Ledger(paths.results_file()))) is not None:
        return f"run.py would refuse every trial:\n{why}"
    return None


class Swarm:
    def __init__(
        self,
        root: Path,
        n: int,
        command: str,
        hours: float | None,
        max_trials: int | None,
        confirm_every: int | None,
    ) -> None:
        self.root, self.command, self.hours, self.max_trials = root, command, hours, max_trials
        self.confirm_every = confirm_every
        self.ledger = Ledger(paths.results_file())
        self.start_trials = count_trials(self.ledger)
        self.keeps_confirmed = count_keeps(self.ledger)
        names = [f"agent-{i}" for i in range(1, n + 1)]
        self.agents = [Agent(a, swarm_dir() / a, swarm_dir() / f"{a}.log") for a in names]
        self.signals = 0
        self.started = time.time()

    def _signal(self, signum: int, frame: Any) -> None:
        self.signals += 1
        say(f"{signal.Signals(signum).name}: stopping every agent" + (" now" if self.signals > 1 else ""))

    def start(self) -> None:
        for a in self.agents:  # every worktree first: one that cannot be used starts no agent
            worktree(self.root, a.name)
            (a.worktree / "STOP").unlink(missing_ok=True)
        for a in self.agents:
            argv = [sys.executable, "-m", "autorl.commands.cli", "loop", "--agent", self.command]
            argv += ["--hours", f"{self.hours:g}"] if self.hours else []
            argv += ["--max-trials", str(self.max_trials)] if self.max_trials else []
            with open(a.log, "a") as log:
                log.write(f"--- {datetime.now().isoformat(timespec='seconds')} swarm start\n")
                log.flush()
                a.proc = subprocess.Popen(
                    argv,
                    cwd=a.worktree,
                    env=agent_env(a, self.confirm_every),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # a terminal's Ctrl-C reaches the swarm, which stops each loop
                    preexec_fn=functools.partial(die_with_parent, signal.SIGTERM),  # the swarm killed: too
                )
            say(f"{a.name}: worktree {a.worktree}, log {a.log}")

    def signal_all(self, sig: int) -> None:
        for a in self.agents:
            if a.running:
                assert a.proc is not None
                a.proc.send_signal(sig)

    def stop_all(self) -> None:
        """Each loop's STOP file: it ends its agent as `autorl loop` does (the trial records its row)."""
        for a in self.agents:
            if a.running:
                (a.worktree / "STOP").touch()

    def run(self) -> int:
        previous = {s: signal.signal(s, self._signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.start()
            self._watch()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            self.signal_all(signal.SIGTERM)  # only when the swarm itself failed: each loop ends its agent
            for a in self.agents:
                if a.proc is not None:
                    try:
                        a.proc.wait(timeout=STOP_GRACE_S)
                    except subprocess.TimeoutExpired:
                        a.proc.kill()
                        a.proc.wait()
                (a.worktree / "STOP").unlink(missing_ok=True)
        if self.confirm_every and count_keeps(self.ledger) > self.keeps_confirmed:
            self.confirm("the swarm ended")
        self.summary()
        return 0

    def _watch(self) -> None:
        told: float | None = None  # when the loops were told to stop (their STOP files)
        termed: float | None = None  # when they were sent SIGTERM (a second signal, or STOP not obeyed)
        while any(a.running for a in self.agents):
            now = time.monotonic()
            if told is None and (self.signals or (self.root / "STOP").exists()):
                say("stop: every agent's loop is told to stop (STOP in its worktree)")
                self.stop_all()
                told = now
            if termed is None and (self.signals > 1 or (told is not None and now - told > STOP_GRACE_S)):
                self.signal_all(signal.SIGTERM)  # each loop ends its agent's process group, then exits
                termed = now
            if termed is not None and now - termed > STOP_GRACE_S:
                self.signal_all(signal.SIGKILL)
            if self.confirm_every and count_keeps(self.ledger) - self.keeps_confirmed >= self.confirm_every:
                self.confirm(f"{self.confirm_every} new keeps")
            time.sleep(POLL_S)
        for a in self.agents:
            assert a.proc is not None
            say(f"{a.name}: its loop ended (exit {a.proc.returncode})")

    def confirm(self, why: str) -> None:
        """`autorl confirm` of the swarm's best kept trial, once (the loops do not confirm)."""
        self.keeps_confirmed = count_keeps(self.ledger)
        code = run_confirm(self.root, ["confirm"], swarm_dir(), lambda m: say(f"confirm ({why}): {m}"))
        say(f"confirm: exit {code}")

    def summary(self) -> None:
        from autorl.commands.status import chance_line, collect
        from autorl.record.sidetables import CONFIRMED

        rows = self.ledger.rows()
        new = rows[self.start_trials :]
        lines = {"agents": str(len(self.agents)), "trials": str(len(new))}
        if stopped := sum(r.status == "interrupted" for r in new):  # the limit or a stop came mid-trial
            lines["interrupted"] = f"{stopped} (stopped mid-trial: measured nothing, run again)"
        for a in self.agents:
            mine = [r for r in new if r.agent == a.name]
            keeps = sum(r.decision == "keep" for r in mine)
            lines[a.name] = f"{len(mine)} trials, {keeps} kept"
            if pending := [
                f"{r.run_id}{'' if r.status == 'ok' else f' ({r.status})'}"
                for r in mine
                if r.decision == "pending"
            ]:
                lines[a.name] += (
                    f", not marked: {', '.join(pending)} (autorl mark keep|discard --run <run_id>)"
                )
        lines.update(throughput.measure(new, self.started, time.time()).lines())
        st = collect(rows, confirmed=CONFIRMED.read(CONFIRMED.beside(self.ledger)))
        if "chance" in st:
            lines["context"] = chance_line(st["chance"])
        sys.stdout.write("---\n" + "".join(f"{k}: {v}\n" for k, v in lines.items()))


def main(
    agents: int,
    agent: str,
    hours: float | None = None,
    max_trials: int | None = None,
    confirm_every: int | None = None,
) -> int:
    root = paths.repo_root()
    if (why := problem(root)) is not None:
        print(f"error: {why}", file=sys.stderr)
        return 2
    swarm_dir().mkdir(parents=True, exist_ok=True)
    try:
        return Swarm(root, agents, agent, hours, max_trials, confirm_every).run()
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        detail = exc.stderr if isinstance(exc, subprocess.CalledProcessError) else ""
        print(f"error: {exc}{f': {detail.strip()}' if detail else ''}", file=sys.stderr)
        return 2
