"""Refusals that say what is wrong with the file itself, before anything runs (issue 25).

An empty train.toml, an invisible character in a key, a model.name left unset after prepare, GSM8K without its
data on an offline machine, and `autorl loop` on a ledger that run.py would refuse: each ends in exit 2 with
one clear message, nothing trained, nothing recorded, no agent started.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from autorl_gsm8k.core import FETCH_COMMAND

from autorl.commands import loop, trial
from autorl.io.machine import Machine, save_machine
from autorl.record.ledger import Ledger

REPO = Path(__file__).resolve().parent.parent
TRAIN = (REPO / "train.toml").read_text()


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    monkeypatch.delenv("AUTORL_DATA_DIR", raising=False)
    return tmp_path


def refused(root: Path, text: str, capsys, *argv: str) -> str:
    """run.py (not a dry run: the whole path before training) must exit 2, record nothing, run nothing."""
    (root / "train.toml").write_text(text)
    assert trial.main(["--budget", "1", *argv]) == 2
    assert not (root / "results.tsv").exists() and not (root / "runs").exists()
    return capsys.readouterr().err


def prepared(root: Path, model: str = ".autorl/models/tiny-arith") -> None:
    save_machine(Machine(python="3", platform="test", torch=None, cpus=2, ram_gb=1.0, model_name=model))


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_an_empty_config_is_called_empty_not_blamed_on_a_default(root, capsys, text):
    prepared(root)
    err = refused(root, text, capsys)
    assert "train.toml: has no keys" in err and "git checkout -- train.toml" in err
    assert "model.name" not in err and "orchestrator.train.source" not in err


def test_model_name_left_unset_says_it_is_unset(root, capsys):
    prepared(root)
    text = TRAIN.replace('name = ".autorl/models/tiny-arith"', "", 1)
    assert text != TRAIN
    err = refused(root, text, capsys)
    assert "`model.name` is not set" in err and 'set `name = ".autorl/models/tiny-arith"`' in err


def test_an_invisible_character_in_a_key_is_shown(root, capsys):
    quoted = TRAIN.replace("\nlr = ", '\n"l\u200br" = ', 1)
    err = refused(root, quoted, capsys, "--dry-run")
    assert "unknown key `trainer.optim.l\\u200br` (it contains U+200B ZERO WIDTH SPACE)" in err
    bare = TRAIN.replace("\nlr = ", "\nl\u200br = ", 1)
    err = refused(root, bare, capsys, "--dry-run")
    assert "invalid TOML" in err and "reads `l\\u200br = " in err and "U+200B ZERO WIDTH SPACE" in err


def _gsm8k(data_path: str | None) -> str:
    field = f'\ndata_path = "{data_path}"' if data_path else ""
    return TRAIN.replace('id = "autorl-reverse"', f'id = "autorl-gsm8k"{field}', 1)


def test_gsm8k_without_its_data_offline_is_refused_before_training(root, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(root / "empty-hf-home"))
    prepared(root)
    err = refused(root, _gsm8k(None), capsys)
    assert "source 'reverse' (autorl-gsm8k): no data_path" in err
    assert FETCH_COMMAND in err and 'data_path = "data/gsm8k"' in err
    err = refused(root, _gsm8k("data/gsm8k"), capsys)
    assert "has no train data" in err and FETCH_COMMAND in err


def test_gsm8k_with_local_data_passes_the_data_check(root, monkeypatch):
    from autorl.llm.config import data_problems, load_train_config

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (root / "data" / "gsm8k").mkdir(parents=True)
    (root / "data" / "gsm8k" / "train.jsonl").write_text('{"question": "1+1?", "answer": "#### 2"}\n')
    (root / "train.toml").write_text(_gsm8k("data/gsm8k"))
    assert data_problems(load_train_config(root / "train.toml")) == []


# ---- autorl loop on a ledger run.py would refuse --------------------------------------------------------

AGENT = """
import os, sys
from pathlib import Path
root = Path(os.environ["AUTORL_ROOT"])
with open(root / "agent-started.txt", "a") as f:
    f.write("x\\n")
with open(root / "results.tsv", "a") as f:  # the agent breaks the ledger
    f.write("bad\\trow\\n")
"""


def test_loop_starts_no_agent_on_a_ledger_run_py_would_refuse(root, capsys):
    (root / "results.tsv").write_bytes(bytes(range(128, 256)))
    script = root / "agent.py"
    script.write_text(AGENT)
    assert loop.main(f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}") == 2
    err = capsys.readouterr().err
    assert "no agent is started" in err and "results.tsv:1: not UTF-8 text" in err
    assert not (root / "agent-started.txt").exists()


def test_loop_stops_when_the_ledger_goes_bad_during_the_night(root):
    Ledger(root / "results.tsv").append({"run_id": "r1", "status": "ok", "eval_score": 0.5, "track": "llm"})
    script = root / "agent.py"
    script.write_text(AGENT)
    assert loop.main(f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}", max_trials=5) == 0
    assert (root / "agent-started.txt").read_text() == "x\n"  # one invocation, not five failed starts
    assert "stop: results.tsv cannot take another trial" in (root / ".autorl" / "loop.log").read_text()
