"""results.tsv: locked atomic appends, validation without rewriting, best-trial lookup, mark."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest

from autorl.record.context import ResearchContext, best_kept
from autorl.record.ledger import Ledger, LedgerError
from autorl.record.row import COLUMNS, LedgerRow


def row(run_id: str, score: float | None = 0.5, **kw) -> dict:
    base = {
        "run_id": run_id,
        "commit": "abc1234",
        "track": "llm",
        "backend": "embedded",
        "eval_score": score,
        "status": "ok",
        "config_hash": "cfg",
        "harness_hash": "h1",
        "eval_hash": "e1",
        "description": f"trial {run_id}",
    }
    base.update(kw)
    return base


def test_append_creates_header_and_round_trips(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "results.tsv")
    ledger.append(row("r1", 0.55, description="tab\there\nnewline", env_scores={"arith": 0.6, "gsm": 0.5}))
    ledger.append(row("r2", None, status="crash", seeds=[3, 4], solved_seeds="5/5"))
    lines = (tmp_path / "results.tsv").read_text().splitlines()
    assert lines[0].split("\t") == COLUMNS
    assert len(lines) == 3
    rows = ledger.rows()
    assert rows[0].description == "tab here newline"  # sanitised: one cell, one line
    assert rows[0].decision == "pending"
    assert rows[0].eval_score == pytest.approx(0.55)  # read back as the typed row it was written from
    assert rows[0].env_scores == {"arith": 0.6, "gsm": 0.5}
    assert rows[0].timestamp
    assert rows[1].eval_score is None and rows[1].status == "crash"
    assert rows[1].seeds == "3,4" and rows[1].seed_list == ["3", "4"]
    assert rows[1].extras == {"solved_seeds": "5/5"}  # unknown keys are kept in extras, not dropped


def test_every_committed_ledger_reads_into_the_row_model_and_writes_back_byte_for_byte() -> None:
    """One row shape: each results.tsv the repository has committed (the recorded sessions' and studies')
    reads into LedgerRow, and the row written again is the line it was read from, so nothing a trial recorded
    is lost or changed by reading it (a file of an earlier header: its columns, the newer ones empty)."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    listed = subprocess.run(["git", "ls-files", "*results.tsv"], cwd=root, capture_output=True, text=True)
    files = [root / f for f in listed.stdout.split()]
    assert len(files) >= 10  # the sessions and studies of docs/
    for path in files:
        ledger = Ledger(path)
        header, *lines = path.read_text().splitlines()
        rows = ledger.rows()
        assert len(rows) == len(lines) and all(isinstance(r, LedgerRow) for r in rows)
        for line, r in zip(lines, rows, strict=True):
            written = dict(zip(COLUMNS, ledger.format_row(r.as_dict()).rstrip("\n").split("\t"), strict=True))
            cells = dict(zip(header.split("\t"), line.split("\t"), strict=True))
            assert written == dict.fromkeys(COLUMNS, "") | cells, (path, r.run_id)
        assert any(r.eval_score is not None and r.seed_scores for r in rows), path  # numbers were read


def _writer(path: str, worker: int, n: int) -> None:
    ledger = Ledger(Path(path))
    for i in range(n):
        # Long descriptions make any interleaving of two writes visible as a broken row.
        ledger.append(row(f"w{worker}-{i}", i / n, description=f"w{worker}-{i} " + "x" * 2000))


def test_concurrent_appends_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "results.tsv"
    workers, per_worker = 4, 100
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(path), w, per_worker)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    rows = Ledger(path).rows()  # validates every row's field count
    assert len(rows) == workers * per_worker
    assert len({r.run_id for r in rows}) == workers * per_worker
    for r in rows:
        assert r.description == f"{r.run_id} " + "x" * 2000
    assert path.read_text().count("\n") == workers * per_worker + 1  # exactly one header


@pytest.mark.parametrize(
    ("content", "line", "words"),
    [
        ("run\tscore\n1\t0.5\n", 1, "missing columns"),
        ("\t".join(COLUMNS) + "\n" + Ledger(Path("r")).format_row(row("old")) + "a\tb\n", 3, "2 fields"),
        ("\t".join(COLUMNS) + "\n" + "\t".join(["x"] * len(COLUMNS)), 2, "no newline"),
    ],
    ids=["missing columns", "2 fields", "no newline"],  # a row's timestamp in an id differs between workers
)
def test_malformed_file_is_reported_never_rewritten(tmp_path: Path, content: str, line: int, words: str):
    path = tmp_path / "results.tsv"
    path.write_text(content)
    ledger = Ledger(path)
    with pytest.raises(LedgerError) as err:
        ledger.append(row("new"))
    assert f"results.tsv:{line}:" in str(err.value) and words in str(err.value)
    assert path.read_text() == content  # untouched
    with pytest.raises(LedgerError):
        ledger.mark("keep")
    assert path.read_text() == content


def test_best_kept_same_eval_and_harness(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "results.tsv")
    assert ledger.best_kept(ResearchContext("llm", "e1", "h1", None)) is None
    ledger.append(row("crash0", None, status="crash"))
    assert (
        ledger.best_kept(ResearchContext("llm", "e1", "h1", None)) is None
    )  # no ok trial: nothing to compare with
    ledger.append(row("base", 0.40))
    ledger.append(row("base2", 0.45, decision="discard"))
    # Nothing kept yet: the earliest ok trial (the baseline) is the reference, not the higher repeat.
    assert ledger.best_kept(ResearchContext("llm", "e1", "h1", None)).run_id == "base"
    ledger.append(row("k1", 0.50, decision="keep"))
    ledger.append(row("k2", 0.60, decision="keep"))
    ledger.append(row("k3", 0.55, decision="keep"))
    ledger.append(row("d1", 0.90, decision="discard"))
    ledger.append(row("other-eval", 0.95, decision="keep", eval_hash="e2"))
    ledger.append(row("other-harness", 0.95, decision="keep", harness_hash="h2"))
    ledger.append(row("classic", 400.0, decision="keep", track="classic"))
    assert ledger.best_kept(ResearchContext("llm", "e1", "h1", None)).run_id == "k2"
    assert ledger.best_kept(ResearchContext("llm", "e2", "h1", None)).run_id == "other-eval"
    assert ledger.best_kept(ResearchContext("classic", "e1", "h1", None)).run_id == "classic"
    assert best_kept(ledger.rows(), ResearchContext("llm", "e9", "h1", None)) is None


def test_mark_latest_by_default_and_by_run_id(tmp_path: Path) -> None:
    path = tmp_path / "results.tsv"
    ledger = Ledger(path)
    ledger.append(row("20250101-000000-aaa"))
    ledger.append(row("20250101-000100-bbb"))
    ledger.append(row("20250101-000200-ccc", None, status="crash"))
    with pytest.raises(LedgerError, match="no score"):
        ledger.mark("keep")  # the latest trial crashed
    marked = ledger.mark("crash", lesson="OOM at\tstep 3\nsee log")
    assert marked.run_id == "20250101-000200-ccc" and marked.lesson == "OOM at step 3 see log"
    ledger.mark("keep", run_id="20250101-000100", lesson="lr 3e-6 helps")  # unique prefix
    with pytest.raises(LedgerError, match="ambiguous"):
        ledger.mark("discard", run_id="20250101")
    with pytest.raises(LedgerError, match="no trial"):
        ledger.mark("discard", run_id="nope")
    with pytest.raises(LedgerError, match="decision must be"):
        ledger.mark("maybe")
    rows = ledger.rows()
    assert [r.decision for r in rows] == ["pending", "keep", "crash"]
    assert rows[1].lesson == "lr 3e-6 helps"
    assert rows[0].lesson == ""
    assert not list(tmp_path.glob("*.tmp"))  # the atomic replace left nothing behind


def _marker(path: str, n: int) -> None:
    ledger = Ledger(Path(path))
    for i in range(n):
        ledger.mark("discard", run_id="m0", lesson=f"pass {i}")


def test_mark_and_append_concurrently_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "results.tsv"
    Ledger(path).append(row("m0"))
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(path), w, 60)) for w in range(2)]
    procs.append(ctx.Process(target=_marker, args=(str(path), 60)))
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    rows = Ledger(path).rows()
    assert len(rows) == 1 + 2 * 60
    assert rows[0].decision == "discard" and rows[0].lesson == "pass 59"


@pytest.mark.parametrize("old_rows", [1, 0])
@pytest.mark.parametrize("version", [0, 1, 3])  # header versions 1, 2 and 4
def test_a_ledger_of_the_earlier_header_is_read_and_upgraded_keeping_every_row(
    tmp_path: Path, old_rows: int, version: int
) -> None:
    from autorl.record.row import LEGACY_COLUMNS

    old = LEGACY_COLUMNS[version]
    path = tmp_path / "results.tsv"
    cells = {c: "" for c in old} | {"run_id": "old-1", "track": "llm", "status": "ok", "decision": "keep"}
    path.write_text("\t".join(old) + "\n" + ("\t".join(cells[c] for c in old) + "\n") * old_rows)
    ledger = Ledger(path)
    assert [r.run_id for r in ledger.rows()] == ["old-1"] * old_rows
    assert all(r.total_seconds is None for r in ledger.rows())  # the newer columns read empty
    ledger.append(row("new-1"))
    assert path.read_text().splitlines()[0].split("\t") == COLUMNS
    assert [r.run_id for r in ledger.rows()] == ["old-1"] * old_rows + ["new-1"]


def test_what_an_idea_not_kept_costs_leaves_the_baseline_repeat_out() -> None:
    """`autorl status`'s cost line: the baseline's noise-floor repeat (its config re-run, `inconclusive`)
    is not an idea, so before the first real candidate there is no figure; a candidate of another config
    not kept is one."""
    from autorl.engine.cost import dead_idea_cost

    common = {"budget": 360.0, "training_seconds": 2160.0}
    base = LedgerRow.from_json(row("base", 0.66, verdict="baseline", **common))
    repeat = LedgerRow.from_json(row("rep", 0.66, verdict="inconclusive", reference_run="base", **common))
    context = ResearchContext.of(base)
    assert dead_idea_cost([base, repeat], context, 360.0) is None
    idea = row("idea", 0.6, verdict="inconclusive", reference_run="base", config_hash="other")
    cost = dead_idea_cost(
        [base, repeat, LedgerRow.from_json({**idea, "budget": 360.0, "training_seconds": 360.0})],
        context,
        360.0,
    )
    assert cost is not None and cost["trials"] == 1 and cost["seeds"] == 1.0
    # a contended idea (its seeds measured the machine) decided nothing: its seconds are not an idea's cost
    crowded = row("crowded", 0.5, verdict="inconclusive", reference_run="base", config_hash="third")
    crowded |= {"budget": 360.0, "training_seconds": 1080.0, "health": "contended"}
    rows = [base, repeat, LedgerRow.from_json({**idea, "budget": 360.0, "training_seconds": 360.0})]
    assert dead_idea_cost([*rows, LedgerRow.from_json(crowded)], context, 360.0) == cost


def test_a_longer_seed_s_estimate_grows_its_training_and_what_runs_along_it(tmp_path, monkeypatch):
    """`autorl fidelity`'s expected line: a seed at factor x the budget trains factor x longer (at most the
    long budget) and its `other` (off the training clock along the run: the classic track's in-training
    evaluations on the longer grid) grows with it; the start-up and the final eval stay. A classic study
    (studies/fidelity-estimate-2026-12-04) ran 15% over an estimate that kept `other` as it was."""
    from autorl.engine.cost import expected_wall

    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))  # no run directories: no start-up split
    # two seeds one at a time: each 1 s start-up, 10 s training, 1 s eval, and 3 s other of a 15 s wave
    kw = {"seeds": [1, 2], "parallel": 1, "startup_seconds": 2.0, "training_seconds": 20.0}
    base = LedgerRow.from_json(row("base", verdict="baseline", eval_seconds=2.0, total_seconds=30.0, **kw))
    context = ResearchContext.of(base)
    wall, trials, seed = expected_wall([base], context, 4, 2)  # type: ignore[misc]
    assert (wall, trials, seed["other"]) == (30.0, 1, 3.0)
    wall, _, seed = expected_wall([base], context, 4, 2, (4.0, 1000.0))  # type: ignore[misc]
    assert (seed["training"], seed["other"], seed["total"], wall) == (40.0, 12.0, 54.0, 108.0)
    wall, _, seed = expected_wall([base], context, 4, 2, (4.0, 25.0))  # the long budget caps the training
    assert (seed["training"], seed["other"], seed["total"], wall) == (25.0, 7.5, 34.5, 69.0)
