"""`autorl tune`: the non-LLM reference tuner (Optuna TPE over train.toml keys).

Each Optuna trial writes its values into the config with tomlkit (comments, order and layout stay), runs the
same runner as any trial (`python run.py --description "tune: ..."`, a subprocess: budget, eval, statistics
and the results.tsv row are the runner's), reads eval_score and verdict from the trial's
runs/<id>/result.json (the row it recorded; its output goes to .autorl/tune/trial-N.log, never to a pipe
that could fill up and block it), and marks the row like the agent protocol does (keep on `verdict:
improved` or `baseline`, else discard; crash: crash). The first trial re-runs the current config (its values
that lie in the space): the baseline on a fresh ledger, otherwise one more repeat for the noise floor. At
the end the config holds the best trial of this session with `verdict: improved`, or the original config
when none improved. Interrupted (Ctrl-C), the original config is restored.

When the machine has more slots than one trial's seeds need (`--parallel-trials auto`, the default), several
candidates run at once (Optuna's ask/tell), each run.py pinned to its own share of the cores and writing its
values into its own copy of the config under .autorl/tune/.

space.toml (one table per parameter; validated like train.toml, each key's meaning in `ParamSpec`):
    [lr]
    key = "trainer.optim.lr"       # dotted key in the config
    low = 1e-6                     # float/int range ...
    high = 1e-3
    log = true
    [group_size]
    key = "orchestrator.group_size"
    choices = [4, 8, 16]           # ... or categorical
    [batch_size]
    key = "orchestrator.batch_size"
    choices = [16, 32, 64]
    multiple_of = "group_size"     # rounded up to a multiple of that parameter (batch_size % group_size == 0)
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import optuna
import tomlkit
from pydantic import BaseModel, ConfigDict, Field, PlainValidator, model_validator
from tomlkit.items import Table

from autorl.engine.cost import aborted
from autorl.engine.track import get_track
from autorl.io import atomic, paths
from autorl.io.machine import own_cpu_ids
from autorl.io.tomlcheck import ConfigError, FieldProblem, load_toml, toml_type
from autorl.record.ledger import Ledger, LedgerError
from autorl.record.row import LedgerRow

SUMMARY_LINE = re.compile(r"^([A-Za-z_][\w/.\-]*): (.*)$")


class SpaceError(Exception):
    """space.toml is not a search space (one problem a line, `space.toml:line: ...`): exit 2."""


def _number(value: Any) -> int | float:
    """A TOML integer or float, kept as written (integers make an integer range); finite."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"must be a number, not {toml_type(value)}")
    if not math.isfinite(value):
        raise ValueError("must be finite")
    return value


Number = Annotated[int | float, PlainValidator(_number)]


class ParamSpec(BaseModel):
    """One table of space.toml: the values one parameter takes and the config key they go to."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, use_attribute_docstrings=True)

    key: str = Field(min_length=1)
    """The dotted config key the value is written to (`trainer.optim.lr`); tomlkit keeps the file's layout."""
    low: Number | None = None
    """Lower end of a numeric range (an integer range when `low` and `high` are both integers)."""
    high: Number | None = None
    """Upper end of the range."""
    log: bool = False
    """Sample the range on a log scale (needs `low > 0`)."""
    step: int | None = Field(None, ge=1)
    """Spacing of the values of an integer range."""
    choices: list[int | float | str | bool] | None = Field(None, min_length=1)
    """The values to choose from, instead of a range."""
    multiple_of: str | None = None
    """Another parameter that must divide this one: the value is rounded up to a multiple of it."""

    @model_validator(mode="before")
    @classmethod
    def _has_key(cls, data: Any) -> Any:
        if isinstance(data, dict) and "key" not in data:
            raise FieldProblem("", "needs a `key` (the dotted key in the config)")
        return data

    @model_validator(mode="after")
    def _one_kind(self) -> ParamSpec:
        ranged = self.low is not None or self.high is not None
        if self.choices is not None and ranged:
            raise FieldProblem("choices", "or `low` and `high`, not both")
        if self.choices is None:
            if self.low is None or self.high is None:
                raise FieldProblem("", "needs `choices` or `low` and `high`")
            if not self.low < self.high:
                raise FieldProblem("low", f"needs low < high (got {self.low} and {self.high})")
            if self.log and self.low <= 0:
                raise FieldProblem("low", "needs low > 0 for a log range (log = true)")
        if self.step is not None and self.kind != "int":
            raise FieldProblem("step", "is for an integer range (`low` and `high` both integers)")
        return self

    @property
    def kind(self) -> str:
        if self.choices is not None:
            return "categorical"
        return "int" if isinstance(self.low, int) and isinstance(self.high, int) else "float"


class SpaceFile(BaseModel):
    """space.toml: one table per parameter, named as the parameter."""

    model_config = ConfigDict(extra="allow", strict=True)
    __pydantic_extra__: dict[str, ParamSpec] = Field(init=False)

    @model_validator(mode="after")
    def _multiples_known(self) -> SpaceFile:
        params = self.model_extra or {}
        for name, spec in params.items():
            if spec.multiple_of is not None and spec.multiple_of not in params:
                raise FieldProblem(f"{name}.multiple_of", f"names unknown parameter {spec.multiple_of!r}")
        return self


def _space_hint(key: str) -> str | None:
    """Unknown keys in a parameter table: the nearest one and every key a table takes."""
    name = key.rsplit(".", 1)[-1]
    known = list(ParamSpec.model_fields)
    near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    guess = f"did you mean `{near[0]}`? " if near else ""
    return f"{guess}a parameter table takes {', '.join(f'`{k}`' for k in known)}"


@dataclass
class Param:
    name: str
    key: str
    kind: str  # float | int | categorical
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: int | None = None
    choices: list[Any] = field(default_factory=list)
    multiple_of: str | None = None

    @property
    def bounds(self) -> tuple[float, float]:
        """(low, high) of a range parameter (its validation made sure both are there)."""
        assert self.low is not None and self.high is not None, "a categorical parameter has no range"
        return self.low, self.high


def load_space(path: Path) -> list[Param]:
    """Read and validate space.toml like every config (autorl.io.tomlcheck.load_toml): unknown keys, types and
    ranges are SpaceError lines `space.toml:line: ...` naming the parameter."""
    try:
        _, _, model = load_toml(Path(path), SpaceFile, {}, hint=_space_hint)
    except ConfigError as exc:
        raise SpaceError(str(exc)) from None
    return [
        Param(name, p.key, p.kind, p.low, p.high, p.log, p.step, list(p.choices or []), p.multiple_of)
        for name, p in (model.model_extra or {}).items()
    ]


def check_keys(params: list[Param], space: Path, config: Path, track: str) -> None:
    """Every parameter's key is a key of the track's config (its schema's, defaults filled in): a space of
    another track's keys is refused before any trial is run (SpaceError). A config its schema refuses is
    left to the first trial to report."""
    the_track = get_track(track)
    try:
        keys = the_track.config_keys(config)
    except ConfigError:
        return
    if unknown := [p for p in params if p.key not in keys]:
        raise SpaceError(
            "\n".join(
                f"{space.name}: [{p.name}] key {p.key!r} is not a key of {config.name} ({track} track)"
                for p in unknown
            )
            + f"\n(the {track} track's space: {the_track.default_space}; "
            "`uv run run.py --explain KEY`)"
        )


def suggest(trial: optuna.Trial, params: list[Param]) -> dict[str, Any]:
    """Values for one trial; `multiple_of` constraints are enforced by rounding up."""
    values: dict[str, Any] = {}
    for p in params:
        if p.kind == "categorical":
            values[p.name] = trial.suggest_categorical(p.name, p.choices)
        elif p.kind == "int":
            low, high = p.bounds
            values[p.name] = trial.suggest_int(p.name, int(low), int(high), step=p.step or 1, log=p.log)
        else:
            values[p.name] = trial.suggest_float(p.name, *map(float, p.bounds), log=p.log)
    for p in params:
        if p.multiple_of is not None:
            m = int(values[p.multiple_of])
            values[p.name] = int(math.ceil(int(values[p.name]) / m) * m)
    return values


def set_key(doc: tomlkit.TOMLDocument, dotted: str, value: Any) -> list[Table]:
    """Set `a.b.c = value`, creating tables that do not exist yet (appended); returns the tables created."""
    parts = dotted.split(".")
    node: Any = doc
    created = []
    for part in parts[:-1]:
        if part not in node:
            node[part] = tomlkit.table()
            created.append(node[part])
        node = node[part]
        if not isinstance(node, (Table, dict)):
            raise SpaceError(f"cannot set {dotted}: {part} is not a table")
    node[parts[-1]] = value
    return created


def render(original: str, params: list[Param], values: dict[str, Any]) -> str:
    """The original config text with the values set; floats to 4 significant digits (readable diffs)."""
    doc = tomlkit.parse(original)
    created: list[Table] = []
    for p in params:
        v = values[p.name]
        created += set_key(doc, p.key, float(f"{v:.4g}") if p.kind == "float" else v)
    for table in created:
        if any(not isinstance(v, Table) for v in table.values()):
            table.add(tomlkit.nl())  # a blank line after a new table, like a hand-written file
    return tomlkit.dumps(doc)


def current_values(text: str, params: list[Param]) -> dict[str, Any]:
    """The config's present values of the searched keys that lie inside the space."""
    data = tomllib.loads(text)
    out: dict[str, Any] = {}
    for p in params:
        node: Any = data
        for part in p.key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if p.kind == "categorical" and node in p.choices:
            out[p.name] = node
        elif p.kind != "categorical" and isinstance(node, (int, float)) and not isinstance(node, bool):
            low, high = p.bounds
            if low <= node <= high:
                out[p.name] = node
    return out


def parse_summary(text: str) -> dict[str, str]:
    """`key: value` lines after the last `---` line of run.py's output."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == "---"]
    out: dict[str, str] = {}
    for line in lines[starts[-1] + 1 :] if starts else []:
        m = SUMMARY_LINE.match(line.strip())
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def trial_result(log_text: str) -> LedgerRow | None:
    """The ledger row a trial saved in its runs/<id>/result.json, found through the `run_dir` its summary
    names; None when it recorded nothing (an invalid config, a process killed before its summary)."""
    run_dir = parse_summary(log_text).get("run_dir")
    if not run_dir:
        return None
    try:
        row = json.loads((paths.records_root() / run_dir / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return LedgerRow.from_json(row) if isinstance(row, dict) else None


def describe(values: dict[str, Any]) -> str:
    return "tune: " + " ".join(
        f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items()
    )


def cpu_groups(n: int) -> list[tuple[int, ...]]:
    """This process's cores split into n disjoint groups, one per candidate running at once."""
    cores = own_cpu_ids()
    if n <= 1 or len(cores) < n:
        return [()] * max(n, 1)
    size = len(cores) // n
    return [tuple(cores[i * size : (i + 1) * size]) for i in range(n)]


def auto_parallel_trials(track: str, config: Path, seeds: int | None) -> int:
    """Candidates side by side when the machine has more slots than one trial's seeds need."""
    from autorl.engine.slots import current_machine

    tr = get_track(track)
    machine = current_machine()
    try:
        name = tr.backend_name("auto", machine)
        cfg = tr.load_config(config, name, None)
        slots = tr.make_backend(name).plan_slots(cfg, machine)
    except Exception:  # an invalid config is reported by its first trial
        return 1
    return max(1, len(slots) // (seeds or tr.default_seeds))


@dataclass
class Running:
    n: int
    trial: Any  # optuna.trial.Trial
    values: dict[str, Any]
    desc: str
    proc: subprocess.Popen[bytes]
    group: tuple[int, ...]  # the cores it runs on (() = not pinned)
    log: Path  # the run's stdout and stderr (a file: a pipe nobody reads would block a talkative trial)


def main(
    trials: int,
    space: Path | None,
    budget: float | None,
    config: Path | None,
    track: str,
    seed: int,
    parallel_trials: int | None,
) -> int:
    """`autorl tune` (autorl.commands.cli_options.TuneOptions): a bad space.toml is exit 2 with its reason."""
    try:
        return run_tune(
            trials, space, budget, config, track=track, seed=seed, parallel_trials=parallel_trials
        )
    except SpaceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run_tune(
    trials: int,
    space: Path | None = None,
    budget: float | None = None,
    config: Path | None = None,
    track: str = "llm",
    seed: int = 0,
    runner: list[str] | None = None,
    seeds: int | None = None,
    parallel_trials: int | None = 1,
) -> int:
    """`parallel_trials`: candidates run at once (None: as many as the machine's slots hold, each trial's
    seeds side by side within its own share of the cores). `seeds`: each trial's (None: the track's);
    `runner`: the command that runs a trial (run.py; tests give a double)."""
    root = paths.repo_root()
    the_track = get_track(track)
    space = space or root / the_track.default_space
    config = config or root / the_track.default_config
    params = load_space(space)
    check_keys(params, space, config, track)
    k = parallel_trials or auto_parallel_trials(track, config, seeds)
    runner = runner or [sys.executable, str(root / "run.py")]
    # after each trial's own flags; a --budget of its own is tune's context (its first trial the baseline)
    tail = ["--budget", f"{budget:g}", "--new-context"] if budget is not None else []
    tail += ["--seeds", str(seeds)] if seeds is not None else []
    tuner = _Tuner(params, config, (runner, track, tail), trials, k, seed)
    print(
        f"[tune] {trials} trials over {len(params)} parameters from {space}; config {config}; {k} at a time",
        flush=True,
    )
    tuner.run(cpu_groups(k))
    return 0


class _Tuner:
    """One `autorl tune` session: asks Optuna for candidates, runs each through run.py, tells the scores."""

    def __init__(
        self,
        params: list[Param],
        config: Path,
        cmd: tuple[list[str], str, list[str]],  # the runner, the track, the flags after each trial's own
        trials: int,
        k: int,
        seed: int,
    ):
        self.params, self.config, self.cmd, self.trials, self.k = params, config, cmd, trials, k
        self.original = config.read_text()
        self.work = paths.state_dir() / "tune"
        self.work.mkdir(parents=True, exist_ok=True)
        self.ledger = Ledger(paths.results_file())
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
        start = current_values(self.original, params)
        if start:  # the first trial re-runs the current config: a baseline, or one more noise-floor repeat
            self.study.enqueue_trial(start)
        self.best: tuple[float, str, dict[str, Any]] | None = None  # best kept: (score, run_id, values)

    def run(self, groups: list[tuple[int, ...]]) -> None:
        """Every trial, k at a time on their core groups; the config holds the best improved trial at the
        end (the original when none improved, or when interrupted)."""
        running: list[Running] = []
        free = list(groups)
        try:
            n = 0
            while n < self.trials or running:
                while n < self.trials and free:
                    running.append(self.launch(n, free.pop(0)))
                    n += 1
                done = next((r for r in running if r.proc.poll() is not None), None)
                if done is None:
                    time.sleep(0.2)
                    continue
                running.remove(done)
                free.append(done.group)
                self.finish(done)
        except BaseException:
            for r in running:
                r.proc.terminate()
            atomic.write_text(self.config, self.original)  # never leave a half-tuned config behind
            raise
        self.conclude()

    def launch(self, n: int, group: tuple[int, ...]) -> Running:
        trial = self.study.ask()
        values = suggest(trial, self.params)
        config = self.config
        candidate = self.work / f"candidate-{n}{config.suffix}" if self.k > 1 else config
        atomic.write_text(candidate, render(self.original, self.params, values))
        desc = describe(values)
        log = self.work / f"trial-{n + 1}.log"
        runner, track, tail = self.cmd
        print(f"[tune] trial {n + 1}/{self.trials}: {desc} (output: {log})", flush=True)
        with open(log, "wb") as out:  # the child holds its own copy of the descriptor
            proc = subprocess.Popen(
                [*runner, "--config", str(candidate), "--track", track, "--description", desc, *tail],
                cwd=paths.repo_root(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=(lambda: os.sched_setaffinity(0, group)) if group else None,
            )
        return Running(n, trial, values, desc, proc, group, log)

    def finish(self, r: Running) -> None:
        """Tell Optuna the trial's score (from its result.json), mark its row keep/discard/crash."""
        r.proc.wait()
        text = r.log.read_text(encoding="utf-8", errors="replace")
        row = trial_result(text)
        if r.proc.returncode == 2 or row is None:  # invalid config, or nothing recorded
            tail = text.strip().splitlines()[-3:]
            print(f"[tune]   no result (exit {r.proc.returncode}): {' | '.join(tail)}", flush=True)
            self.study.tell(r.trial, state=optuna.trial.TrialState.FAIL)
            return
        score, status, verdict, run_id = row.eval_score, row.status or "crash", row.verdict, row.run_id
        if status == "ok" and aborted(row):
            self.study.tell(r.trial, state=optuna.trial.TrialState.PRUNED)  # the early abort: no full score
            decision = "discard"
        elif status != "ok" or score is None:
            self.study.tell(r.trial, state=optuna.trial.TrialState.FAIL)
            decision = "crash"
        else:
            self.study.tell(r.trial, score)
            decision = "keep" if verdict in ("improved", "baseline") else "discard"
        _mark(self.ledger, decision, run_id, f"tune trial {r.n + 1}: verdict {verdict or '-'}")
        print(
            f"[tune]   trial {r.n + 1}: eval_score {'-' if score is None else f'{score:.4f}'} "
            f"verdict {verdict or '-'} "
            f"status {status} -> {decision} ({run_id})",
            flush=True,
        )
        if verdict == "improved" and score is not None and (self.best is None or score > self.best[0]):
            self.best = (score, run_id, r.values)

    def conclude(self) -> None:
        if self.best is None:
            atomic.write_text(self.config, self.original)
            print("[tune] no trial beat the reference (verdict improved): the original config is restored")
            return
        score, run_id, values = self.best
        atomic.write_text(self.config, render(self.original, self.params, values))
        print(f"[tune] best improved trial {run_id}: eval_score {score:.4f}; {self.config.name} now holds:")
        print("       " + describe(values))
        print(  # its trials ran on configs no commit holds: the next agent's revert would drop the keep
            f'[tune] commit it before the next trial: git commit -am "tune: {run_id}" (a later '
            "`git reset --hard HEAD~1` would drop it otherwise)"
        )


def _mark(ledger: Ledger, decision: str, run_id: str, lesson: str) -> None:
    if not run_id:
        return
    try:
        ledger.mark(decision, run_id=run_id, lesson=lesson)
    except LedgerError as exc:
        print(f"[tune]   could not mark {run_id}: {exc}", flush=True)
