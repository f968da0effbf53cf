"""The config key reference: every field documented in its schema, docs/config.md generated from the
docstrings (and fresh), and `run.py --explain KEY`."""

from __future__ import annotations

from pathlib import Path

import pytest

from autorl.commands import configdoc
from autorl.commands.configdoc import DOC_PAGE, WRITE_COMMAND, page_with_reference, render, schemas
from autorl.commands.trial import main as run_py
from autorl.io.tomlcheck import model_keys
from autorl.llm.schema import TrainConfig


def rows(file: str) -> dict[tuple[str, str], configdoc.KeyDoc]:
    """(key, union member) -> the row of that file's reference."""
    (schema,) = [s for s in schemas() if s.file == file]
    return {(r.key, r.variant): r for r in schema.docs()}


@pytest.mark.parametrize("schema", schemas(), ids=lambda s: s.file)
def test_every_field_of_every_schema_has_a_description(schema: configdoc.Schema) -> None:
    docs = schema.docs()
    undocumented = sorted(r.key for r in docs if not r.meaning)
    assert not undocumented, f"{schema.file}: add a docstring under these fields: {undocumented}"
    # the walk reaches every key the loader accepts (model_keys walks the same models independently)
    named = {k for k in model_keys(schema.model) if not k.endswith("*")}
    assert named <= {r.key for r in docs}


def test_the_llm_schema_is_all_there() -> None:
    keys = {r.key for r in rows("train.toml").values()}
    assert {
        "trainer.optim.lr",
        "orchestrator.train.source.*.env.taskset.id",
        "trainer.model.lora.rank",
    } <= keys


def test_rows_take_type_default_and_range_from_the_field() -> None:
    llm = rows("train.toml")
    lr = llm[("trainer.optim.lr", "")]
    assert (lr.type, lr.default, lr.range) == ("float", "1e-06", "(0, 1]")
    max_norm = llm[("trainer.optim.max_norm", "")]
    assert (max_norm.type, max_norm.default) == ('float or "None"', "1.0")
    betas = llm[("trainer.optim.betas2", "")]
    assert betas.range == "[0, 1)"
    assert llm[("trainer.scheduler.decay_steps", "linear")].range == "[0, 10_000_000]"
    assert ("trainer.scheduler.decay_steps", "cosine") not in llm  # only the linear schedule has it
    assert llm[("orchestrator.algo.roles", "echo")].default == "{tool = {alpha = 0.1}}"
    assert llm[("model.name", "")].range == "non-empty"
    assert rows("eval.toml")[("env.*.max_tokens", "")].default == "required"
    gamma = rows("classic.toml")[("gamma", "")]
    assert (gamma.type, gamma.default, gamma.range) == ("float", "0.99", "(0, 1]")


def test_the_reference_gives_the_shipped_value_next_to_the_default() -> None:
    """The classic replay deleted lines of classic.toml expecting the value it read; the default a missing key
    takes is far from the shipped one for several keys. Each row shows both, the shipped one parsed from the
    repository's own file."""
    import tomllib

    classic = tomllib.loads((configdoc.REPO / "classic.toml").read_text())
    ships = configdoc.shipped("classic.toml", "unset")
    assert ships["num_envs"] == str(classic["num_envs"]) and ships["env_id"] == f'"{classic["env_id"]}"'
    num_envs = rows("classic.toml")[("num_envs", "")]
    assert num_envs.default != ships["num_envs"]  # the case the column is for
    table = render_schema_lines("classic.toml")
    assert f"| `num_envs` | int | `{num_envs.default}` | `{ships['num_envs']}` |" in table
    assert configdoc.shipped("train.toml", '"None"')["trainer.optim.lr"] == repr(
        tomllib.loads((configdoc.REPO / "train.toml").read_text())["trainer"]["optim"]["lr"]
    )


def render_schema_lines(file: str) -> str:
    (schema,) = [s for s in schemas() if s.file == file]
    return configdoc.render_schema(schema)


def test_a_source_key_left_unset_says_whose_value_it_takes() -> None:
    """The 360 s night's agent read `source.*.sampling.temperature`'s default as 1.0 where an unset source
    temperature takes the orchestrator's (0.7 in train.toml): the default column names the key it inherits
    from, for the table, each key in it and the source's group_size; a key nobody inherits keeps its value."""
    llm = rows("train.toml")
    source = "orchestrator.train.source.*"
    assert llm[(f"{source}.sampling", "")].default_text == "as `orchestrator.train.sampling`"
    temperature = llm[(f"{source}.sampling.temperature", "")].default_text
    assert temperature == "as `orchestrator.train.sampling.temperature`"
    assert llm[(f"{source}.group_size", "")].default_text == "as `orchestrator.group_size`"
    assert llm[("orchestrator.train.sampling.temperature", "")].default_text == "`1.0`"
    assert llm[(f"{source}.ratio", "")].default_text == "`1.0`"
    table = render_schema_lines("train.toml")
    inherited = "as `orchestrator.train.sampling.temperature`"
    assert f"| `{source}.sampling.temperature` | float | {inherited} |" in table


def test_backends_follow_embedded_unsupported() -> None:
    llm = rows("train.toml")
    prime_rl_only = [
        ("trainer.model.lora.rank", ""),
        ("trainer.model.compile", ""),
        ("orchestrator.token_batch_size", ""),
        ("orchestrator.algo.decay", "rae"),
        ("orchestrator.algo.length_penalty", "echo"),
        ("orchestrator.train.source.*.curriculum.gates.*.reject_min", ""),
    ]
    both = [("trainer.optim.lr", ""), ("orchestrator.algo.length_penalty", "grpo"), ("seq_len", "")]
    both += [("trainer.model.ac.freq", "")]  # activation checkpointing: the embedded trainer's too
    assert [llm[k].backends for k in prime_rl_only] == ["prime-rl"] * len(prime_rl_only)
    assert [llm[k].backends for k in both] == ["both"] * len(both)
    assert llm[("trainer.model.ac.mode", "")].backends == 'both ("selective": prime-rl)'  # one value refused
    assert all(r.backends == "" for r in rows("classic.toml").values())


def test_docs_config_md_is_generated_from_the_docstrings() -> None:
    page = DOC_PAGE.read_text()
    assert page_with_reference(page, render()) == page, f"docs/config.md is stale: run `{WRITE_COMMAND}`"


def test_a_changed_docstring_makes_the_page_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "config.md"
    page.write_text(DOC_PAGE.read_text())
    monkeypatch.setattr(configdoc, "DOC_PAGE", page)
    assert configdoc.main(["--check"]) == 0
    monkeypatch.setattr(TrainConfig.model_fields["seq_len"], "description", "A new meaning.")
    assert configdoc.main(["--check"]) == 1
    assert WRITE_COMMAND in capsys.readouterr().err
    assert configdoc.main(["--write"]) == 0
    assert "| A new meaning. |" in page.read_text()
    assert configdoc.main(["--check"]) == 0


def test_explain_prints_the_key_and_where_train_toml_sets_it(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_py(["--explain", "orchestrator.group_size"]) == 0
    out = capsys.readouterr().out
    line = (root / "train.toml").read_text().splitlines().index("group_size = 4") + 1
    for part in ("orchestrator.group_size", "type:     int", "default:  1", "[1, 4096]", "backends: both"):
        assert part in out
    assert "Completions per prompt" in out
    assert f"train.toml:{line}: group_size = 4" in out
    assert (
        not (root / "runs").exists() and not (root / "results.tsv").exists()
    )  # nothing run, nothing recorded


def test_explain_list_items_eval_toml_and_unset_keys(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_py(["--explain", "orchestrator.train.source.0.env.taskset.id"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("orchestrator.train.source.*.env.taskset.id ") and 'id = "autorl-arithmetic"' in out
    assert run_py(["--explain", "env.max_tokens"]) == 0
    out = capsys.readouterr().out
    assert "(eval.toml)" in out and out.count("eval.toml:") == 2  # both [[env]] tables set it
    assert run_py(["--explain", "trainer.optim.lr"]) == 0
    assert "not in train.toml: the default applies" in capsys.readouterr().out


def test_explain_classic_key(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (root / "classic.toml").write_text('env_id = "CartPole-v1"\nclip_coef = 0.3\n')
    assert run_py(["--track", "classic", "--explain", "clip_coef"]) == 0
    out = capsys.readouterr().out
    assert "Surrogate clip range" in out and "classic.toml:2: clip_coef = 0.3" in out
    assert "backends" not in out


def test_explain_unknown_key_exits_2_with_the_nearest(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_py(["--explain", "trainer.optim.learning_rate"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().splitlines() == [
        "error: unknown train.toml/eval.toml key `trainer.optim.learning_rate`; "
        "did you mean `trainer.optim.lr`?"
    ]
    assert run_py(["--track", "classic", "--explain", "clip_cof"]) == 2
    assert "did you mean `clip_coef`?" in capsys.readouterr().err
    assert run_py(["--explain", "clip_coef"]) == 2  # another track's key
    assert capsys.readouterr().err.strip() == (
        "error: unknown train.toml/eval.toml key `clip_coef`; it is a key of classic.toml (--track classic)"
    )


def test_explain_a_refused_key_says_why(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_py(["--explain", "orchestrator.train.source.0.env.taskset.system_prompt"]) == 2
    assert "names a file to read" in capsys.readouterr().err
    assert run_py(["--track", "classic", "--explain", "eval_episodes"]) == 2
    assert "is harness-owned" in capsys.readouterr().err
    assert run_py(["--explain", "env.seed"]) == 0  # eval.toml's sampling seed is a key of its own schema


def test_explain_a_taskset_field_shows_only_its_own_lines(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (root / "train.toml").read_text() + 'split = "train"\n'
    (root / "train.toml").write_text(text)
    assert run_py(["--explain", "orchestrator.train.source.env.taskset.split"]) == 0
    out = capsys.readouterr().out
    assert "free-form" in out and f'train.toml:{len(text.splitlines())}: split = "train"' in out
    assert "id =" not in out
