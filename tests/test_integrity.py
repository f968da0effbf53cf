"""Issue 14 §2 and §5: no win without training better, and what the agent sees.

Training on a held-out split is refused; only trials under the same budget are compared; the reference
cannot be lowered silently (re-marks need a reason and are kept in an append-only history); a reference
whose eval.jsonl changed is refused; `status`/`report` show every track on request.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autorl import trial
from autorl.llm.config import load_train_config
from autorl.tomlcheck import ConfigError

REPO = Path(__file__).resolve().parent.parent
TRAIN = (REPO / "train.toml").read_text()


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    return tmp_path


# ---- a training source on a held-out split -------------------------------------------------------------


@pytest.mark.parametrize("split", ["eval", "test"])
@pytest.mark.parametrize("backend", ["embedded", "prime-rl"])
def test_training_on_a_held_out_split_is_refused(root, capsys, split, backend):
    text = TRAIN.replace('split = "train"', f'split = "{split}"', 1)
    assert text != TRAIN
    path = root / "train.toml"
    path.write_text(text)
    lineno = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith(f'split = "{split}"'))
    with pytest.raises(ConfigError) as exc:
        load_train_config(path, backend)
    assert str(exc.value).startswith(f"train.toml:{lineno}: `orchestrator.train.source.0.env.taskset.split`")
    assert "held-out split" in str(exc.value)
    assert trial.main(["--config", str(path), "--backend", backend, "--dry-run"]) == 2
    assert "held-out split" in capsys.readouterr().err
    assert not (root / "results.tsv").exists() and not (root / "runs").exists()
