"""The research protocol tools: mark, status, loop stop conditions, tune, report, program.md."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from autorl.commands import cli, loop, report, status, tune
from autorl.record.ledger import Ledger

REPO = Path(__file__).resolve().parent.parent
FAKE_RUN = Path(__file__).resolve().parent / "fakes" / "fake_run.py"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    return tmp_path


def add(ledger: Ledger, run_id: str, score: float | None, decision: str = "pending", **kw) -> None:
    row = {
        "run_id": run_id,
        "commit": "c0ffee1",
        "track": "llm",
        "eval_score": score,
        "eval_ci_low": None if score is None else score - 0.03,
        "eval_ci_high": None if score is None else score + 0.03,
        "status": "ok" if score is not None else "crash",
        "decision": decision,
        "config_hash": run_id,
        "harness_hash": "h",
        "eval_hash": "e",
        "description": f"try {run_id}",
    }
    row.update(kw)
    ledger.append(row)


# ---- mark and status ----------------------------------------------------------------------------------


def test_mark_cli(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = Ledger(root / "results.tsv")
    add(ledger, "r1", 0.5, verdict="baseline")
    add(ledger, "r2", 0.52, verdict="inconclusive")
    assert cli.main(["mark", "discard", "--lesson", "no gain\tat all"]) == 0
    assert cli.main(["mark", "keep", "--run", "r1", "--lesson", "baseline"]) == 0
    out = capsys.readouterr()
    assert "r2: decision discard; lesson: no gain at all" in out.out
    rows = ledger.rows()
    assert [(r.decision, r.lesson) for r in rows] == [
        ("keep", "baseline"),
        ("discard", "no gain at all"),
    ]
    assert cli.main(["mark", "keep", "--run", "r2", "--reason", "re-read the log"]) == 0
    assert "program.md keeps only improved" in capsys.readouterr().err  # kept an inconclusive trial
    assert cli.main(["mark", "keep", "--run", "missing"]) == 2
    assert "no trial with run id" in capsys.readouterr().err


def test_status_is_bounded_and_counts(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = Ledger(root / "results.tsv")
    add(ledger, "old-eval", 0.9, "keep", eval_hash="other")  # another eval set: not shown
    add(ledger, "base", 0.40, "keep", config_hash="B", verdict="baseline")
    add(ledger, "base2", 0.46, "discard", config_hash="B")  # the repeat: noise floor df 1
    add(ledger, "k1", 0.55, "keep", verdict="improved", lesson="lr 3e-6 helps")
    add(ledger, "c1", None, "crash", lesson="OOM")
    for i in range(40):
        add(ledger, f"d{i:02d}", 0.5, "discard", description="x" * 300)
    add(ledger, "p1", 0.56, "pending")
    st = status.collect(ledger.rows(), last=8)
    assert st["best"]["run_id"] == "k1" and st["best_is_kept"]
    assert st["context"]["trials"] == 45 and st["context"]["other_trials"] == 1
    # neither the baseline (kept by design) nor its repeat base2 is an idea decided
    assert st["keep_rate"] == {"kept": 1, "decided": 41}
    assert st["since_last_keep"] == 42 and st["not_kept_streak"] == 42
    assert st["crashes"] == 1 and st["pending"] == ["p1"]
    assert st["noise_floor"]["df"] == 1 and st["noise_floor"]["measured_sd"] == pytest.approx(0.06 / 2**0.5)
    assert [r["run_id"] for r in st["last"]][-1] == "p1" and len(st["last"]) == 8
    text = status.render(st)
    assert len(text.splitlines()) <= 30 and max(len(line) for line in text.splitlines()) < 200
    assert "k1" in text and "WARNING" in text and "diagnose" in text
    assert cli.main(["status", "--json", "--last", "100"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["last"]) == status.MAX_LAST


def test_a_diagnosis_starts_the_not_kept_count_again(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """program.md's "diagnose, don't tune": after 5 trials not kept the view warns; the agent's finding,
    written with `autorl mark` as a lesson starting `diagnosis:`, clears the warning, and 5 more trials not
    kept after it bring it back. An ordinary lesson clears nothing."""
    ledger = Ledger(root / "results.tsv")
    add(ledger, "base", 0.40, "keep", verdict="baseline")
    for i in range(5):
        add(ledger, f"d{i}", 0.39, "discard", lesson="no gain")
    st = status.collect(ledger.rows())
    assert st["not_kept_streak"] == 5 and "WARNING: 5 trials in a row" in status.render(st)
    assert cli.main(["mark", "discard", "--run", "d2", "--lesson", "lr 2e-4 is past the cliff"]) == 0
    assert status.collect(ledger.rows())["not_kept_streak"] == 5
    lesson = "Diagnosis: the training reward rises while the greedy eval falls"
    assert cli.main(["mark", "discard", "--run", "d3", "--lesson", lesson]) == 0
    capsys.readouterr()
    st = status.collect(ledger.rows())
    assert st["not_kept_streak"] == 1 and "WARNING" not in status.render(st)  # d4 only, after the diagnosis
    assert any(x["lesson"] == lesson for x in st["lessons"])
    for i in range(5, 9):
        add(ledger, f"d{i}", 0.39, "discard")
    st = status.collect(ledger.rows())
    assert st["not_kept_streak"] == 5 and "since the last keep or diagnosis" in status.render(st)


def test_status_before_anything_is_kept(root: Path) -> None:
    ledger = Ledger(root / "results.tsv")
    assert "no trials yet" in status.render(status.collect([]))
    add(ledger, "base", 0.40, verdict="baseline")
    st = status.collect(ledger.rows())
    assert st["best"]["run_id"] == "base" and not st["best_is_kept"]
    assert "reference (nothing kept yet" in status.render(st)
    assert "default prior" in st["noise_floor"]["text"]
    assert st["ceiling"] == "" and "note:" not in status.render(st)


def test_status_says_when_the_reference_is_at_the_top_of_the_score_range(root: Path) -> None:
    ledger = Ledger(root / "results.tsv")
    add(ledger, "base", 0.97, verdict="baseline", eval_ci_high=1.0)
    out = status.render(status.collect(ledger.rows()))
    assert "note: the reference's eval_ci reaches the top of score_range (1)" in out


# ---- loop -----------------------------------------------------------------------------------------------

# A stand-in agent: records the prompt it got, appends one trial to results.tsv, optionally sleeps/STOPs.
AGENT = """
import os, sys, time
from pathlib import Path
from autorl.record.ledger import Ledger
root = Path(os.environ["AUTORL_ROOT"])
with open(root / "prompts.txt", "a") as f:
    f.write(sys.argv[-1].replace("\\n", " ") + "\\n")
n = len(Ledger(root / "results.tsv").rows())
Ledger(root / "results.tsv").append({"run_id": f"agent-{n}", "status": "ok", "eval_score": 0.5,
                                       "track": "llm", "description": "agent trial"})
if os.environ.get("AGENT_STOP_AFTER") and n + 1 >= int(os.environ["AGENT_STOP_AFTER"]):
    (root / "STOP").write_text("")
if os.environ.get("AGENT_MARK_AFTER"):  # reads its summary, then marks (autorl mark)
    time.sleep(float(os.environ["AGENT_MARK_AFTER"]))
    Ledger(root / "results.tsv").mark("discard", run_id=f"agent-{n}", lesson="marked")
time.sleep(float(os.environ.get("AGENT_SLEEP", "0")))
"""


def agent_cmd(root: Path) -> str:
    script = root / "agent.py"
    script.write_text(AGENT)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def test_loop_stops_at_trial_limit_and_passes_the_prompt(root: Path) -> None:
    (root / "program.md").write_text("# p\n<!-- loop-prompt -->\nKeep going, agent.\n<!-- /loop-prompt -->\n")
    assert loop.main(agent_cmd(root), max_trials=3) == 0
    assert len(Ledger(root / "results.tsv").rows()) == 3
    assert (root / "prompts.txt").read_text().splitlines() == ["Keep going, agent."] * 3
    log = (root / ".autorl" / "loop.log").read_text()
    assert "stop: trial limit (3); 3 new trials; 3 invocations" in log
    assert len(list((root / ".autorl" / "loop").glob("*.log"))) == 3  # the agent's output per invocation


def test_at_the_trial_limit_the_agent_marks_its_last_trial_before_it_is_ended(root, monkeypatch) -> None:
    """The limit is reached when the agent's trial records its row, before the agent marks it: the loop lets
    it mark (here 2 s later) and ends it then (it went on to sleep, as into another trial); an agent that
    never marks is ended after MARK_GRACE_S and the stop line names the trial left pending."""
    monkeypatch.setenv("AGENT_SLEEP", "60")
    monkeypatch.setenv("AGENT_MARK_AFTER", "2")
    started = time.monotonic()
    assert loop.main(agent_cmd(root), max_trials=1) == 0
    assert time.monotonic() - started < 30
    (row,) = Ledger(root / "results.tsv").rows()
    assert row.decision == "discard"
    log = (root / ".autorl" / "loop.log").read_text()
    assert "stop: trial limit (1); 1 new trials; 1 invocations\n" in log
    monkeypatch.delenv("AGENT_MARK_AFTER")
    monkeypatch.setattr(loop, "MARK_GRACE_S", 2.0)
    assert loop.main(agent_cmd(root), max_trials=1) == 0
    assert time.monotonic() - started < 60
    first, second = Ledger(root / "results.tsv").rows()
    assert second.decision == "pending"
    log = (root / ".autorl" / "loop.log").read_text()
    assert f"1 new trials; 1 invocations; not marked: {second.run_id} (autorl mark)" in log


def test_loop_stops_on_stop_file(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_STOP_AFTER", "2")
    assert loop.main(agent_cmd(root), max_trials=50) == 0
    assert len(Ledger(root / "results.tsv").rows()) == 2
    assert "stop: STOP file" in (root / ".autorl" / "loop.log").read_text()
    assert loop.main(agent_cmd(root)) == 2  # refuses to start while STOP exists


def test_loop_time_limit_ends_a_running_agent(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_SLEEP", "60")
    started = time.monotonic()
    assert loop.main(agent_cmd(root), hours=3 / 3600) == 0  # 3 seconds
    assert time.monotonic() - started < 20
    log = (root / ".autorl" / "loop.log").read_text()
    assert "stopped (time limit)" in log and "stop: time limit" in log


def test_a_signal_to_the_loop_ends_its_agent_and_leaves_nothing(root: Path) -> None:
    """SIGTERM (a swarm's stop, a `kill`; Ctrl-C alike) to `autorl loop` stops it as a limit does: the running
    agent's process group is ended, the loop says why and exits 128 + the signal; no agent is left."""
    import os
    import signal

    import psutil

    env = {**os.environ, "AUTORL_ROOT": str(root), "AGENT_SLEEP": "60"}
    argv = [sys.executable, "-m", "autorl.commands.cli", "loop", "--agent", agent_cmd(root)]
    out = subprocess.PIPE
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while not (root / "results.tsv").exists() or not Ledger(root / "results.tsv").rows():
        assert time.monotonic() < deadline and proc.poll() is None, "the agent never ran"
        time.sleep(0.1)
    script = str(root / "agent.py")
    agents = [p for p in psutil.process_iter(["cmdline"]) if script in (p.info["cmdline"] or [])]
    assert agents  # sleeping after its trial
    proc.send_signal(signal.SIGTERM)
    said = proc.communicate(timeout=90)[0]
    assert proc.returncode == 128 + signal.SIGTERM, said
    assert "stop: SIGTERM (the loop was told to stop)" in (root / ".autorl" / "loop.log").read_text()
    gone, alive = psutil.wait_procs(agents, timeout=5)
    assert alive == []


def test_loop_gives_up_on_a_command_that_keeps_failing(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop, "MAX_FAST_EXITS", 3)
    monkeypatch.setattr(loop, "BACKOFF_S", 0.0)
    assert loop.main("exit 3") == 1
    log = (root / ".autorl" / "loop.log").read_text()
    assert log.count("exit 3 after") == 3 and "check the command" in log


def test_loop_refuses_a_dirty_harness(root: Path) -> None:
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-c", "commit.gpgsign=false"]
    (root / "autorl").mkdir()
    (root / "autorl" / "x.py").write_text("A = 1\n")
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=root, check=True)
    (root / "autorl" / "x.py").write_text("A = 2\n")
    assert loop.main("true", max_trials=1) == 2
    assert not (root / ".autorl" / "loop.log").exists()


def test_shipped_program_md_has_the_loop_prompt() -> None:
    prompt = loop.loop_prompt(REPO)
    assert prompt != loop.DEFAULT_PROMPT and "autorl status" in prompt
    assert "classic.toml" in prompt and "train.toml" in prompt  # the track's own file
    text = (REPO / "program.md").read_text()
    assert "autorl mark keep" in text and "git reset --hard HEAD~1" in text


def test_every_log_program_md_writes_in_the_checkout_is_ignored_by_git() -> None:
    """program.md redirects run.py, confirm and fidelity to files in the repo root: none shows up in
    `git status` (an untracked fidelity.log did, in a replay of 2026-12-03)."""
    logs = sorted(set(re.findall(r"> ([\w.-]+\.log) 2>&1", (REPO / "program.md").read_text())))
    assert {"run.log", "confirm.log", "fidelity.log"} <= set(logs)
    ignored = subprocess.run(["git", "check-ignore", *logs], cwd=REPO, capture_output=True, text=True)
    assert sorted(ignored.stdout.split()) == logs


def test_program_md_grep_shows_every_line_its_decision_rules_act_on() -> None:
    """The grep of program.md's loop (step 5), run as grep -E would, keeps each summary line that step 6
    decides on (a refusal's `error`, the verdict, the status, a `note`, the early stop, the seeds a delta
    needs, every eval env and health flag) and drops the rest."""
    text = (REPO / "program.md").read_text()
    (pattern,) = re.findall(r'grep -E "(\^\([^"]+\):)" run\.log', text)
    shown = [
        "error: the fixed harness differs from the last commit",
        "eval_score: 0.5500",
        "delta: +0.0300",
        "p_value: 0.0210",
        "levels: improved needs p_value < 0.04522, worse needs 1 - p_value < 0.001667 (look 6 of 6)",
        "verdict: inconclusive",
        "seeds_needed: 9 candidate seeds for delta +0.0300",
        "stopped_early: after 1/6 seeds: delta -0.0100 <= 0",
        "note: the reference's eval_ci reaches the top of score_range (1): no improvement is possible",
        "status: interrupted",
        "eval/arithmetic: 0.3500",
        "health/reward_collapse: reward collapsed on 1/6 seeds",
        "health/stops_itself: all 6 seeds ended training on their own after 85 s at most",
    ]
    assert [line for line in shown if not re.match(pattern, line)] == []
    assert not re.match(pattern, "training_seconds: 90.0") and not re.match(pattern, "run_dir: runs/x")


def test_the_loop_that_confirms_tells_the_agent_it_does(root: Path) -> None:
    """One owner of the periodic confirms: with --confirm-every the prompt says the loop confirms."""
    (root / "program.md").write_text("# p\n<!-- loop-prompt -->\nKeep going, agent.\n<!-- /loop-prompt -->\n")
    assert loop.main(agent_cmd(root), max_trials=1, confirm_every=2) == 0
    (prompt,) = (root / "prompts.txt").read_text().splitlines()
    assert (
        prompt.startswith("Keep going, agent. ")
        and "runs `autorl confirm` itself after every 2 keeps" in prompt
    )
    # At a longer budget (does the best keep hold when trained 4x longer?): the prompt names the command.
    (root / "prompts.txt").unlink()
    assert loop.main(agent_cmd(root), max_trials=1, confirm_every=2, confirm_factor=4) == 0
    (prompt,) = (root / "prompts.txt").read_text().splitlines()
    assert "runs `autorl confirm --factor 4` itself after every 2 keeps" in prompt
    assert loop.Loop("a", None, None, root, 2, 4.0).confirm_command() == ["confirm", "--factor", "4"]
    assert loop.main(agent_cmd(root), max_trials=1, confirm_factor=4) == 2  # a factor alone: refused


def test_a_swarm_that_confirms_tells_its_agents_it_does(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`autorl swarm --confirm-every K` confirms, not its agents' loops: the environment it gives an agent's
    loop makes the loop's prompt say so (a swarm agent was told nothing, and program.md has it confirm)."""
    from autorl.commands import swarm
    from autorl.record.row import AGENT_VAR

    (root / "program.md").write_text("# p\n<!-- loop-prompt -->\nKeep going, agent.\n<!-- /loop-prompt -->\n")
    agent = swarm.Agent("agent-3", root, root / "agent-3.log")
    assert loop.SWARM_CONFIRMS_VAR not in swarm.agent_env(agent)  # a swarm that does not confirm says nothing
    env = swarm.agent_env(agent, confirm_every=2)
    for var in (AGENT_VAR, loop.SWARM_CONFIRMS_VAR):
        monkeypatch.setenv(var, env[var])
    assert loop.main(agent_cmd(root), max_trials=1) == 0
    (prompt,) = (root / "prompts.txt").read_text().splitlines()
    assert "You are agent-3, one of several agents" in prompt
    assert "The swarm runs `autorl confirm` itself after every 2 keeps of all agents and at the end" in prompt
    assert "This loop runs" not in prompt


def test_confirm_every_counts_ideas_kept_not_the_baseline(root: Path) -> None:
    """program.md: "after every 3 keeps (the baseline is not one)": the loop's and the swarm's count agree."""
    ledger = Ledger(root / "results.tsv")
    add(ledger, "base", 0.40, "keep", verdict="baseline")
    add(ledger, "repeat", 0.41, "discard", verdict="inconclusive")
    assert loop.count_keeps(ledger) == 0
    add(ledger, "k1", 0.50, "keep", verdict="improved")
    add(ledger, "d1", 0.39, "discard", verdict="worse")
    add(ledger, "k2", 0.55, "keep", verdict="improved")
    assert loop.count_keeps(ledger) == 2


# ---- tune -----------------------------------------------------------------------------------------------

TRAIN = """\
# A small sample train.toml: comments and layout must survive tuning.
max_steps = "None"  # train until the budget

[[orchestrator.train.source]]
# the training environment
[orchestrator.train.source.env.taskset]
id = "arithmetic"

[trainer.optim]
lr = 1e-6  # peak learning rate
"""


def test_tune_writes_valid_config_keeping_comments(tmp_path: Path) -> None:
    params = tune.load_space(REPO / "space.toml")
    values = {"lr": 3.14159e-5, "group_size": 8, "batch_size": 32, "temperature": 0.9, "dppo_mask_low": 0.1}
    values |= {"dppo_mask_high": 0.3, "kl_tau": 1e-3}
    text = tune.render(TRAIN, params, values)
    for line in TRAIN.splitlines():
        if line.startswith("#") or "#" in line and "lr" not in line:
            assert line in text
    assert "lr = 3.142e-05  # peak learning rate" in text
    data = tomllib.loads(text)
    assert data["orchestrator"]["group_size"] == 8
    assert data["orchestrator"]["train"]["sampling"]["temperature"] == 0.9
    assert data["orchestrator"]["train"]["source"][0]["env"]["taskset"]["id"] == "arithmetic"
    assert data["trainer"]["loss"] == {"dppo_mask_low": 0.1, "dppo_mask_high": 0.3, "kl_tau": 1e-3}
    from autorl.llm.config import load_train_config

    path = tmp_path / "train.toml"
    path.write_text(text)
    cfg = load_train_config(path)  # the harness accepts every key the default space writes
    assert cfg.model.trainer.optim.lr == pytest.approx(3.142e-5)


def test_suggest_respects_multiple_of() -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    params = tune.load_space(REPO / "space.toml")
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    for _ in range(50):
        v = tune.suggest(study.ask(), params)
        assert v["batch_size"] % v["group_size"] == 0 and v["batch_size"] >= 16


def test_space_errors_name_the_parameter(tmp_path: Path) -> None:
    bad = tmp_path / "space.toml"
    for text, words in [
        ("[lr]\nlow = 1\nhigh = 2\n", "needs a `key`"),
        ('[lr]\nkey = "a"\nlow = 2\nhigh = 1\n', "low < high"),
        ('[lr]\nkey = "a"\nlow = 0.0\nhigh = 1.0\nlog = true\n', "low > 0"),
        ('[b]\nkey = "a"\nchoices = [1]\nmultiple_of = "g"\n', "unknown parameter"),
    ]:
        bad.write_text(text)
        with pytest.raises(tune.SpaceError, match=words):
            tune.load_space(bad)


def test_space_is_validated_like_every_config(tmp_path: Path) -> None:
    """An unknown key or a wrong type in space.toml: file:line, the parameter, the keys a table takes."""
    bad = tmp_path / "space.toml"
    bad.write_text('[lr]\nkey = "trainer.optim.lr"\nlow = 1e-6\nhigh = 1e-3\nlogg = true\n')
    with pytest.raises(tune.SpaceError) as err:
        tune.load_space(bad)
    assert str(err.value).startswith("space.toml:5: unknown key `lr.logg`: did you mean `log`?")
    assert "`key`, `low`, `high`, `log`, `step`, `choices`, `multiple_of`" in str(err.value)
    for text, line, words in [
        ('[lr]\nkey = "a"\nlow = "x"\nhigh = 1.0\n', 3, "`lr.low`: must be a number, not a string"),
        (
            '[lr]\nkey = "a"\nlow = 1e-6\nhigh = 1.0\nlog = 1\n',
            5,
            "`lr.log`: Input should be a valid boolean",
        ),
        ('[g]\nkey = "a"\nchoices = [4, 8]\nlow = 1\n', 3, "`g.choices` or `low` and `high`, not both"),
        ('[g]\nkey = "a"\nlow = 0.5\nhigh = 1.0\nstep = 1\n', 5, "`g.step` is for an integer range"),
        ('[lr]\nkey = "a"\nhigh = inf\nlow = 1.0\n', 3, "`lr.high`: must be finite"),
    ]:
        bad.write_text(text)
        with pytest.raises(tune.SpaceError, match=f"^space.toml:{line}: .*{words}"):
            tune.load_space(bad)
    bad.write_text('[lr]\nkey = "a"\nlow = 1\nhigh = 8\nstep = 2\n')
    assert tune.load_space(bad) == [tune.Param("lr", "a", "int", 1, 8, step=2)]


def test_autorl_tune_refuses_a_bad_space_with_exit_2(root: Path, capsys: pytest.CaptureFixture) -> None:
    (root / "space.toml").write_text('[lr]\nkey = "trainer.optim.lr"\nlow = 1e-6\nhigh = 1e-3\nlogg = true\n')
    assert cli.main(["tune", "--trials", "1"]) == 2
    err = capsys.readouterr().err
    assert "space.toml:5: unknown key `lr.logg`" in err
    assert not (root / "results.tsv").exists() and not (root / "runs").exists()


def test_tune_refuses_a_space_of_another_track_s_keys(root: Path, capsys: pytest.CaptureFixture) -> None:
    """The LLM space on the classic track wrote train.toml keys into classic.toml, and every trial was
    refused (a replay of 2026-12-03): now exit 2 before any trial, naming the keys. Each track's own
    default space fits its shipped config."""
    from autorl.engine.track import get_track

    (root / "classic.toml").write_text((REPO / "classic.toml").read_text())
    (root / "space.toml").write_text((REPO / "space.toml").read_text())
    argv = ["tune", "--trials", "1", "--track", "classic", "--space", str(root / "space.toml")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "space.toml: [lr] key 'trainer.optim.lr' is not a key of classic.toml (classic track)" in err
    assert "(the classic track's space: docs/classic-space.toml;" in err
    assert not (root / "results.tsv").exists() and not (root / "runs").exists()
    for name in ("llm", "classic"):
        t = get_track(name)
        space = REPO / t.default_space
        tune.check_keys(tune.load_space(space), space, REPO / t.default_config, name)  # raises if not


def test_tune_runs_trials_through_the_runner(root: Path, capsys: pytest.CaptureFixture) -> None:
    (root / "train.toml").write_text(TRAIN)
    (root / "space.toml").write_text(
        '[lr]\nkey = "trainer.optim.lr"  # searched\nlow = 1e-6\nhigh = 1e-2\nlog = true\n'
    )
    runner = [sys.executable, str(FAKE_RUN)]
    assert tune.run_tune(3, budget=1, runner=runner) == 0
    rows = Ledger(root / "results.tsv").rows()
    assert len(rows) == 3 and all(r.description.startswith("tune: lr=") for r in rows)
    assert rows[0].verdict == "baseline" and rows[0].decision == "keep"  # the current config first
    assert tomllib.loads((root / "runs" / rows[0].run_id / "config.toml").read_text())["trainer"] == {
        "optim": {"lr": 1e-6}
    }
    assert all(r.decision == ("keep" if r.verdict in ("improved", "baseline") else "discard") for r in rows)
    final = (root / "train.toml").read_text()
    assert "# peak learning rate" in final and "# the training environment" in final
    improved = [r for r in rows if r.verdict == "improved"]
    if improved:
        best = max(improved, key=lambda r: r.eval_score or 0.0)
        best_cfg = (root / "runs" / best.run_id / "config.toml").read_text()
        assert tomllib.loads(final) == tomllib.loads(best_cfg)
        assert (
            f'commit it before the next trial: git commit -am "tune: {best.run_id}"'
            in capsys.readouterr().out
        )
    else:
        assert final == TRAIN


def test_tune_prunes_a_trial_the_early_abort_stopped(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An aborted candidate (no full score: `stopped_early: aborted ...`) is a pruned Optuna trial and a
    discarded row, not a crash."""
    import optuna

    (root / "train.toml").write_text(TRAIN)
    (root / "space.toml").write_text('[lr]\nkey = "trainer.optim.lr"\nlow = 1e-6\nhigh = 1e-2\nlog = true\n')
    runner = [sys.executable, str(FAKE_RUN)]
    assert tune.run_tune(1, budget=1, runner=runner) == 0  # the baseline
    monkeypatch.setenv("FAKE_RUN_ABORT", "1")
    told = []
    real_tell = optuna.study.Study.tell
    monkeypatch.setattr(
        optuna.study.Study, "tell", lambda self, *a, **k: told.append(k) or real_tell(self, *a, **k)
    )
    assert tune.run_tune(2, budget=1, runner=runner) == 0
    rows = Ledger(root / "results.tsv").rows()
    assert [r.decision for r in rows] == ["keep", "discard", "discard"]  # the baseline, two aborted
    assert all(r.stopped_early.startswith("aborted seed 1") and r.eval_score is None for r in rows[1:])
    assert [r.verdict for r in rows[1:]] == ["inconclusive", "inconclusive"]
    assert told == [{"state": optuna.trial.TrialState.PRUNED}] * 2


def test_tune_runs_candidates_side_by_side(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Optuna ask/tell with two run.py processes at once, each on its own config copy and cores."""
    monkeypatch.setenv("FAKE_RUN_SECONDS", "1.5")
    (root / "train.toml").write_text(TRAIN)
    (root / "space.toml").write_text('[lr]\nkey = "trainer.optim.lr"\nlow = 1e-6\nhigh = 1e-2\nlog = true\n')
    assert tune.run_tune(4, budget=1, runner=[sys.executable, str(FAKE_RUN)], parallel_trials=2) == 0
    rows = Ledger(root / "results.tsv").rows()
    assert len(rows) == 4 and all(r.decision in ("keep", "discard") for r in rows)
    spans = [json.loads((root / "runs" / r.run_id / "interval.json").read_text()) for r in rows]
    overlapping = sum(a[0] < b[1] and b[0] < a[1] for i, a in enumerate(spans) for b in spans[i + 1 :])
    assert overlapping >= 2  # two pairs of candidates ran at the same time
    assert len(list((root / ".autorl" / "tune").glob("candidate-*.toml"))) == 4


def test_tune_finishes_a_trial_that_prints_more_than_a_pipe_holds(root: Path, monkeypatch) -> None:
    """A trial printing 1.2 MB (a pipe holds 64 KiB) ends, and tune takes its result from result.json."""
    monkeypatch.setenv("FAKE_RUN_PRINT_BYTES", str(1_200_000))
    (root / "train.toml").write_text(TRAIN)
    (root / "space.toml").write_text('[lr]\nkey = "trainer.optim.lr"\nlow = 1e-6\nhigh = 1e-2\nlog = true\n')
    started = time.monotonic()
    assert tune.run_tune(1, budget=1, runner=[sys.executable, str(FAKE_RUN)]) == 0
    assert time.monotonic() - started < 120
    (row,) = Ledger(root / "results.tsv").rows()
    assert row.verdict == "baseline" and row.decision == "keep"  # read from result.json
    assert (root / ".autorl" / "tune" / "trial-1.log").stat().st_size > 1_200_000


def test_tune_reads_the_result_json_not_the_printed_score(root: Path) -> None:
    run_dir = root / "runs" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "result.json").write_text(json.dumps({"run_id": "r1", "eval_score": 0.25, "status": "ok"}))
    text = "noise\n---\neval_score: 0.99\nrun_dir: runs/r1\n"
    row = tune.trial_result(text)
    assert row is not None and (row.run_id, row.eval_score, row.status) == ("r1", 0.25, "ok")
    assert tune.trial_result("error: invalid\n---\nstatus: invalid\n") is None


def test_tune_crashes_are_marked_and_config_restored(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_RUN_CRASH", "1")
    (root / "train.toml").write_text(TRAIN)
    runner = [sys.executable, str(FAKE_RUN)]
    (root / "space.toml").write_text('[lr]\nkey = "trainer.optim.lr"\nchoices = [0.0]\n')
    assert tune.run_tune(1, budget=1, runner=runner) == 0  # lr = 0 is an invalid config: no row
    assert not (root / "results.tsv").exists()
    (root / "space.toml").write_text('[lr]\nkey = "trainer.optim.lr"\nchoices = [1e-4]\n')
    assert tune.run_tune(2, budget=1, runner=runner) == 0
    rows = Ledger(root / "results.tsv").rows()
    assert len(rows) == 2 and all(r.status == "crash" and r.decision == "crash" for r in rows)
    assert (root / "train.toml").read_text() == TRAIN


# ---- report ---------------------------------------------------------------------------------------------


def test_report_png_and_kept_table(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = Ledger(root / "results.tsv")
    trials = [
        ("base", 0.40, "keep", 1e-6),
        ("t1", 0.42, "discard", 2e-6),
        ("t2", 0.55, "keep", 1e-5),
        ("t3", None, "crash", 1e-2),
        ("t4", 0.50, "discard", 3e-5),
        ("t5", 0.61, "keep", 5e-5),
        ("t6", 0.60, "pending", 6e-5),
    ]
    for run_id, score, decision, lr in trials:
        (root / "runs" / run_id).mkdir(parents=True)
        (root / "runs" / run_id / "config.toml").write_text(TRAIN.replace("lr = 1e-6", f"lr = {lr}"))
        add(ledger, run_id, score, decision, delta=None if score is None else score - 0.4)
    out = root / "progress.png"
    assert cli.main(["report", "--out", str(out), "--md", str(root / "kept.md")]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    table = (root / "kept.md").read_text()
    lines = table.splitlines()
    assert len(lines) == 2 + 3 + 2  # header, rule, baseline + two kept trials; a blank line, the chance line
    assert lines[-1].startswith("comparisons: ")  # how many improved verdicts chance alone explains
    assert "(baseline)" in lines[2]
    assert "trainer.optim.lr: 1e-06 -> 1e-05" in lines[3] and "trainer.optim.lr: 1e-06 -> 5e-05" in lines[4]
    assert "| 6 | t5 | 0.6100 |" in lines[4]
    assert table.strip() in capsys.readouterr().out


def test_report_reads_config_diff_when_configs_are_missing(root: Path) -> None:
    ledger = Ledger(root / "results.tsv")
    add(ledger, "base", 0.40, "keep")
    add(ledger, "t1", 0.50, "keep")
    (root / "runs" / "t1").mkdir(parents=True)
    (root / "runs" / "t1" / "config.diff").write_text("--- a\n+++ b\n@@ -1 +1 @@\n-lr = 1e-6\n+lr = 1e-5\n")
    table = report.kept_table(ledger.rows())
    assert "-lr = 1e-6; +lr = 1e-5" in table


def test_tune_end_to_end_through_the_real_runner_on_the_classic_track(root: Path) -> None:
    """No test double: `autorl tune` drives the real run.py (classic track, short CartPole trials)."""
    repo = Path(__file__).resolve().parent.parent
    config = root / "classic.toml"
    config.write_text(
        "# a short CartPole run\ntotal_env_steps = 4096\nnum_envs = 8\nnum_steps = 32\n"
        "learning_rate = 5e-4  # searched\n"
    )
    (root / "space.toml").write_text('[lr]\nkey = "learning_rate"\nlow = 1e-4\nhigh = 3e-3\nlog = true\n')
    runner = [sys.executable, str(repo / "run.py"), "--allow-dirty-harness"]
    assert tune.run_tune(2, root / "space.toml", budget=30, track="classic", runner=runner, seeds=1) == 0
    rows = Ledger(root / "results.tsv").rows()
    assert [r.track for r in rows] == ["classic", "classic"] and all(r.status == "ok" for r in rows)
    assert rows[0].verdict == "baseline" and rows[0].decision == "keep"
    assert rows[1].verdict in ("improved", "worse", "inconclusive") and rows[1].reference_run
    assert rows[1].decision == ("keep" if rows[1].verdict == "improved" else "discard")
    assert "# searched" in config.read_text()  # comments survive the rewrites
