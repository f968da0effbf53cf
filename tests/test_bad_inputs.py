"""The bad-input battery (issue 15): every bad input is refused before anything runs, with one clear message.

Config content (taskset fields, types, encodings, paths) ends in exit 2 from `run.py --dry-run` and writes no
ledger row; the ledger's faults name file:line; the `autorl` commands refuse bad flags and paths with a
one-line error; untracked importable files count as harness changes. Nothing here trains.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autorl.classic.config import load_classic_config
from autorl.commands import cli, trial
from autorl.io.harness import dirty_harness_files
from autorl.io.tomlcheck import ConfigError
from autorl.llm.config import load_train_config
from autorl.record.ledger import Ledger, LedgerError
from autorl.record.row import COLUMNS

REPO = Path(__file__).resolve().parent.parent
TRAIN = (REPO / "train.toml").read_text()
CLASSIC = (REPO / "classic.toml").read_text()
GSM8K = """\
seq_len = 2048
[model]
name = "Qwen/Qwen3-0.6B"
[orchestrator]
batch_size = 8
group_size = 4
[[orchestrator.train.source]]
name = "gsm8k"
[orchestrator.train.source.env.taskset]
id = "autorl-gsm8k"
"""


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    monkeypatch.delenv("AUTORL_DATA_DIR", raising=False)
    return tmp_path


def with_key(text: str, table: str, line: str) -> str:
    """The config with `line` written as the first key of `[table]` (appended as a new table if absent)."""
    header = f"[{table}]\n"
    return text.replace(header, header + line + "\n", 1) if header in text else text + header + line + "\n"


def _set(text: str, key: str, value: str) -> str:
    lines = [f"{key} = {value}" if line.split("=")[0].strip() == key else line for line in text.splitlines()]
    return "\n".join(lines) + "\n"


def refused(root: Path, text: str | bytes, track: str = "llm") -> str:
    """Run `run.py --dry-run` on the config: it must exit 2, write no row and create no run directory."""
    path = root / ("classic.toml" if track == "classic" else "train.toml")
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError) as exc:
        (load_classic_config if track == "classic" else load_train_config)(path)
    assert trial.main(["--track", track, "--config", str(path), "--dry-run"]) == 2
    assert not (root / "results.tsv").exists() and not (root / "runs").exists()
    return str(exc.value)


TASKSET = "orchestrator.train.source.env.taskset"


# ---- taskset fields: checked by the environment's own core before training ---------------------------


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("max_digits = 1000", "max_digits <= 18"),
        ("num_examples = -5", "num_examples`: must be in [1,"),
        ('ops = "*"', "'+' and '-', got '*'"),
        ("ops = 5", "'+' and '-', got 5"),
        ('split = "valid"', "split`: must be one of"),
        ("colour = 1", "colour`: unknown autorl-arithmetic field"),
        ("instruction = 1", "instruction`: must be true or false"),
    ],
)
def test_arithmetic_taskset_fields_are_refused_at_load_time(root, field, expected):
    text = with_key(TRAIN.replace('split = "train"\n', ""), TASKSET, field)
    msg = refused(root, text)
    lineno = text.splitlines().index(field) + 1
    assert msg.startswith(f"train.toml:{lineno}: `orchestrator.train.source.0.env.taskset.")
    assert expected in msg


@pytest.mark.parametrize("field", ["num_examples = -5", "num_examples = 0", 'split = "dev"', "data_path = 3"])
def test_gsm8k_taskset_fields_are_refused_at_load_time(root, field):
    assert field.split(" =")[0] in refused(root, with_key(GSM8K, TASKSET, field))


# ---- paths: data only from the repo or AUTORL_DATA_DIR -------------------------------------------------


def test_data_path_outside_the_repo_is_refused(root):
    up = "../" * 40  # past the file system's root from any temp directory (pytest-xdist's are deeper)
    msg = refused(root, with_key(GSM8K, TASKSET, f'data_path = "{up}etc/passwd"'))
    assert "resolves to /etc/passwd, outside the repo" in msg and "AUTORL_DATA_DIR" in msg


def test_data_path_inside_the_repo_or_the_data_dir_is_accepted(root, tmp_path_factory, monkeypatch):
    (root / "train.toml").write_text(with_key(GSM8K, TASKSET, 'data_path = "data/gsm8k"'))
    load_train_config(root / "train.toml")
    data = tmp_path_factory.mktemp("data")
    (root / "train.toml").write_text(with_key(GSM8K, TASKSET, f'data_path = "{data}/gsm8k.jsonl"'))
    with pytest.raises(ConfigError, match="outside the repo"):
        load_train_config(root / "train.toml")
    monkeypatch.setenv("AUTORL_DATA_DIR", str(data))
    load_train_config(root / "train.toml")


# ---- the loader: encodings, types, ranges, long keys, suggestions -------------------------------------


@pytest.mark.parametrize("track", ["llm", "classic"])
def test_non_utf8_config_is_a_config_error(root, track):
    msg = refused(root, b"lr = 1\n" + bytes(range(128, 256)), track)
    assert msg.startswith(f"{'classic' if track == 'classic' else 'train'}.toml:2: not UTF-8 text")


def test_utf8_bom_is_accepted(root):
    (root / "train.toml").write_bytes(b"\xef\xbb\xbf" + TRAIN.encode())
    assert load_train_config(root / "train.toml").model.seq_len == 64


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("batch_size", '"64"', "`orchestrator.batch_size`: Input should be a valid integer, not a string"),
        ("group_size", "true", "`orchestrator.group_size`: Input should be a valid integer, not a boolean"),
        ("batch_size", "99999999999999999999999", "`orchestrator.batch_size`: integer out of range"),
    ],
)
def test_loose_types_and_huge_integers_are_refused(root, key, value, expected):
    msg = refused(root, _set(TRAIN, key, value))
    assert expected in msg and "divisible" not in msg


def test_bool_seq_len_and_string_bool_are_refused(root):
    assert "`seq_len`: Input should be a valid integer, not a boolean (got true)" in refused(
        root, TRAIN.replace("seq_len = 64", "seq_len = true")
    )
    text = TRAIN.replace("filter_zero_advantages = true", 'filter_zero_advantages = "yes"')
    assert "filter_zero_advantages`: Input should be a valid boolean, not a string" in refused(root, text)


def test_classic_bool_given_as_integer_is_refused(root):
    msg = refused(root, _set(CLASSIC, "clip_vloss", "1"), "classic")
    assert "`clip_vloss`: Input should be a valid boolean, not an integer (got 1)" in msg


def test_integer_for_a_float_and_the_none_string_still_load(root):
    assert 'max_steps = "None"' in TRAIN
    (root / "train.toml").write_text(_set(TRAIN, "lr", "1"))
    cfg = load_train_config(root / "train.toml")
    assert cfg.model.trainer.optim.lr == 1.0 and cfg.model.max_steps is None


def test_a_huge_key_is_shortened_in_the_message(root):
    msg = refused(root, with_key(TRAIN, "orchestrator", "k" * 100_000 + " = 1"))
    assert len(msg) < 400 and "characters)" in msg


def test_suggestions_are_keys_of_the_same_kind(root):
    msg = refused(root, with_key(TRAIN, "orchestrator.train", "top_p = 0.9\ntemperature = 1.0"))
    assert "did you mean `orchestrator.train`?" not in msg
    assert "unknown key `orchestrator.train.top_p` (no accepted key has this name)" in msg
    near = "did you mean `orchestrator.train.sampling.temperature`?"
    assert f"unknown key `orchestrator.train.temperature`; {near}" in msg


# ---- the harness check: untracked importable files -----------------------------------------------------


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True, capture_output=True
    )


@pytest.mark.parametrize(
    ("files", "dirty"),
    [
        (["difflib.py"], ["difflib.py"]),
        (["shadow/__init__.py", "shadow/mod.py"], ["shadow/__init__.py", "shadow/mod.py"]),
        (["notes.txt", "analysis/plot.py", "run.log"], []),
    ],
)
def test_untracked_importable_files_count_as_harness_changes(tmp_path, files, dirty):
    (tmp_path / "run.py").write_text("print('run')\n")
    (tmp_path / ".gitignore").write_text("run.log\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "init")
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    assert dirty_harness_files(tmp_path) == dirty


def test_run_log_is_ignored():
    assert subprocess.run(["git", "check-ignore", "-q", "run.log"], cwd=REPO).returncode == 0


# ---- the ledger's faults -------------------------------------------------------------------------------


def saved_row(run_id: str) -> dict[str, str]:
    return {c: "" for c in COLUMNS} | {
        "run_id": run_id,
        "status": "ok",
        "track": "llm",
        "decision": "pending",
    }


@pytest.mark.parametrize(
    ("content", "where"),
    [
        (bytes(range(128, 256)) * 4, "results.tsv:1: not UTF-8 text"),
        (None, "results.tsv:3: row has 2 fields"),
    ],
)
def test_a_malformed_ledger_is_named_and_every_command_exits_2(root, capsys, content, where):
    ledger = Ledger(root / "results.tsv")
    if content is None:
        ledger.append(saved_row("r1"))
        with open(ledger.path, "a") as f:
            f.write("bad\trow\n")
    else:
        ledger.path.write_bytes(content)
    with pytest.raises(LedgerError, match="move the file aside"):
        ledger.check()
    for argv in (["status"], ["mark", "keep"], ["report"], ["ledger", "check"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert where in err and "Traceback" not in err


def test_ledger_append_adds_a_saved_row_once(root, capsys):
    saved = root / "runs" / "r2" / "result.json"
    saved.parent.mkdir(parents=True)
    saved.write_text(json.dumps(saved_row("r2")))
    Ledger(root / "results.tsv").append(saved_row("r1"))
    assert cli.main(["ledger", "append", str(saved)]) == 0
    assert [r.run_id for r in Ledger(root / "results.tsv").rows()] == ["r1", "r2"]
    assert cli.main(["ledger", "append", str(saved)]) == 2
    assert "already recorded" in capsys.readouterr().err
    saved.write_text(json.dumps({**saved_row("r3"), "old_column": "1"}))
    assert cli.main(["ledger", "append", str(saved)]) == 2
    assert "not a row of this results.tsv header" in capsys.readouterr().err
    assert len(Ledger(root / "results.tsv").rows()) == 2


# ---- the autorl command line ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["tune", "--trials", "0"],
        ["tune", "--trials", "2", "--budget", "-5"],
        ["tune", "--trials", "2", "--budget", "nan"],
        ["tune", "--trials", "2", "--budget", "inf"],
        ["tune", "--trials", "2", "--seed", "-1"],
        ["loop", "--agent", ""],
        ["loop", "--agent", "true", "--hours", "nan"],
        ["loop", "--agent", "true", "--max-trials", "0"],
        ["status", "--last", "0"],
    ],
)
def test_bad_flags_are_refused_by_the_parser(root, capsys, argv):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert f"argument {argv[-2]}: must" in capsys.readouterr().err


def test_unreadable_and_unwritable_paths_are_one_line_errors(root, capsys):
    (root / "space.toml").write_text((REPO / "space.toml").read_text())
    assert cli.main(["tune", "--trials", "1", "--config", str(root / "nonexistent.toml")]) == 2
    assert capsys.readouterr().err.strip() == f"error: {root / 'nonexistent.toml'}: No such file or directory"
    Ledger(root / "results.tsv").append(saved_row("r1") | {"eval_score": "0.5"})
    assert cli.main(["report", "--out", "/proc/x.png"]) == 2
    assert capsys.readouterr().err.startswith("error: /proc/x.png")
    assert cli.main(["report", "--out", str(root / "p.png"), "--md", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {root}") and len(err.strip().splitlines()) == 1


def test_a_closed_stdout_is_not_a_traceback(root):
    read, write = os.pipe()
    os.close(read)
    proc = subprocess.run(
        [sys.executable, "-m", "autorl.commands.cli", "status"],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(write)
    assert proc.returncode == 1 and proc.stderr == ""


# ---- scripts on a fresh clone --------------------------------------------------------------------------


def test_bench_script_without_a_base_model_says_what_to_run(root):
    (root / "train.toml").write_text(TRAIN)
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "bench_trl.py"), "--config", str(root / "train.toml")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "run `uv run prepare.py` first" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_command_s_help_prints(command, capsys):
    """argparse formats help text with %: "sized for 80% power" made `autorl confirm --help` crash."""
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: autorl {command}")


def test_run_py_help_prints(capsys):
    with pytest.raises(SystemExit) as exit_:
        trial.main(["--help"])
    assert exit_.value.code == 0 and "--budget" in capsys.readouterr().out
