"""Fault battery: special files, sizes and nesting for every file the harness reads; the ledger's values;
file-system faults (disk full, a lock or runs/ that is not what it should be, unwritable outputs); faults of
the harness itself during a trial; concurrent writers; untracked modules at the repository root.

The rule: bad input exits 2 with one clear line, nothing run and nothing recorded; a fault during a trial
leaves a row that says what happened; nothing waits forever. Trials run with the test-double backend
(tests/fakes/fake_backend.py); a full disk is simulated by raising ENOSPC at the one atomic writer.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fakes.fake_backend import FakeBackend

from autorl.commands import cli, confirm, trial
from autorl.commands.tune import parse_summary
from autorl.engine import seed as seed_module
from autorl.engine import trial_run
from autorl.io import atomic, inputs
from autorl.io.jsonl import read_jsonl
from autorl.llm.track import LLMTrack
from autorl.record.ledger import Ledger, LedgerError
from autorl.record.row import COLUMNS, LedgerRow

REPO = Path(__file__).resolve().parent.parent
RUN = ["--budget", "0.3", "--seeds", "1", "--grace", "1"]


def use_backend(monkeypatch: pytest.MonkeyPatch, root: Path, mode: str = "ok") -> None:
    backend = FakeBackend(mode, 0.6, scripts_dir=root)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)


def ledger_rows(root: Path) -> list[LedgerRow]:
    return Ledger(root / "results.tsv").rows()


def a_row(run_id: str, **values: object) -> dict[str, object]:
    return {"run_id": run_id, "track": "llm", "status": "ok", "eval_score": 0.5, **values}


def enospc_under(monkeypatch: pytest.MonkeyPatch, directory: Path, names: tuple[str, ...] = ()) -> None:
    """A full disk under `directory`: the atomic writer raises ENOSPC there (for `names` only, if given)."""
    real = atomic.write_bytes

    def full(path: Path, data: bytes, mode: int | None = None) -> None:
        path = Path(path)
        if path.is_relative_to(directory) and (not names or path.name in names):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, data, mode)

    monkeypatch.setattr(atomic, "write_bytes", full)


# ---- special files, sizes and nesting: the one reader ------------------------------------------------


def test_config_that_is_a_device_a_directory_or_too_large_is_refused(root, capsys):
    big = root / "big.toml"
    big.write_text("# padding\n" * 200_000)  # 2 MB of comments: a valid TOML file, not a config
    for config, words in (
        ("/dev/zero", "is a device, not a regular file"),
        (str(root), "is a directory, not a regular file"),
        (str(big), "larger than the 1.0 MiB allowed"),
    ):
        assert trial.main(["--config", config, *RUN]) == 2
        captured = capsys.readouterr()
        assert words in captured.err and "Traceback" not in captured.err
        assert parse_summary(captured.out)["status"] == "invalid"
    assert not (root / "runs").exists() and not (root / "results.tsv").exists()


@pytest.mark.parametrize("kind", ["config", "ledger"])
def test_a_named_pipe_is_refused_at_once_not_waited_on(root, kind):
    """run.py in a subprocess: a reader that waits on the pipe would hang until the timeout."""
    fifo = root / ("pipe.toml" if kind == "config" else "results.tsv")
    os.mkfifo(fifo)
    argv = ["--config", str(fifo), "--dry-run"] if kind == "config" else ["--allow-dirty-harness", *RUN]
    proc = subprocess.run(
        [sys.executable, str(REPO / "run.py"), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "AUTORL_ROOT": str(root)},
    )
    assert proc.returncode == 2, proc.stderr
    assert "is a named pipe, not a regular file" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "[" * 5000 + "]" * 5000 + "\n",
        "x = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n",
        "[model]\nname = " + "[" * 100 + "]" * 100 + "\n",
    ],
    ids=["nested-arrays", "nested-inline-tables", "100-levels"],
)
@pytest.mark.parametrize("track", ["llm", "classic"])
def test_deeply_nested_toml_is_refused_not_a_recursion_error(root, capsys, text, track):
    path = root / "deep.toml"
    path.write_text(text)
    assert trial.main(["--track", track, "--config", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "levels deep; at most 64 are allowed" in err and "Traceback" not in err


def test_brackets_inside_strings_and_comments_do_not_count_as_nesting():
    text = "a = \"[[[[{{{{\"\nb = '''\n[[[[[\n'''\n# [[[[[[[\nc = [[1], {x = [2]}]\n"
    assert inputs.nesting_depth(text) == 3
    assert inputs.nesting_depth('{"a": "]]]", "b": [[{"c": "\\"["}]]}') == 4


@pytest.mark.parametrize("target", ["/dev/zero", "dir", "fifo"])
def test_a_ledger_that_is_not_a_regular_file_is_refused_by_every_command(root, capsys, target):
    ledger = root / "results.tsv"
    if target == "dir":
        ledger.mkdir()
    elif target == "fifo":
        os.mkfifo(ledger)
    else:
        ledger.symlink_to(target)
    for argv in (["status"], ["report"], ["ledger", "check"], ["mark", "keep"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert "not a regular file" in err and str(ledger) in err and len(err.strip().splitlines()) == 1


def test_corrupt_machine_file_is_refused_with_what_to_do(root, capsys):
    (root / ".autorl" / "machine.json").write_text('{"python": ' * 200 + "}")
    assert trial.main(RUN) == 2
    err = capsys.readouterr().err
    assert "machine.json: not a machine file" in err and "delete it and run again" in err


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe garbage", b"[1, 2]", b'{"a": ' * 5000 + b"1" + b"}" * 5000, b'{"run_id": "x"}'],
    ids=["binary", "a-list", "deep", "partial-row"],
)
def test_a_corrupt_result_json_is_refused_by_ledger_append(root, capsys, content):
    saved = root / "result.json"
    saved.write_bytes(content)
    assert cli.main(["ledger", "append", str(saved)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {saved}") and "Traceback" not in err
    assert not (root / "results.tsv").exists()


def test_jsonl_lines_nested_beyond_reason_are_skipped_like_a_cut_line(tmp_path):
    path = tmp_path / "eval.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text('{"score": 1}\n' + deep + '\n{"score": 0}\n{"cut')
    assert read_jsonl(path) == [{"score": 1}, {"score": 0}]
    fifo = tmp_path / "metrics.jsonl"
    os.mkfifo(fifo)
    assert read_jsonl(fifo) == []  # a pipe is no file of rows (and is not waited on)


# ---- the ledger's values: one check, file:line:column, and an explicit repair ---------------------------


def write_ledger(root: Path, lines: list[str], newline: str = "\n") -> Path:
    path = root / "results.tsv"
    path.write_bytes(("\t".join(COLUMNS) + newline + "".join(line + newline for line in lines)).encode())
    return path


def good_line(run_id: str, **values: object) -> str:
    return Ledger(Path("unused")).format_row(a_row(run_id, **values)).rstrip("\n")


@pytest.mark.parametrize(
    ("lines", "where"),
    [
        (
            [good_line("r1", eval_score="garbage")],
            "results.tsv:2: column eval_score: 'garbage'",
        ),
        ([good_line("r1", eval_score="inf")], "results.tsv:2: column eval_score: 'inf' is not finite"),
        ([good_line("r1"), good_line("r1")], "results.tsv:3: column run_id: r1 is recorded twice"),
        ([good_line("r1").replace("llm", "l\0m", 1)], "results.tsv:2:"),
        ([good_line("r1", status="fine")], "results.tsv:2: column status: 'fine' is not one of"),
    ],
    ids=["garbage-score", "infinite-score", "duplicate-run-id", "nul-byte", "unknown-status"],
)
def test_bad_ledger_values_are_refused_by_run_py_and_every_command(root, monkeypatch, capsys, lines, where):
    path = write_ledger(root, lines)
    before = path.read_bytes()
    use_backend(monkeypatch, root)
    assert trial.main(RUN) == 2
    assert where in capsys.readouterr().err
    for argv in (["status"], ["report"], ["ledger", "check"], ["mark", "keep"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert where in err and "autorl ledger repair" in err and "Traceback" not in err
    assert path.read_bytes() == before and not (root / "runs").exists()


def test_nul_byte_and_crlf_are_named_by_line_and_column(root):
    write_ledger(root, [good_line("r1")], newline="\r\n")
    with pytest.raises(LedgerError, match=r"results.tsv:1:\d+: a carriage return \(CRLF line ends\?\)"):
        Ledger(root / "results.tsv").check()
    line = good_line("r1")
    write_ledger(root, [line[:10] + "\0" + line[10:]])
    with pytest.raises(LedgerError, match=r"results.tsv:2:11: a NUL byte"):
        Ledger(root / "results.tsv").check()


def test_ledger_repair_fixes_crlf_and_moves_bad_rows_aside_keeping_a_backup(root, capsys):
    bad_score = good_line("r3", eval_score="garbage")
    lines = [
        good_line("r1"),
        good_line("r2"),
        good_line("r1", eval_score=0.9),
        bad_score,
        "",
        good_line("r4"),
    ]
    path = write_ledger(root, lines, newline="\r\n")
    original = path.read_bytes()
    assert cli.main(["ledger", "check"]) == 2
    capsys.readouterr()
    assert cli.main(["ledger", "repair"]) == 0
    out = capsys.readouterr().out
    assert "line 4: column run_id: r1 is recorded twice" in out and "line 5: column eval_score" in out
    assert out.strip().endswith(": ok")
    assert [r.run_id for r in ledger_rows(root)] == ["r1", "r2", "r4"]
    assert ledger_rows(root)[0].eval_score == 0.5  # the first row of a run id is the one kept
    rejected = (root / "results-rejected.tsv").read_text().splitlines()
    assert [r.split("\t")[1] for r in rejected] == ["r1", "r3"]
    backups = list(root.glob("results.tsv.bak-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == original
    assert cli.main(["ledger", "repair"]) == 0
    assert "nothing to repair" in capsys.readouterr().out


def test_ledger_repair_before_any_trial_needs_nothing(root, capsys):
    """No results.tsv yet, or an empty one: nothing to repair, exit 0 (it used to call the missing header
    'not a results.tsv header' and exit 2)."""
    assert cli.main(["ledger", "repair"]) == 0
    assert "nothing to repair" in capsys.readouterr().out
    assert not (root / "results.tsv").exists()
    (root / "results.tsv").write_text("")
    assert cli.main(["ledger", "repair"]) == 0
    assert "nothing to repair" in capsys.readouterr().out


def test_a_row_with_a_bad_value_is_never_appended(root):
    ledger = Ledger(root / "results.tsv")
    ledger.append(a_row("r1"))
    with pytest.raises(LedgerError, match="column run_id: r1 is recorded twice"):
        ledger.append(a_row("r1"))
    with pytest.raises(LedgerError, match="column status: 'weird'"):
        ledger.append(a_row("r2", status="weird"))
    assert [r.run_id for r in ledger.rows()] == ["r1"]


def test_a_failed_append_is_cut_back_no_half_row(root, monkeypatch):
    ledger = Ledger(root / "results.tsv")
    ledger.append(a_row("r1"))
    before = ledger.path.read_bytes()
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        if len(data) > 100:
            real_write(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(LedgerError, match="No space left on device"):
        ledger.append(a_row("r2", description="x" * 500))
    monkeypatch.undo()
    assert ledger.path.read_bytes() == before
    assert [r.run_id for r in ledger.rows()] == ["r1"]


# ---- a trial that trained always leaves a row; what would stop it from leaving one is refused first -----


@pytest.mark.parametrize(("kind", "words"), [("dir", "Is a directory"), ("fifo", "not a regular file")])
def test_a_lock_that_is_not_a_file_is_refused_before_training(root, monkeypatch, capsys, kind, words):
    lock = root / "results.tsv.lock"
    lock.mkdir() if kind == "dir" else os.mkfifo(lock)
    use_backend(monkeypatch, root)
    assert trial.main(RUN) == 2
    err = capsys.readouterr().err
    assert f"{lock}: " in err and words in err and "Traceback" not in err
    assert not (root / "runs").exists()


def test_runs_that_is_a_file_is_refused_before_training(root, monkeypatch, capsys):
    (root / "runs").write_text("not a directory")
    use_backend(monkeypatch, root)
    assert trial.main(RUN) == 2
    err = capsys.readouterr().err
    assert "runs: cannot create the directory" in err and "Traceback" not in err
    assert not (root / "results.tsv").exists()


def test_a_cache_that_cannot_be_written_leaves_a_crash_row_with_the_reason(root, monkeypatch, capsys):
    (root / ".autorl" / "cache").write_text("")  # a file where the base-eval cache directory goes
    use_backend(monkeypatch, root)
    assert trial.main(RUN) == 1
    assert "FileExistsError" in parse_summary(capsys.readouterr().out)["error"]
    (row,) = ledger_rows(root)
    assert row.status == "crash" and row.extras["error"].startswith("FileExistsError")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only directory")
def test_runs_that_is_not_writable_is_refused_before_training(root, monkeypatch, capsys):
    (root / "runs").mkdir(mode=0o500)
    use_backend(monkeypatch, root)
    try:
        assert trial.main(RUN) == 2
        assert "runs: not writable" in capsys.readouterr().err
    finally:
        (root / "runs").chmod(0o700)


def test_disk_full_for_eval_jsonl_records_a_crash_row_with_the_reason(root, monkeypatch, capsys):
    use_backend(monkeypatch, root)
    enospc_under(monkeypatch, root / "runs", names=("eval.jsonl",))
    assert trial.main(RUN) == 1
    out = capsys.readouterr().out
    summary = parse_summary(out)
    assert summary["status"] == "crash" and summary["verdict"] == "n/a"
    assert "eval.jsonl not saved: No space left on device" in summary["error"]
    (row,) = ledger_rows(root)
    assert row.status == "crash" and any("No_space_left_on_device" in v for v in row.extras.values())
    assert json.loads((root / summary["run_dir"] / "result.json").read_text())["status"] == "crash"


def test_disk_full_everywhere_under_runs_still_leaves_the_row_in_results_tsv(root, monkeypatch, capsys):
    use_backend(monkeypatch, root)
    monkeypatch.setattr(trial_run, "base_eval_rows", lambda *a: ([], 0.0, None))
    enospc_under(monkeypatch, root / "runs")
    assert trial.main(RUN) == 1
    out = capsys.readouterr().out
    assert "result.json not saved: No space left on device" in out
    (row,) = ledger_rows(root)
    assert row.status == "crash" and any("No_space_left_on_device" in v for v in row.extras.values())


def test_when_nothing_can_be_written_the_row_is_printed(root, monkeypatch, capsys):
    use_backend(monkeypatch, root)
    enospc_under(monkeypatch, root / "runs", names=("eval.jsonl", "result.json", "summary.txt"))

    def no_space(self: Ledger, line: str) -> None:
        raise LedgerError(f"{self.path}: cannot write: No space left on device")

    monkeypatch.setattr(Ledger, "_append", no_space)
    assert trial.main(RUN) == 1
    out = capsys.readouterr().out
    assert "results.tsv NOT updated" in out and "the row could not be saved either" in out
    start = out.index("{", out.index("results.tsv NOT updated"))
    printed = out[start : out.index("\n}", start) + 2]
    assert json.loads(printed)["status"] == "crash"
    assert parse_summary(out)["status"] == "crash"


def test_a_fault_of_the_harness_during_the_seeds_records_a_crash_row(root, monkeypatch, capsys):
    use_backend(monkeypatch, root)

    def broken_pool(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the pool broke (simulated)")

    monkeypatch.setattr("autorl.engine.pool.run_local", broken_pool)
    assert trial.main(RUN) == 1
    captured = capsys.readouterr()
    assert "RuntimeError: the pool broke (simulated)" in captured.err  # the traceback, for the developer
    assert parse_summary(captured.out)["error"] == "RuntimeError: the pool broke (simulated)"
    (row,) = ledger_rows(root)
    assert row.status == "crash" and row.verdict == "n/a"


def test_a_fault_while_concluding_records_a_crash_row(root, monkeypatch, capsys):
    use_backend(monkeypatch, root)

    def broken_extras(*args: object) -> dict[str, str]:
        raise ValueError("extras broke (simulated)")

    monkeypatch.setattr(FakeBackend, "summary_extras", broken_extras)
    assert trial.main(RUN) == 1
    assert parse_summary(capsys.readouterr().out)["error"] == "ValueError: extras broke (simulated)"
    (row,) = ledger_rows(root)
    assert row.status == "crash"


# ---- paths given on the command line ------------------------------------------------------------------


def test_autorl_root_that_is_a_file_is_refused_everywhere(root, monkeypatch, capsys):
    monkeypatch.setenv("AUTORL_ROOT", str(root / "train.toml"))
    assert trial.main(RUN) == 2
    assert "train.toml is not a directory" in capsys.readouterr().err
    for argv in (["status"], ["report"], ["ledger", "check"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert "is not a directory" in err and "no trials" not in err


@pytest.mark.parametrize("keep", ["-1", "ten", "inf"])
def test_a_bad_warm_keep_is_refused_before_anything(root, monkeypatch, capsys, keep):
    monkeypatch.setenv("AUTORL_WARM_KEEP", keep)
    assert trial.main(RUN) == 2
    assert f"AUTORL_WARM_KEEP={keep!r}: a number of seconds >= 0" in capsys.readouterr().err
    assert confirm.main() == 2
    assert f"AUTORL_WARM_KEEP={keep!r}" in capsys.readouterr().err
    assert not (root / "results.tsv").exists() and not (root / "runs").exists()


def test_empty_config_path_is_a_usage_error(root, capsys):
    with pytest.raises(SystemExit) as exc:
        trial.main(["--config", "", "--dry-run"])
    assert exc.value.code == 2
    assert "argument --config: must not be empty" in capsys.readouterr().err


def test_report_refuses_a_device_or_a_directory_before_writing_anything(root, capsys):
    Ledger(root / "results.tsv").append(a_row("r1"))
    png = root / "p.png"
    assert cli.main(["report", "--out", "/dev/full"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: /dev/full: exists and is not a regular file") and "wrote" not in err
    assert cli.main(["report", "--out", str(png), "--md", str(root)]) == 2
    assert "exists and is a directory" in capsys.readouterr().err
    assert not png.exists()  # the PNG is not written when the table cannot be
    assert cli.main(["report", "--out", str(png), "--md", str(root / "t.md")]) == 0
    assert png.read_bytes().startswith(b"\x89PNG") and "| trial |" in (root / "t.md").read_text()


# ---- the atomic writer ---------------------------------------------------------------------------------


def test_atomic_writer_concurrent_writers_never_share_a_temp_file_or_tear_a_file(tmp_path):
    target = tmp_path / "base-cache.jsonl"
    contents = [(str(k) * 100_000).encode() for k in range(4)]
    errors: list[BaseException] = []

    def writer(data: bytes) -> None:
        try:
            for _ in range(25):
                atomic.write_bytes(target, data)
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(c,)) for c in contents]
    for t in threads:
        t.start()
    seen = set()
    while any(t.is_alive() for t in threads):
        if target.exists():
            seen.add(target.read_bytes())
    for t in threads:
        t.join()
    assert not errors
    assert seen <= set(contents) and target.read_bytes() in contents  # only whole files are ever seen
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temp file left


def test_atomic_writer_failure_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "result.json"
    target.write_text("old")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as exc:
        atomic.write_text(target, "new")
    assert exc.value.filename == str(target) and exc.value.errno == errno.ENOSPC
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_base_eval_is_written_in_the_trials_own_directory_then_cached(root, monkeypatch, capsys):
    use_backend(monkeypatch, root)
    assert trial.main(RUN) == 0
    run_dir = root / parse_summary(capsys.readouterr().out)["run_dir"]
    (cached,) = (root / ".autorl" / "cache").glob("base-*.jsonl")
    assert read_jsonl(cached) == read_jsonl(run_dir / "base_eval.jsonl") != []
    assert [p.name for p in cached.parent.iterdir()] == [cached.name]


# ---- no untracked file runs inside run.py --------------------------------------------------------------


def test_an_untracked_module_at_the_root_never_runs_inside_run_py(tmp_path):
    """A copy of the repository (its tracked files, as in the working tree) with an untracked json.py that
    would shadow the standard library: run.py must refuse the modified harness without ever running it."""
    repo = tmp_path / "repo"
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for name in filter(None, tracked):
        if (REPO / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, repo / name)
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "copy"], cwd=repo, check=True)
    marker = tmp_path / "MARKER"
    for module in ("json.py", "subprocess.py", "importlib.py"):
        (repo / module).write_text(f"open({str(marker)!r}, 'a').write({module!r})\nraise SystemExit(99)\n")
    env = {k: v for k, v in os.environ.items() if k != "AUTORL_ROOT"}
    proc = subprocess.run(
        [sys.executable, "run.py", "--budget", "1", "--seeds", "1"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert not marker.exists(), marker.read_text()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "modified: json.py" in proc.stderr and "modified: subprocess.py" in proc.stderr


# ---- signals at every stage: nothing recorded before a seed started, one `interrupted` row after ----------


def signal_during(monkeypatch: pytest.MonkeyPatch, owner: object, name: str, sig: signal.Signals) -> None:
    """`owner.name` sends `sig` to this process, then does its work (the handler runs at once)."""
    real = getattr(owner, name)

    def signalled(*args: object, **kwargs: object) -> object:
        os.kill(os.getpid(), sig)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, signalled)


def test_a_signal_during_validation_records_nothing(root, monkeypatch, capsys):
    use_backend(monkeypatch, root)
    signal_during(monkeypatch, LLMTrack, "load_config", signal.SIGINT)
    # a terminal's SIGINT (a test runner's worker may ignore it, or an earlier test may have left a handler)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert trial.main(RUN) == 130
    finally:
        signal.signal(signal.SIGINT, previous)
    assert "interrupted before training started: nothing recorded" in capsys.readouterr().err
    assert not (root / "runs").exists() and not (root / "results.tsv").exists()


def test_ctrl_c_while_run_py_loads_says_so_and_exits_130(root):
    """SIGINT in run.py's first second (the harness still importing): the line every early stop prints and
    exit 130, not an import traceback (a replay of 2026-12-02 got an empty log). Sent once the harness's
    imports are under way (/proc: numpy's extension is mapped), as a terminal's Ctrl-C finds them."""
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "run.py"), "--dry-run"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "AUTORL_ROOT": str(root)},
    )
    while "numpy" not in Path(f"/proc/{proc.pid}/maps").read_text():
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert err.strip() == "[trial] interrupted before training started: nothing recorded", err
    assert not (root / "runs").exists() and not (root / "results.tsv").exists()


def test_a_signal_before_any_seed_started_records_nothing(root, monkeypatch, capsys):
    """Stopped during the base eval (after the run line): no seed trained, so no row to mark and no run
    directory; the line says so (a replay of 2026-12-02 got a row of a Ctrl-C sent before the run line)."""
    use_backend(monkeypatch, root)
    signal_during(monkeypatch, trial_run, "base_eval_rows", signal.SIGTERM)
    assert trial.main(RUN) == 143
    out = capsys.readouterr().out
    run_id = out.split("[trial] run ")[1].split(":")[0]
    assert f"[trial] stopped before any seed started: {run_id} recorded nothing" in out
    assert not (root / "results.tsv").exists() and not (root / "runs" / run_id).exists()


def test_an_interrupted_trial_s_summary_lines_describe_its_evaluated_seeds_only(root, monkeypatch, capsys):
    """A stop during the second seed's eval (one seed at a time): that seed trained and has weights but was
    never evaluated, so the backend's summary lines (the classic track's solved_seeds, time_to_solve) are
    told of the first seed only (a replay saw an interrupted trial's solved_seeds count a seed with no
    eval)."""
    backend = FakeBackend("ok", 0.6, scripts_dir=root)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)
    told: list[int] = []
    monkeypatch.setattr(
        backend, "summary_extras", lambda cfg, collected, rows: told.append(len(collected)) or {}
    )
    real = seed_module.run_eval

    def stop_in_the_second(launch, out, log, stop=None):
        if out.parent.name == "seed-1":
            os.kill(os.getpid(), signal.SIGTERM)
        return real(launch, out, log, stop)

    monkeypatch.setattr(seed_module, "run_eval", stop_in_the_second)
    assert trial.main([*RUN, "--seeds", "2", "--parallel", "1"]) == 143
    (row,) = ledger_rows(root)
    assert row.status == "interrupted" and "1 seed(s) evaluated" in capsys.readouterr().out
    assert (root / "runs" / row.run_id / "seed-1" / "weights" / "quality.txt").exists()  # it trained
    assert told == [1]


def test_a_stopped_trial_run_again_keeps_its_finished_seeds(root, monkeypatch, capsys):
    """SIGTERM once the first of three seeds (one at a time) finished: an interrupted row, and the line says
    the seed is kept. The same config run again draws the same seeds and keeps that one (its files
    hard-linked, not trained again), trains the others and says so in its log, summary and row; the pooled
    rows tell the three seeds apart; its seconds count all three (the row holds one decimal). A stop of that
    second run before any of its seeds started records nothing."""
    use_backend(monkeypatch, root)
    three = [*RUN, "--seeds", "3", "--parallel", "1"]
    report = trial_run.report_seed

    def stop_after_the_first(result):
        report(result)
        if result.index == 0:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(trial_run, "report_seed", stop_after_the_first)
    assert trial.main(three) == 143
    (stopped,) = ledger_rows(root)
    assert stopped.status == "interrupted" and len(stopped.seed_list) == 1
    assert (
        "1 seed(s) evaluated; recording the trial as interrupted; the same config run again keeps them"
        in (capsys.readouterr().out)
    )
    monkeypatch.setattr(trial_run, "report_seed", report)
    with monkeypatch.context() as m:
        signal_during(m, trial_run, "base_eval_rows", signal.SIGTERM)
        assert trial.main(three) == 143
    assert "recorded nothing" in capsys.readouterr().out and len(ledger_rows(root)) == 1

    assert trial.main(three) == 0
    out = capsys.readouterr().out
    seed = stopped.seed_list[0]
    kept = f"kept: 1 of 3 seeds ({seed}) finished in {stopped.run_id} before its stop: not trained again"
    assert f"{kept}, 2 to run" in out
    row = ledger_rows(root)[-1]
    assert row.status == "ok" and row.seed_list == [seed, str(int(seed) + 1), str(int(seed) + 2)]
    assert row.extras == {**(row.extras or {}), "kept_seeds": "1", "kept_from": stopped.run_id}
    assert parse_summary(out)["kept_seeds"] == f"1 of 3, finished in {stopped.run_id} (stopped)"
    assert cli.main(["show", row.run_id]) == 0
    assert f"kept seeds: 1 of 3, finished in {stopped.run_id} (stopped), not trained again" in (
        capsys.readouterr().out
    )
    there, here = root / "runs" / stopped.run_id / "seed-0", root / "runs" / row.run_id / "seed-0"
    assert (here / "eval.jsonl").stat().st_ino == (there / "eval.jsonl").stat().st_ino  # not trained again
    assert out.count("stopped at the training budget") == 2  # seeds 2 and 3 trained, seed 1 did not
    pooled = read_jsonl(root / "runs" / row.run_id / "eval.jsonl")
    assert sorted({str(r["seed"]) for r in pooled}) == row.seed_list
    outcomes = [
        json.loads((root / "runs" / row.run_id / f"seed-{k}" / "outcome.json").read_text()) for k in range(3)
    ]
    assert row.training_seconds == pytest.approx(sum(o["training_seconds"] for o in outcomes), abs=0.051)
    assert row.eval_seconds == pytest.approx(sum(o["eval_seconds"] for o in outcomes), abs=0.051)


def test_a_signal_while_the_trial_records_keeps_its_own_status(root, monkeypatch, capsys):
    """A signal after the seeds ended, while the row is appended: the finished trial keeps its status (a
    signal mid-training records `interrupted`: tests/test_parallel.py)."""
    use_backend(monkeypatch, root)
    signal_during(monkeypatch, Ledger, "append", signal.SIGTERM)
    assert trial.main(RUN) == 143
    (row,) = ledger_rows(root)
    assert row.status == "ok"
    assert parse_summary(capsys.readouterr().out)["status"] == "ok"


# ---- eval rows: checked wherever they are read -----------------------------------------------------------

BAD_EVAL = """
import json, sys
rows = [{"env": "toy", "example_id": "0", "sample": 0, "score": 1.0}, {"env": "toy", "example_id": "1"}]
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\\n" for r in rows))
print(json.dumps({"eval_score": 1.0}), flush=True)
"""


def test_an_eval_writing_malformed_rows_is_a_crash_row_not_a_traceback(root, monkeypatch, capsys):
    use_backend(monkeypatch, root)
    monkeypatch.setattr(trial_run, "base_eval_rows", lambda *a: ([], 0.0, None))
    (root / "fake_eval.py").write_text(BAD_EVAL)
    assert trial.main(RUN) == 1
    out = capsys.readouterr().out
    assert "eval.jsonl: eval row 2: score None is not a finite number" in out and "Traceback" not in out
    (row,) = ledger_rows(root)
    assert row.status == "crash" and row.eval_score is None  # no score


def test_a_corrupt_base_eval_cache_is_computed_again(root, monkeypatch, capsys):
    use_backend(monkeypatch, root)
    assert trial.main(RUN) == 0
    (cache,) = (root / ".autorl" / "cache").glob("base-*.jsonl")
    good = cache.read_text()
    cache.write_text('{"env": "toy", "example_id": "0", "score": NaN}\n')
    assert trial.main(RUN) == 0
    assert "evaluating the untrained base model" in capsys.readouterr().out
    assert cache.read_text() == good


def test_atomic_writer_keeps_the_replaced_files_permissions(tmp_path):
    target = tmp_path / "train.toml"
    target.write_text("old")
    target.chmod(0o600)
    atomic.write_text(target, "new")
    assert target.read_text() == "new" and target.stat().st_mode & 0o777 == 0o600
    atomic.write_text(tmp_path / "fresh.json", "{}")
    assert (tmp_path / "fresh.json").stat().st_mode & 0o777 == 0o644


def test_output_whose_reader_is_gone_is_dropped_not_raised():
    """run.py's streams (autorl/io/streams.py): an agent stopped while it read the trial's output through a
    pipe leaves the trial printing into a pipe without a reader; the writes are dropped, not raised, so the
    trial goes on to record its row (tests/test_swarm.py stops a swarm mid-trial that way)."""
    from autorl.io.streams import Surviving

    read, write = os.pipe()
    os.close(read)
    stream = open(write, "w", buffering=1)
    out = Surviving(stream)
    assert out.write("[trial] SIGTERM: stopping\n") == 26 and out.broken  # the line flushed into no reader
    out.write("x" * 100_000)
    out.flush()
    assert out.fileno() == write  # everything else is the stream's own
    with contextlib.suppress(BrokenPipeError):
        stream.close()
