"""train.toml validation: accepted keys, defaults, every rejection class and its message."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autorl.io.tomlcheck import ConfigError, key_lines, model_keys
from autorl.llm.config import EMBEDDED_UNSUPPORTED, REFUSED, load_train_config
from autorl.llm.primerl_keys import is_primerl_key, primerl_schema_keys
from autorl.llm.schema import TrainConfig

# The reference's minimal 2-GPU example (prime-rl.md §3) minus the harness-owned keys
# (env.agent, weight_broadcast, inference).
VALID = """\
max_steps = 20
seq_len = 2048

[model]
name = "Qwen/Qwen3-0.6B"

[orchestrator]
batch_size = 64
group_size = 8

[orchestrator.train.sampling]
max_completion_tokens = 512

[[orchestrator.train.source]]
name = "gsm8k"

[orchestrator.train.source.env.taskset]
id = "gsm8k"
split = "train"      # gsm8k taskset default is "test"

[trainer.optim]
lr = 3e-6
"""

MINIMAL = """\
[[orchestrator.train.source]]
env.taskset.id = "arithmetic"
"""


MINIMAL_TABLES = """\
[[orchestrator.train.source]]
[orchestrator.train.source.env.taskset]
id = "arithmetic"
"""


def write(tmp_path: Path, text: str, name: str = "train.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def error(tmp_path: Path, text: str, **kwargs) -> str:
    with pytest.raises(ConfigError) as exc:
        load_train_config(write(tmp_path, text), **kwargs)
    return str(exc.value)


def line_no(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


# ---- acceptance and defaults -------------------------------------------------------------------------


def test_full_valid_config_is_accepted(tmp_path):
    cfg = load_train_config(write(tmp_path, VALID))
    m = cfg.model
    assert m.max_steps == 20 and m.seq_len == 2048 and m.model.name == "Qwen/Qwen3-0.6B"
    assert m.trainer.optim.lr == 3e-6
    assert m.orchestrator.batch_size == 64 and m.orchestrator.group_size == 8
    src = m.orchestrator.train.source[0]
    assert src.name == "gsm8k" and src.env.taskset.id == "gsm8k"
    assert src.env.taskset.model_extra == {"split": "train"}  # taskset fields are the taskset's own
    # prime-rl semantics: a source inherits the orchestrator's group_size and the group-level sampling
    assert src.group_size == 8
    assert src.sampling.max_completion_tokens == 512 and src.sampling.temperature == 1.0
    assert cfg.data["orchestrator"]["batch_size"] == 64  # raw data, exactly as written
    assert "group_size" not in cfg.data["orchestrator"]["train"]["source"][0]
    assert cfg.text == write(tmp_path, VALID).read_text()
    assert len(cfg.config_hash) == 12


def test_defaults_equal_primerl(tmp_path):
    m = load_train_config(write(tmp_path, MINIMAL)).model
    assert m.model.name == "Qwen/Qwen3-0.6B"
    assert m.max_steps is None and m.seq_len == 2048
    o = m.trainer.optim
    assert (o.type, o.lr, o.weight_decay, o.max_norm, o.betas1, o.betas2) == (
        "adamw",
        1e-6,
        0.01,
        1.0,
        0.9,
        0.999,
    )
    assert m.trainer.scheduler.type == "constant"
    loss = m.trainer.loss
    assert (loss.type, loss.dppo_mask_low, loss.dppo_mask_high, loss.adv_tau, loss.kl_tau) == (
        "default",
        0.2,
        0.2,
        1.0,
        1e-3,
    )
    orch = m.orchestrator
    assert (orch.batch_size, orch.group_size, orch.max_off_policy_steps, orch.token_batch_size) == (
        128,
        1,
        8,
        None,
    )
    assert orch.algo.type == "grpo" and orch.algo.length_penalty is None
    assert orch.train.filter_zero_advantages is True
    assert (orch.train.sampling.temperature, orch.train.sampling.max_completion_tokens) == (1.0, None)
    src = orch.train.source[0]
    assert (src.name, src.resolved_name, src.ratio, src.group_size, src.curriculum) == (
        None,
        "arithmetic",
        1.0,
        1,
        None,
    )
    tm = m.trainer.model  # prime-rl trainer defaults: attn auto, compile on, optimizer CPU offload, no LoRA
    assert (tm.attn, tm.compile is not None, tm.optim_cpu_offload, tm.lora) == ("auto", True, True, None)


def test_scheduler_and_loss_variants_defaults(tmp_path):
    m = load_train_config(
        write(
            tmp_path,
            "max_steps = 50\n"
            + MINIMAL
            + """
            [trainer.scheduler]
            type = "linear"
            [trainer.loss]
            type = "ipo"
            [orchestrator.algo.length_penalty]
            """,
        )
    ).model
    s = m.trainer.scheduler
    assert (s.type, s.warmup_steps, s.decay_steps, s.min_lr) == ("linear", 10, 10, 0.0)
    assert (m.trainer.loss.type, m.trainer.loss.ipo_threshold) == ("ipo", 0.1)
    lp = m.orchestrator.algo.length_penalty
    assert (lp.type, lp.num_output_tokens_weight, lp.num_input_tokens_weight, lp.num_turns_weight) == (
        "linear",
        0.25,
        0.1,
        0.1,
    )


def test_none_string_means_none(tmp_path):
    m = load_train_config(
        write(tmp_path, 'max_steps = "None"\n' + MINIMAL + '[trainer.optim]\nmax_norm = "None"\n')
    ).model
    assert m.max_steps is None and m.trainer.optim.max_norm is None


# ---- unknown keys and type errors --------------------------------------------------------------------


def test_unknown_key_names_file_line_and_nearest_key(tmp_path):
    text = MINIMAL + "\n[trainer.optim]\nlr = 1e-5\nweight_decy = 0.1\n"
    msg = error(tmp_path, text)
    n = line_no(text, "weight_decy")
    expected = "unknown key `trainer.optim.weight_decy`; did you mean `trainer.optim.weight_decay`?"
    assert msg == f"train.toml:{n}: {expected}"


def test_unknown_dotted_key_inside_table_and_in_array_item(tmp_path):
    text = MINIMAL + 'nmae = "x"\n[trainer]\noptim.learning_rate = 1e-5\n'
    msg = error(tmp_path, text)
    assert (
        f"train.toml:{line_no(text, 'nmae')}: unknown key `orchestrator.train.source.0.nmae`; "
        "did you mean `orchestrator.train.source.0.name`?"
    ) in msg
    assert (
        f"train.toml:{line_no(text, 'learning_rate')}: unknown key `trainer.optim.learning_rate`; "
        "did you mean `trainer.optim.lr`?"
    ) in msg


def test_unknown_key_that_prime_rl_has_says_so(tmp_path):
    msg = error(tmp_path, MINIMAL + "[orchestrator]\ntasks_per_minute = 10\n[trainer]\nmax_steps = 3\n")
    assert (
        "unknown key `orchestrator.tasks_per_minute`: a prime-rl key that autorl's train.toml does not" in msg
    )
    assert "unknown key `trainer.max_steps`: set the shared top-level `max_steps` instead" in msg


def test_old_schema_key_gets_its_head_equivalent(tmp_path):
    msg = error(tmp_path, MINIMAL + "[orchestrator]\nrollouts_per_example = 8\n")
    assert "`orchestrator.rollouts_per_example`: renamed: use `orchestrator.group_size`" in msg


def test_type_error(tmp_path):
    text = MINIMAL + '[trainer.optim]\nlr = "fast"\n'
    msg = error(tmp_path, text)
    assert msg.startswith(
        f"train.toml:{line_no(text, 'fast')}: `trainer.optim.lr`: Input should be a valid number"
    )
    assert '(got "fast")' in msg


def test_single_brackets_for_a_source_explains_arrays_of_tables(tmp_path):
    msg = error(tmp_path, "[orchestrator.train.source]\nenv.taskset.id = 'x'\n")
    assert msg.startswith("train.toml:1: `orchestrator.train.source`: Input should be a valid list")
    assert "write each item as a [[orchestrator.train.source]] table" in msg


def test_generic_loader_with_another_model_and_field_problem(tmp_path):
    from pydantic import BaseModel, ConfigDict, model_validator

    from autorl.io.tomlcheck import FieldProblem, load_toml

    class Algo(BaseModel):
        model_config = ConfigDict(extra="forbid")
        num_envs: int = 4
        num_minibatches: int = 4

        @model_validator(mode="after")
        def _fits(self):
            if self.num_minibatches > self.num_envs:
                raise FieldProblem("num_minibatches", "must be <= num_envs")
            return self

    class Classic(BaseModel):
        model_config = ConfigDict(extra="forbid")
        env_id: str = "CartPole-v1"
        algo: Algo = Algo()

    path = write(tmp_path, 'env_id = "CartPole-v1"\nseed = 3\n[algo]\nnum_minibatches = 8\nnum_env = 2\n')
    with pytest.raises(ConfigError) as exc:
        load_toml(path, Classic, {"**.seed": "is owned by the harness"})
    assert str(exc.value).splitlines() == [
        "train.toml:2: `seed` is owned by the harness",
        "train.toml:5: unknown key `algo.num_env`; did you mean `algo.num_envs`?",
    ]
    path = write(tmp_path, "[algo]\nnum_minibatches = 8\n")
    with pytest.raises(ConfigError) as exc:
        load_toml(path, Classic, {})
    assert str(exc.value) == "train.toml:2: `algo.num_minibatches` must be <= num_envs"
    text, data, model = load_toml(write(tmp_path, "[algo]\nnum_envs = 8\n"), Classic, {})
    assert data == {"algo": {"num_envs": 8}} and model.algo.num_envs == 8


def test_invalid_toml_names_line(tmp_path):
    msg = error(tmp_path, MINIMAL + "[trainer.optim]\nlr = = 3\n")
    assert msg.startswith("train.toml:4: invalid TOML")


def test_several_problems_reported_one_per_line(tmp_path):
    text = MINIMAL + "[trainer.optim]\nlr = 0\nbetas1 = 1.5\n[orchestrator.train.sampling]\ntemperature = 3\n"
    lines = error(tmp_path, text).splitlines()
    assert len(lines) == 3
    assert [ln.split(":")[1] for ln in lines] == [
        str(line_no(text, k)) for k in ("lr =", "betas1", "temperature")
    ]


# ---- range checks ------------------------------------------------------------------------------------

RANGE_CASES = [
    ("[trainer.optim]\nlr = 0", "trainer.optim.lr", "greater than 0"),
    ("[trainer.optim]\nlr = -1e-6", "trainer.optim.lr", "greater than 0"),
    ("[trainer.optim]\nweight_decay = -0.1", "trainer.optim.weight_decay", "greater than or equal to 0"),
    ("[trainer.optim]\nbetas1 = 1.0", "trainer.optim.betas1", "less than 1"),
    ("[trainer.optim]\nbetas2 = -0.1", "trainer.optim.betas2", "greater than or equal to 0"),
    ("[trainer.optim]\nmax_norm = 0", "trainer.optim.max_norm", "greater than 0"),
    ('[trainer.scheduler]\ntype = "linear"\nwarmup_steps = -1', "trainer.scheduler.warmup_steps", ">= 0"),
    ('[trainer.scheduler]\ntype = "linear"\ndecay_steps = -2', "trainer.scheduler.decay_steps", ">= 0"),
    ('[trainer.scheduler]\ntype = "cosine"\nmin_lr = -1', "trainer.scheduler.min_lr", ">= 0"),
    ("[trainer.loss]\ndppo_mask_low = 0", "trainer.loss.dppo_mask_low", "greater than 0"),
    ("[trainer.loss]\ndppo_mask_high = 1.5", "trainer.loss.dppo_mask_high", "less than or equal to 1"),
    ("[trainer.loss]\nadv_tau = 0", "trainer.loss.adv_tau", "greater than 0"),
    ("[trainer.loss]\nkl_tau = -0.001", "trainer.loss.kl_tau", "greater than or equal to 0"),
    ("[orchestrator]\nbatch_size = 0", "orchestrator.batch_size", "greater than or equal to 1"),
    ("[orchestrator]\ngroup_size = 0", "orchestrator.group_size", "greater than or equal to 1"),
    ("[orchestrator.train.sampling]\ntemperature = 2.01", "orchestrator.train.sampling.temperature", "<= 2"),
    ("[orchestrator.train.sampling]\ntemperature = -0.5", "orchestrator.train.sampling.temperature", ">= 0"),
    (
        "[orchestrator.train.sampling]\nmax_completion_tokens = 0",
        "orchestrator.train.sampling.max_completion_tokens",
        "greater than or equal to 1",
    ),
    ("max_steps = 0", "max_steps", "greater than or equal to 1"),
    ("seq_len = 8", "seq_len", "greater than or equal to 16"),
]


@pytest.mark.parametrize(("snippet", "key", "fragment"), RANGE_CASES)
def test_range_checks(tmp_path, snippet, key, fragment):
    # top-level keys must come before the first table
    text = snippet + "\n" + MINIMAL if snippet[0] != "[" else MINIMAL + snippet + "\n"
    msg = error(tmp_path, text)
    first = snippet.splitlines()[-1].split("=")[0].strip()
    assert msg.startswith(f"train.toml:{line_no(text, first)}: `{key}`")
    fragment = {">= 0": "greater than or equal to 0", "<= 2": "less than or equal to 2"}.get(
        fragment, fragment
    )
    assert fragment in msg


def test_max_completion_tokens_below_seq_len(tmp_path):
    text = "seq_len = 512\n" + MINIMAL + "[orchestrator.train.sampling]\nmax_completion_tokens = 512\n"
    msg = error(tmp_path, text)
    assert (
        f"train.toml:{line_no(text, 'max_completion')}: `orchestrator.train.sampling.max_completion_tokens`"
        in msg
    )
    assert "must be < seq_len (512)" in msg


def test_min_lr_at_most_lr(tmp_path):
    text = "max_steps = 10\n" + MINIMAL + '[trainer.optim]\nlr = 1e-6\n[trainer.scheduler]\ntype = "cosine"\n'
    text += "warmup_steps = 2\nmin_lr = 1e-5\n"
    msg = error(tmp_path, text)
    n = line_no(text, "min_lr")
    assert f"train.toml:{n}: `trainer.scheduler.min_lr` (1e-05) must be <= trainer.optim.lr (1e-06)" in msg


def test_scheduler_needs_max_steps_like_prime_rl(tmp_path):
    msg = error(tmp_path, MINIMAL + '[trainer.scheduler]\ntype = "cosine"\n')
    assert "`trainer.scheduler.type` cosine needs max_steps" in msg
    msg = error(tmp_path, "max_steps = 5\n" + MINIMAL + '[trainer.scheduler]\ntype = "linear"\n')
    assert "warmup_steps (10) + decay_steps (10) must not exceed max_steps (5)" in msg


def test_unknown_union_type(tmp_path):
    msg = error(tmp_path, MINIMAL + '[trainer.scheduler]\ntype = "exponential"\n')
    assert "`trainer.scheduler.type` must be one of 'constant', 'linear', 'cosine' (got 'exponential')" in msg


def test_batch_size_divisible_by_group_size(tmp_path):
    text = MINIMAL + "[orchestrator]\nbatch_size = 100\ngroup_size = 8\n"
    msg = error(tmp_path, text)
    assert msg == (
        f"train.toml:{line_no(text, 'batch_size')}: `orchestrator.batch_size` (100) must be divisible by "
        "group_size (8)"
    )


def test_per_source_group_size_divides_batch_size(tmp_path):
    text = "[orchestrator]\nbatch_size = 64\n" + MINIMAL + "group_size = 3\n"
    msg = error(tmp_path, text)
    assert msg == (
        f"train.toml:{line_no(text, 'group_size = 3')}: `orchestrator.train.source.0.group_size` (3) must "
        "divide orchestrator.batch_size (64)"
    )


def test_source_ratio_positive(tmp_path):
    msg = error(tmp_path, MINIMAL + "ratio = 0\n")
    assert "`orchestrator.train.source.0.ratio`: Input should be greater than 0" in msg


def test_at_least_one_source(tmp_path):
    msg = error(tmp_path, "[trainer.optim]\nlr = 1e-5\n")
    assert "`orchestrator.train.source` is missing: add at least one [[orchestrator.train.source]]" in msg


def test_source_names_unique(tmp_path):
    text = MINIMAL + MINIMAL
    msg = error(tmp_path, text)
    assert "`orchestrator.train.source.1.name` 'arithmetic' is used by another source" in msg


def test_taskset_id_required(tmp_path):
    msg = error(tmp_path, "[[orchestrator.train.source]]\nname = 'x'\n")
    assert "train.toml:1: missing required key `orchestrator.train.source.0.env`" in msg


# ---- harness-owned and dangerous keys ----------------------------------------------------------------

REFUSED_CASES = [
    ("[orchestrator.eval]\ninterval = 5", "orchestrator.eval", "the evaluation is fixed (see eval.toml)"),
    ('output_dir = "/tmp/x"', "output_dir", "own run directory"),
    ('[run]\nname = "x"', "run", "owned by the harness"),
    ("[deployment]\nnum_infer_gpus = 2", "deployment", "GPUs are assigned by the harness"),
    ("[monitors.wandb]\nproject = 'x'", "monitors", "metrics.jsonl"),
    ("[ckpt]\ninterval = 5", "ckpt", "checkpoints"),
    ("[trainer.ckpt]\ninterval = 5", "trainer.ckpt", "checkpoints"),
    ("seed = 1", "seed", "changing a seed is never an experiment"),
    (
        "[orchestrator.train.source.env.taskset]\nseed = 7",
        "orchestrator.train.source.0.env.taskset.seed",
        "seed",
    ),
    ("[env_vars]\nPYTHONPATH = '/tmp'", "env_vars", "environment variables"),
    ("[trainer.env_vars]\nX = '1'", "trainer.env_vars", "environment variables"),
    ('[trainer.loss]\ntype = "custom"\nimport_path = "evil.loss"', "trainer.loss.type", "arbitrary code"),
    ('[trainer.loss]\nimport_path = "evil.loss"', "trainer.loss.import_path", "arbitrary code"),
    (
        "[orchestrator.train.source.env.agent.runtime]\ntype = 'prime'",
        "orchestrator.train.source.0.env.agent",
        "harness null, runtime subprocess",
    ),
    (
        "[orchestrator.train.source.env.taskset]\nsystem_prompt = '/etc/passwd'",
        "orchestrator.train.source.0.env.taskset.system_prompt",
        "names a file",
    ),
    (
        "[orchestrator.train.source.env.taskset.task.rewards.correct]\nfn = 'os.system'",
        "orchestrator.train.source.0.env.taskset.task.rewards.correct.fn",
        "code execution",
    ),
    (
        "[orchestrator.train.source.env.taskset.task.metrics.m]\nfn = 'os.system'",
        "orchestrator.train.source.0.env.taskset.task.metrics.m.fn",
        "code execution",
    ),
    ("[inference.vllm]\nenforce_eager = true", "inference", "starts and configures vLLM"),
    ("[weight_broadcast]\ntype = 'nccl'", "weight_broadcast", "owned by the harness"),
    ("[orchestrator.model.client]\nbase_url = 'http://x'", "orchestrator.model", "base_url"),
    ("[orchestrator.renderer]\nname = 'qwen3'", "orchestrator.renderer", "renderer"),
    ("[tokenizer]\nname = 'x'", "tokenizer", "owned by the harness"),
    ("[orchestrator]\nenv_server_base_port = 6000", "orchestrator.env_server_base_port", "per seed"),
    ('[orchestrator.algo]\ntype = "opd"', "orchestrator.algo.type", "teacher"),
]


@pytest.mark.parametrize(("snippet", "key", "fragment"), REFUSED_CASES)
def test_harness_owned_keys_are_refused(tmp_path, snippet, key, fragment):
    if snippet.startswith("[orchestrator.train.source.env.taskset]\n"):  # more keys in the taskset table
        text = MINIMAL_TABLES + snippet.split("\n", 1)[1] + "\n"
    elif snippet.startswith("[orchestrator.train.source."):  # a sub-table of the array item
        text = MINIMAL_TABLES + snippet + "\n"
    elif snippet.startswith("["):
        text = MINIMAL + snippet + "\n"
    else:  # top-level keys come before the first table
        text = snippet + "\n" + MINIMAL
    msg = error(tmp_path, text)
    lines = msg.splitlines()
    # refused once, not also reported as unknown (a custom loss also names its import_path)
    assert len(lines) == (2 if "custom" in snippet else 1), msg
    # the refused key's own line: the first line of the snippet that names its last segment
    first = text[: text.index(snippet.splitlines()[-1])].count("\n") + 1 - (len(snippet.splitlines()) - 1)
    last = key.rsplit(".", 1)[-1]
    expected_line = next(i for i, ln in enumerate(text.splitlines(), 1) if i >= first and last in ln)
    assert lines[0].startswith(f"train.toml:{expected_line}: `{key}"), msg
    assert fragment in lines[0]


def test_refused_and_invalid_keys_are_reported_together(tmp_path):
    text = MINIMAL + "[orchestrator.eval]\ninterval = 1\n[trainer.optim]\nlr = 0\n"
    lines = error(tmp_path, text).splitlines()
    assert len(lines) == 2
    assert "`orchestrator.eval` is owned by the harness" in lines[0] and "`trainer.optim.lr`" in lines[1]


def test_prepared_model_mismatch(tmp_path):
    text = VALID
    msg = error(tmp_path, text, prepared_model="/data/models/tiny")
    assert msg.startswith(f"train.toml:{line_no(text, 'Qwen/Qwen3-0.6B')}: `model.name` is 'Qwen/Qwen3-0.6B'")
    assert "owned by the harness once prepared" in msg and "`uv run prepare.py`" in msg
    # the default model name counts when the file does not set one, and the message says it is unset
    unset = error(tmp_path, MINIMAL, prepared_model="tiny")
    assert "`model.name` is not set, so prime-rl's default 'Qwen/Qwen3-0.6B' would be trained" in unset
    assert "the prepared model is 'tiny'" in unset
    assert load_train_config(write(tmp_path, VALID), prepared_model="Qwen/Qwen3-0.6B").model


PRIMERL_ONLY = (
    MINIMAL
    + """\
[orchestrator]
token_batch_size = 8192
[orchestrator.algo]
type = "rae"
[trainer.model]
compile = "None"
attn = "flash_attention_2"
[trainer.model.lora]
rank = 8
[orchestrator.train.source.curriculum.gates.easy]
type = "advantage_range"
"""
)


def test_embedded_backend_refuses_primerl_only_keys_by_name(tmp_path):
    path = write(tmp_path, PRIMERL_ONLY)
    for backend in (None, "prime-rl"):
        m = load_train_config(path, backend=backend).model
        assert m.trainer.model.compile is None and m.trainer.model.lora.rank == 8
        assert m.orchestrator.batch_size is None and m.orchestrator.token_batch_size == 8192
    msg = error(tmp_path, PRIMERL_ONLY, backend="embedded")
    for key in (
        "trainer.model.compile",
        "trainer.model.attn",
        "trainer.model.lora",
        "orchestrator.token_batch_size",
    ):
        assert f"`{key}` is supported on the prime-rl backend only" in msg
    assert '`orchestrator.algo.type = "rae"` is supported on the prime-rl backend only' in msg
    assert "`orchestrator.train.source.0.curriculum` is supported on the prime-rl backend only" in msg
    assert len(msg.splitlines()) == 6
    compile_line = line_no(PRIMERL_ONLY, "compile")
    assert (
        f"train.toml:{compile_line}: `trainer.model.compile` is supported on the prime-rl backend only" in msg
    )


def test_the_embedded_trainer_takes_activation_checkpointing_from_trainer_model_ac(tmp_path):
    """[trainer.model.ac] is the embedded trainer's too: its freq where set, 0 for ac = "None", unset the
    trainer's own default (None here: every layer of a 20M+ model, none of the tiny one); mode = "selective"
    names prime-rl's custom layers and stays prime-rl's."""
    from autorl.llm.embedded.backend import build_spec

    def freq(text: str, name: str) -> int | None:
        return build_spec(
            load_train_config(write(tmp_path, text, name), backend="embedded").model
        ).activation_checkpointing

    assert freq(MINIMAL, "a.toml") is None
    assert freq(MINIMAL + "[trainer.model.ac]\nfreq = 2\n", "b.toml") == 2
    assert freq(MINIMAL + "[trainer.model.ac]\n", "c.toml") == 1
    assert freq(MINIMAL + '[trainer.model]\nac = "None"\n', "d.toml") == 0
    msg = error(tmp_path, MINIMAL + '[trainer.model.ac]\nmode = "selective"\n', backend="embedded")
    assert '`trainer.model.ac.mode = "selective"` is supported on the prime-rl backend only' in msg


def test_batch_size_and_token_batch_size_exclusive(tmp_path):
    msg = error(tmp_path, MINIMAL + "[orchestrator]\nbatch_size = 8\ntoken_batch_size = 100\n")
    assert "set exactly one of batch_size or token_batch_size" in msg


# ---- hash, schema key list, line index, import cost --------------------------------------------------


def test_config_hash_ignores_formatting_and_changes_with_values(tmp_path):
    base = load_train_config(write(tmp_path, VALID)).config_hash
    reformatted = "# a comment\n" + VALID.replace("lr = 3e-6", "lr   =   3.0e-6   # peak").replace(
        "\n\n", "\n"
    )
    assert load_train_config(write(tmp_path, reformatted, "b.toml")).config_hash == base
    # the same values as dotted keys / inline tables
    inline = VALID.replace("[trainer.optim]\nlr = 3e-6\n", "").replace(
        "seq_len = 2048\n", "seq_len = 2048\ntrainer = { optim = { lr = 3e-6 } }\n"
    )
    assert load_train_config(write(tmp_path, inline, "c.toml")).config_hash == base
    changed = VALID.replace("lr = 3e-6", "lr = 4e-6")
    assert load_train_config(write(tmp_path, changed, "d.toml")).config_hash != base


def test_accepted_keys_all_exist_in_pinned_primerl_schema():
    keys = model_keys(TrainConfig)
    assert "trainer.optim.lr" in keys and "orchestrator.train.source.*.env.taskset.*" in keys
    assert [k for k in keys if not is_primerl_key(k)] == []
    assert len(primerl_schema_keys()) > 500


@pytest.mark.parametrize(
    "key",
    [
        "deployment.num_infer_gpus",
        "weight_broadcast.type",
        "monitors.file.path",
        "orchestrator.eval.source.0.env.taskset.id",
        "orchestrator.eval.interval",
        "inference.vllm.enforce_eager",
        "inference.server.port",
        "output_dir",
        "run.name",
        "clean",
        "orchestrator.renderer.name",
        "orchestrator.model.client.base_url",
        "trainer.model.attn",
        "orchestrator.train.source.0.env.agent.harness.id",
        "orchestrator.train.source.1.env.agent.runtime.type",
        "orchestrator.train.source.0.env.taskset.split",
        "orchestrator.train.source.0",
    ],
)
def test_harness_keys_are_primerl_keys(key):
    assert is_primerl_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "trainer.optim.learning_rate",
        "inference_gpu_ids",
        "orchestrator.sampling",
        "orchestrator.train.source.0.nmae",
        "orchestrator.train.source.0.curriculum.gates.g.bad",
    ],
)
def test_non_keys_are_not_primerl_keys(key):
    assert not is_primerl_key(key)


def test_key_lines_index_tables_arrays_and_dotted_keys():
    text = textwrap.dedent(
        """\
        max_steps = 3
        [trainer]
        optim.lr = 1e-5
        [[orchestrator.train.source]]
        name = "a"
        [orchestrator.train.source.env.taskset]
        id = "x"
        [[orchestrator.train.source]]
        env.taskset.id = "y"
        s = '''
        fake = 1
        '''
        """
    )
    lines = key_lines(text)
    assert lines[("max_steps",)] == 1
    assert lines[("trainer", "optim", "lr")] == 3
    assert lines[("orchestrator", "train", "source", "0", "name")] == 5
    assert lines[("orchestrator", "train", "source", "0", "env", "taskset", "id")] == 7
    assert lines[("orchestrator", "train", "source", "1")] == 8
    assert lines[("orchestrator", "train", "source", "1", "env", "taskset", "id")] == 9
    assert ("orchestrator", "train", "source", "1", "fake") not in lines


def test_refusal_lists_cover_the_brief():
    for key in ("output_dir", "run", "clean", "deployment", "slurm", "inference", "orchestrator.eval"):
        assert key in REFUSED or f"**.{key}" in REFUSED
    assert "trainer.model.compile" in EMBEDDED_UNSUPPORTED


def test_import_is_light():
    code = "import sys, autorl.llm.config; print('torch' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
