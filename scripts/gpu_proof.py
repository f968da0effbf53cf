"""GPU proof kit: what autorl does on this machine's GPU, measured in one command (JSON + markdown table).

    python scripts/gpu_proof.py --bundle DIR --out gpu-proof/          # on the GPU node (no uv, no network)
    uv run python scripts/gpu_proof.py --quick                         # CPU quick mode (CI runs it)
    uv run python scripts/gpu_proof.py --build-bundle DIR [--exclude pandas,...]   # networked machine (uv)

Parts (``--parts 1,2,...``; each is isolated: one that fails records its error and the others still run):

1. default: the default experiment (shipped tiny model, train.toml, eval.toml), one seed at ``--budget`` on
   the GPU and the same seed on the CPU at the same time: base and final eval_score, samples/s, peak memory.
2. qwen3: a random-init model of Qwen3-0.6B's shape (built here from a config, no hub), bf16 autocast over
   float32 master weights: embedded GRPO vs TRL's GRPOTrainer, same model/batch/group/lengths, interleaved
   A B A B (scripts/bench_trl.py): samples/s, tokens/s, peak GPU memory, MFU estimate.
3. share: k seeds of one model sharing one GPU (tiny k = 1, 2, 4, 8; the 0.6B shape k = 1, 2), each a real
   training child on its slot (``gpu_share`` = 1/k): per-seed and aggregate samples/s, and whether the k the
   slot plan (autorl/llm/embedded/slots.py) picks is the best measured.
4. cpu-trial: run.py's default LLM trial on the CPU cores with its seeds side by side (``--parallel auto``)
   against a one-seed trial: wall times and decisions per 8-hour night at the default 600 s budget.
5. eval: the fixed eval on the GPU (bf16) against the CPU (float32) on the same weights: eval_score and the
   share of identical greedy completions.
6. fast: the embedded trainer's fast path (issue 50; scripts/gpu_fast.py): StaticSampler with CUDA graphs
   against HFSampler (the same draws, tokens/s, the decode step against the bandwidth limit), the trainer with
   it against TRL, the chunked log-probs' peak memory. Run it first, alone (``--parts 6``; ``--fast-rows``
   picks some of its rows: correct, sampler, trainer, memory).

Without a CUDA device the kit runs in quick mode (a few steps and seconds per part, a scaled-down model, 20
eval examples per env); GPU-only measurements are then rows with an explicit skip reason. A node with only
torch and transformers gets the rest from the bundle: ``--bundle DIR`` (or AUTORL_GPU_BUNDLE) puts DIR on
sys.path and on the children's PYTHONPATH; nothing is installed and ``uv sync`` is never needed.
Results are written to ``--out`` (gpu_proof.json, gpu_proof.md) after every part, and after every row of
part 6; rows of parts not run this time (part 6: rows not run this time) are kept from an earlier run into
the same directory. docs/gpu.md has the details.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# As the harness runs its children (EmbeddedBackend.launch), for the trainers part 2 runs in this process:
# idle OpenMP threads sleep instead of spinning. Set before torch is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
BUNDLE_VAR = "AUTORL_GPU_BUNDLE"
BUNDLE_LIMIT_MIB = 64
# What autorl's LLM path and the TRL comparison import beyond torch, transformers (and their own deps),
# numpy and scipy; versions are taken from uv.lock. pyarrow (datasets needs it) is ~150 MiB installed: not
# bundled, the TRL row says so when the node lacks it.
BUNDLE_PACKAGES = (
    "pydantic pydantic-core annotated-types typing-inspection typing-extensions tomlkit psutil "
    "trl accelerate datasets dill multiprocess xxhash pandas python-dateutil tzdata"
).split()
PARTS = {1: "default", 2: "qwen3", 3: "share", 4: "cpu-trial", 5: "eval", 6: "fast"}
NIGHT_S = 8 * 3600
DEFAULT_BUDGET_S = 600.0  # run.py's --budget default, the budget a night of decisions is counted at
# bf16 dense peak FLOP/s by device name (first match wins); --peak-tflops overrides.
PEAK_BF16_TFLOPS = (("H100 PCIe", 756.0), ("H100", 989.0), ("H200", 989.0), ("A100", 312.0), ("L40S", 362.0))
# Qwen3-0.6B's shape (its config.json), built with random weights; the quick mode scales it down.
QWEN3_06B = dict(
    hidden_size=1024,
    num_hidden_layers=28,
    num_attention_heads=16,
    num_key_value_heads=8,
    head_dim=128,
    intermediate_size=3072,
    vocab_size=151936,
    tie_word_embeddings=True,
    max_position_embeddings=40960,
    rope_theta=1_000_000.0,
    rms_norm_eps=1e-6,
)
QWEN3_QUICK = dict(
    QWEN3_06B,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    intermediate_size=128,
    vocab_size=512,  # the project's char tokenizer has 258 tokens
)


@dataclass(frozen=True)
class Settings:
    """How long and how big each part runs; ``full`` on a GPU, ``quick`` on a CPU (CI)."""

    quick: bool
    budget_s: float  # part 1: training seconds of the seed (600 = run.py's default)
    steps: int  # part 2: measured optimizer steps per run
    warmup: int  # part 2: steps before the clock starts
    rounds: int  # part 2: A B rounds
    completion_tokens: int  # part 2: max_completion_tokens (a random model rarely stops early)
    seq_len: int  # part 2: prompt + completion
    share_budget_s: float  # part 3: training seconds per k
    tiny_ks: tuple[int, ...]  # part 3
    qwen_ks: tuple[int, ...]  # part 3
    trial_budget_s: float  # part 4: --budget of the two trials (extrapolated to 600 s)
    trial_seeds: int  # part 4: the default trial's seeds
    eval_examples: int | None  # examples per eval env; None = eval.toml as shipped
    fast_rows: tuple[str, ...] = ("correct", "sampler", "trainer", "profile", "memory")  # part 6's rows

    @classmethod
    def full(cls) -> Settings:
        return cls(False, 600.0, 10, 2, 2, 128, 256, 60.0, (1, 2, 4, 8), (1, 2), 120.0, 6, None)

    @classmethod
    def quick_mode(cls) -> Settings:
        return cls(True, 2.0, 1, 1, 2, 12, 64, 2.0, (2,), (), 2.0, 1, 20)


@dataclass
class Row:
    """One measurement: ``ok`` with figures, ``skipped`` or ``error`` with the reason."""

    part: int
    name: str
    status: str  # ok | skipped | error
    reason: str = ""
    figures: dict[str, Any] = field(default_factory=dict)


@dataclass
class Kit:
    settings: Settings
    root: Path  # AUTORL_ROOT of every trial and child: configs, the installed model, runs/
    out: Path
    cuda: bool
    device_name: str
    peak_tflops: float | None
    # autorl.engine.process.Stop: set by SIGINT/SIGTERM; running children stop, no further part starts
    stop: Any
    evals: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)  # (weights, device)
    # writes the files with a part's rows so far (part 6 calls it after each row): a call cut short keeps them
    progress: Callable[[list[Row]], None] = lambda rows: None


# --------------------------------------------------------------------------- bundle and imports


def use_bundle(bundle: Path | None) -> None:
    """The bundle (first: it holds only what the node lacks), the repo and the environments' packages on
    sys.path, and the same on PYTHONPATH for every child (trainers, evals, run.py)."""
    envs = sorted(p for p in (REPO / "environments").iterdir() if (p / "pyproject.toml").is_file())
    if bundle is not None and (bundle / "site-packages").is_dir():
        bundle = bundle / "site-packages"  # as --build-bundle lays it out
    entries = [str(p) for p in ([bundle] if bundle else []) + [REPO] + envs]
    sys.path[:0] = [e for e in entries if e not in sys.path]
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(entries + ([old] if old else []))


def missing(*modules: str) -> str | None:
    """'skipped: X missing ...' when a module cannot be imported, else None."""
    absent = [m for m in modules if importlib.util.find_spec(m) is None]
    if not absent:
        return None
    pyarrow = "; pyarrow is not in the bundle (too large): pip install pyarrow" if "pyarrow" in absent else ""
    return (
        f"skipped: {', '.join(absent)} missing (build the bundle with --build-bundle on a networked machine "
        f"and pass --bundle DIR{pyarrow})"
    )


def locked_versions(names: list[str]) -> list[str]:
    """name==version for each package, from uv.lock (the versions the project is tested with)."""
    import tomllib

    lock = tomllib.loads((REPO / "uv.lock").read_text())
    found: dict[str, str] = {}
    for pkg in lock["package"]:
        if pkg["name"] in names and "version" in pkg:
            found.setdefault(pkg["name"], pkg["version"])
    return [f"{n}=={found[n]}" if n in found else n for n in names]


def dir_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def build_bundle(bundle: Path, python_version: str, platform_tag: str, exclude: tuple[str, ...] = ()) -> int:
    """Install BUNDLE_PACKAGES but ``exclude`` (packages the node already has; no dependencies: the node's
    torch/transformers stay) for the node's Python into ``bundle/site-packages`` with uv, drop test suites,
    and check the size. The directory is named site-packages because dill (datasets' hashing, in the TRL run)
    pickles modules outside such a path by value, which fails for pyarrow's types."""
    target = bundle / "site-packages"
    if shutil.which("uv") is None:
        print("error: uv is not on PATH (pip install uv)", file=sys.stderr)
        return 2
    unknown = sorted(set(exclude) - set(BUNDLE_PACKAGES))
    if unknown:
        print(
            f"error: --exclude names packages the bundle does not hold: {', '.join(unknown)}", file=sys.stderr
        )
        return 2
    specs = locked_versions([name for name in BUNDLE_PACKAGES if name not in exclude])
    cmd = ["uv", "pip", "install", "--no-deps", "--target", str(target)]
    cmd += ["--python-version", python_version, "--python-platform", platform_tag, *specs]
    print(" ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    for tests in [p for p in target.glob("*/tests") if p.is_dir()]:
        shutil.rmtree(tests)
    size = dir_mib(bundle)
    print(f"bundle {bundle}: {size:.1f} MiB ({len(specs)} packages: {' '.join(specs)})")
    if size > BUNDLE_LIMIT_MIB:
        biggest = sorted(((dir_mib(p), p.name) for p in target.iterdir() if p.is_dir()), reverse=True)[:3]
        names = ", ".join(f"{name} {mib:.1f} MiB" for mib, name in biggest)
        print(
            f"error: the bundle is over {BUNDLE_LIMIT_MIB} MiB (largest: {names}); --exclude what the node "
            "already has (e.g. pandas,python-dateutil,tzdata)",
            file=sys.stderr,
        )
        return 1
    return 0


# --------------------------------------------------------------------------- the kit's working root


def make_root(work: Path, settings: Settings) -> Path:
    """AUTORL_ROOT for the kit: train.toml, eval.toml (quick: fewer examples), the shipped model installed
    as prepare.py installs it, and a CPU-only machine file (part 4 is the CPU default)."""
    import tomlkit

    from autorl.io import paths
    from autorl.io.machine import inspect, save_machine
    from autorl.llm import model_builder as mb
    from autorl.llm.config import load_train_config
    from autorl.llm.embedded.backend import EmbeddedBackend
    from autorl.llm.prepare import BUILTIN_MODEL

    root = work / "root"
    root.mkdir(parents=True)
    os.environ["AUTORL_ROOT"] = str(root)
    shutil.copyfile(REPO / "train.toml", root / "train.toml")
    doc = tomlkit.parse((REPO / "eval.toml").read_text())
    for env in doc["env"] if settings.eval_examples else []:
        env["num_examples"] = settings.eval_examples
    (root / "eval.toml").write_text(tomlkit.dumps(doc))
    model = mb.install_shipped_model(paths.repo_root() / BUILTIN_MODEL, progress=False)
    if model is None:
        raise RuntimeError("the shipped model does not match the code's recipe: run `uv run prepare.py`")
    machine = dataclasses.replace(inspect(), gpus=[], model_name=BUILTIN_MODEL, model_path=str(model))
    cfg = load_train_config(root / "train.toml", backend="embedded")
    machine.slots = [dataclasses.asdict(s) for s in EmbeddedBackend().plan_slots(cfg, machine)]
    save_machine(machine)
    return root


def default_config(kit: Kit):
    from autorl.llm.config import load_train_config

    return load_train_config(kit.root / "train.toml", backend="embedded")


def kit_backend(env: dict[str, str] | None = None, spec: dict[str, Any] | None = None, device: str = ""):
    """The embedded backend with the kit's changes: extra child environment (CUDA_VISIBLE_DEVICES="" keeps
    a child on the CPU), RunSpec fields replaced (validated here), and the eval's --device."""
    from autorl.engine.backend import WHOLE_MACHINE
    from autorl.llm.embedded.backend import EmbeddedBackend, RunSpec

    class KitBackend(EmbeddedBackend):
        def resolve(self, cfg, run_dir, seed, slot=None):
            resolved = super().resolve(cfg, run_dir, seed)
            return RunSpec.model_validate({**resolved, **(spec or {})}).model_dump()

        def launch(self, cfg, run_dir, seed, slot=None):
            launch = super().launch(cfg, run_dir, seed, slot or WHOLE_MACHINE)
            launch.env.update(env or {})
            return launch

        def eval_command(self, cfg, weights_dir, out_path, slot=None, split="eval"):
            launch = super().eval_command(cfg, weights_dir, out_path, slot or WHOLE_MACHINE, split)
            launch.env.update(env or {})
            launch.argv += ["--engine", "hf"] + (["--device", device] if device else [])
            return launch

    return KitBackend()


CPU_ONLY = {"CUDA_VISIBLE_DEVICES": ""}


def cores() -> list[int]:
    from autorl.io.machine import own_cpu_ids

    return own_cpu_ids()


def eval_rows(kit: Kit, cfg, weights: Path | None, device: str) -> list[dict[str, Any]]:
    """The fixed eval of ``weights`` (None = the base model) on ``device``, once per kit run."""
    from autorl.engine.seed import run_eval

    key = (str(weights), device)
    if key not in kit.evals:
        backend = kit_backend(CPU_ONLY if device == "cpu" else {}, device=device)
        out = kit.root / "evals" / f"{len(kit.evals)}-{device}.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        rows, _, error = run_eval(
            backend.eval_command(cfg, weights, out), out, out.with_suffix(".log"), kit.stop
        )
        if error:
            raise RuntimeError(error)
        kit.evals[key] = rows
    return kit.evals[key]


def rounded(value: float | None, digits: int) -> float | None:
    """value rounded; None (JSON null) for a figure that is missing or NaN (JSON has no NaN)."""
    return None if value is None or math.isnan(value) else round(value, digits)


def score(rows: list[dict[str, Any]]) -> float:
    from autorl.record import stats

    return stats.eval_score(rows)


# --------------------------------------------------------------------------- part 1: the default experiment


def train_default(kit: Kit, cfg, device: str, slot) -> Row:
    from autorl.engine.process import BudgetSpec
    from autorl.engine.seed import run_seed

    backend = kit_backend(CPU_ONLY if device == "cpu" else {}, device=device)
    base = score(eval_rows(kit, cfg, None, device))
    seed_dir = kit.root / "part1" / device
    budget = BudgetSpec(budget_s=kit.settings.budget_s)
    result = run_seed(backend, cfg, 0, 0, seed_dir, budget, slot, stop=kit.stop)
    if not result.evaluated:
        what = ": ".join(filter(None, (result.status, result.error)))
        if kit.stop:
            return Row(
                1, f"default/{device}", "skipped", f"skipped: the kit was stopped by a signal ({what})"
            )
        return Row(1, f"default/{device}", "error", what)
    assert result.child is not None and result.collected is not None
    trained = result.child.training_seconds
    batch = cfg.model.orchestrator.batch_size
    return Row(
        1,
        f"default/{device}",
        "ok",
        figures={
            "seed": 0,
            "budget_s": kit.settings.budget_s,
            "base_score": round(base, 4),
            "eval_score": round(score(result.eval_rows), 4),
            "steps": result.steps,
            "training_s": round(trained, 1),
            "samples_per_s": round(result.steps * batch / trained, 1) if trained else None,
            # the trainer's own peak (GPU: torch.cuda.max_memory_allocated; CPU: its RSS) and the host's
            "trainer_peak_memory_gb": rounded(result.collected.peak_memory_gb, 3),
            "peak_rss_gb": round(result.child.peak_rss_gb, 3),
            "startup_s": round(result.child.startup_seconds, 1),
            "eval_s": round(result.eval_seconds, 1),
        },
    )


def part_default(kit: Kit) -> list[Row]:
    from autorl.engine.backend import Slot

    cfg = default_config(kit)
    ids = cores()
    cpu_slot = Slot(index=0, cpus=tuple(ids[:2]), threads=1)
    gpu_slot = Slot(index=1, cpus=tuple(ids[2:4]), threads=len(ids[2:4]) or None, gpus=(0,))  # as slots.py
    jobs: dict[str, Callable[[], Row]] = {"cpu": lambda: train_default(kit, cfg, "cpu", cpu_slot)}
    if kit.cuda:
        jobs["cuda"] = lambda: train_default(kit, cfg, "cuda", gpu_slot)
    with ThreadPoolExecutor(len(jobs)) as pool:  # the GPU seed and the CPU seed at the same time
        futures = {name: pool.submit(attempt, 1, f"default/{name}", job) for name, job in jobs.items()}
    rows = [f.result() for f in futures.values()]
    if not kit.cuda:
        rows.append(Row(1, "default/cuda", "skipped", "skipped: no CUDA device"))
    return rows


# --------------------------------------------------------------------------- part 2: Qwen3-0.6B shape vs TRL


def build_qwen3_shape(kit: Kit) -> Path:
    """A random-init Qwen3 of 0.6B's shape (quick: scaled down) with the project's char tokenizer, float32."""
    out = kit.root / "models" / ("qwen3-quick" if kit.settings.quick else "qwen3-0.6b-shape")
    if (out / "config.json").is_file():
        return out
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from autorl.llm.model_builder import build_tokenizer

    tok = build_tokenizer()
    shape = QWEN3_QUICK if kit.settings.quick else QWEN3_06B
    config = Qwen3Config(
        **shape, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, dtype="float32"
    )
    torch.manual_seed(0)
    Qwen3ForCausalLM(config).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def qwen3_spec(kit: Kit, model: Path):
    """The default RunSpec on the Qwen3-shape model: every rollout trained (a random model's rewards are all
    0, so the zero-advantage filter would drop them all: raw compute is compared), in-process sampling."""
    from autorl.llm.embedded.backend import build_spec

    s = kit.settings
    spec = build_spec(default_config(kit).model)
    sources = [src.model_copy(update={"max_completion_tokens": s.completion_tokens}) for src in spec.sources]
    update = {"model_path": str(model), "filter_zero_advantages": False, "seq_len": s.seq_len}
    return spec.model_copy(update={**update, "sources": sources, "sampler": "hf"})


def script_module(name: str):
    """scripts/<name>.py as a module."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench_module():
    """scripts/bench_trl.py as a module (its bench_embedded and bench_trl)."""
    return script_module("bench_trl")


def measured(fn: Callable[[], dict[str, Any]], cuda: bool, stop) -> dict[str, Any]:
    """fn()'s figures plus its peak GPU memory (torch.cuda.max_memory_allocated), memory freed after."""
    import gc

    import torch

    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    # The embedded trainer installs its own SIGINT/SIGTERM handlers: give Ctrl-C back to the kit after it.
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        figures = fn()
    finally:
        # A Ctrl-C the trainer took (its handler sets stop_requested) stops the kit too.
        owner = getattr(signal.getsignal(signal.SIGINT), "__self__", None)
        if getattr(owner, "stop_requested", False):
            stop.request(signal.SIGINT)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    if cuda:
        figures["peak_memory_gb"] = torch.cuda.max_memory_allocated() / 2**30
        gc.collect()  # the trainer's tensors, before the next run's peak is measured
        torch.cuda.empty_cache()
    return figures


def flops_per_sample(n_params: int, prompt_tokens: float, completion_tokens: float) -> float:
    """Sampling (2N per prompt and completion token) + training forward and backward (6N per token)."""
    return 8.0 * n_params * (prompt_tokens + completion_tokens)


def prompt_tokens(spec) -> float:
    from autorl.llm.envs import load_env
    from autorl.llm.tokenizer import encode_prompt, load_tokenizer

    tok = load_tokenizer(spec.model_path)
    src = spec.sources[0]
    stream = load_env(src.taskset_id, dict(src.taskset_fields)).train_examples(0)
    return statistics.fmean(len(encode_prompt(tok, next(stream).prompt)) for _ in range(64))


def summarize(name: str, runs: list[dict[str, Any]], spec, n_params: int, kit: Kit) -> Row:
    sps = statistics.median(r["samples_per_s"] for r in runs)
    comp = statistics.median(r.get("completion_len_mean") or math.nan for r in runs)
    figures: dict[str, Any] = {
        "samples_per_s": round(sps, 2),
        "samples_per_s_runs": [round(r["samples_per_s"], 2) for r in runs],
        "completion_len_mean": rounded(comp, 1),
        "tokens_per_s": round(sps * comp, 1) if not math.isnan(comp) else None,
        "params_m": round(n_params / 1e6, 1),
    }
    if kit.cuda:
        figures["peak_memory_gb"] = round(max(r["peak_memory_gb"] for r in runs), 2)
    if kit.peak_tflops and not math.isnan(comp):
        flops = sps * flops_per_sample(n_params, prompt_tokens(spec), comp)
        figures["mfu"] = round(flops / (kit.peak_tflops * 1e12), 4)
    return Row(2, name, "ok", figures=figures)


def part_qwen3(kit: Kit) -> list[Row]:
    bench = bench_module()
    spec = qwen3_spec(kit, build_qwen3_shape(kit))
    from autorl.llm.embedded.slots import read_param_count

    n_params = read_param_count(spec.model_path) or 0
    s = kit.settings
    threads = 1 if kit.cuda else len(cores())
    trl_missing = missing("trl", "datasets", "accelerate", "pyarrow")
    ours: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    trl_error = trl_missing
    for _ in range(s.rounds):  # A B A B: drift hits both
        if kit.stop:
            return [Row(2, "qwen3", "skipped", "skipped: the kit was stopped by a signal")]
        embedded = lambda: bench.bench_embedded(spec, s.steps, s.warmup, 0, threads, "hf")  # noqa: E731
        ours.append(measured(embedded, kit.cuda, kit.stop))
        if trl_error is None:
            try:
                trl = lambda: bench.bench_trl(spec, s.steps, s.warmup, 0, threads)  # noqa: E731
                theirs.append(measured(trl, kit.cuda, kit.stop))
            except Exception as exc:
                traceback.print_exc()
                trl_error = f"{type(exc).__name__}: {exc}"
    rows = [summarize("qwen3/embedded", ours, spec, n_params, kit)]
    if trl_error is not None or not theirs:
        status = "skipped" if trl_missing else "error"
        rows.append(Row(2, "qwen3/trl", status, trl_error or "no TRL run"))
        return rows
    rows.append(summarize("qwen3/trl", theirs, spec, n_params, kit))
    rows[0].figures["ratio_vs_trl"] = round(
        rows[0].figures["samples_per_s"] / rows[1].figures["samples_per_s"], 2
    )
    return rows


# --------------------------------------------------------------------------- part 3: k seeds on one GPU


def share_slots(k: int, cuda: bool) -> list:
    """k slots on GPU 0 (gpu_share 1/k), each with its own cores; on the CPU (quick mode) cores only."""
    from autorl.engine.backend import Slot

    ids = cores()
    each = max(1, len(ids) // k)
    slots = []
    for i in range(k):
        own = tuple(ids[i * each : (i + 1) * each]) if len(ids) >= k else ()
        gpu = {"gpus": (0,), "gpu_share": None if k == 1 else 1 / k} if cuda else {}
        slots.append(Slot(index=i, cpus=own, threads=max(1, len(own)) if cuda else 1, **gpu))
    return slots


def run_k(kit: Kit, cfg, backend, label: str, k: int) -> Row:
    """k training children side by side for share_budget_s each (no eval): samples/s per seed and in all."""
    from autorl.engine.process import BudgetSpec, run_budgeted
    from autorl.engine.seed import write_resolved

    batch = cfg.model.orchestrator.batch_size
    budget = BudgetSpec(budget_s=kit.settings.share_budget_s)

    def one(slot) -> tuple[float, float | None, str | None]:
        seed_dir = kit.root / "part3" / f"{label}-k{k}" / f"seed-{slot.index}"
        write_resolved(backend, cfg, seed_dir, slot.index, slot)
        launch = backend.launch(cfg, seed_dir, slot.index, slot)
        child = run_budgeted(launch, seed_dir / "run.log", budget, stop=kit.stop)
        outcome = backend.collect(cfg, seed_dir)
        if child.status != "ok" or not child.training_seconds:
            return 0.0, None, f"seed {slot.index}: {child.reason_text}: {' | '.join(child.log_tail[-3:])}"
        return outcome.steps * batch / child.training_seconds, outcome.peak_memory_gb, None

    with ThreadPoolExecutor(k) as pool:
        results = list(pool.map(one, share_slots(k, kit.cuda)))
    errors = [e for _, _, e in results if e]
    if errors:
        return Row(3, f"share/{label}/k={k}", "error", "; ".join(errors))
    per_seed = [r for r, _, _ in results]
    peaks = [p for _, p, _ in results if p is not None]
    figures = {
        "k": k,
        "aggregate_samples_per_s": round(sum(per_seed), 1),
        "per_seed_samples_per_s": round(statistics.fmean(per_seed), 1),
        "per_seed_min": round(min(per_seed), 1),
        "peak_memory_gb_per_seed": round(max(peaks), 2) if peaks else None,
    }
    return Row(3, f"share/{label}/k={k}", "ok", figures=figures)


def plan_k(n_params: int, vocab_size: int) -> int:
    """Seeds the embedded slot plan puts on GPU 0 of this machine for a model of n_params and vocab_size."""
    from autorl.io.machine import inspect
    from autorl.llm.embedded.slots import plan_slots

    return sum(1 for slot in plan_slots(n_params, inspect(), vocab_size) if slot.gpus == (0,))


def verdict_row(label: str, rows: list[Row], planned: int) -> Row:
    """The planned k against the best measured one. A plan beyond the measured ks agrees when the aggregate
    still peaks at the largest k measured, unless a larger k was tried and failed: then None (unknown)."""
    ok = [r for r in rows if r.status == "ok"]
    if not ok:
        return Row(3, f"share/{label}/plan", "skipped", "skipped: no k was measured")
    best = max(ok, key=lambda r: r.figures["aggregate_samples_per_s"]).figures["k"]
    largest = max(r.figures["k"] for r in ok)
    failed = [r.name.rsplit("=", 1)[1] for r in rows if r.status != "ok" and "k=" in r.name]
    agrees: bool | None = planned == best or (planned > largest and best == largest)
    if planned > largest and failed:
        agrees = None  # the ks that would tell were not measured
    figures = {"plan_k": planned, "best_measured_k": best, "measured_ks": [r.figures["k"] for r in ok]}
    figures |= {"failed_ks": [int(k) for k in failed]} if failed else {}
    return Row(3, f"share/{label}/plan", "ok", figures={**figures, "plan_is_best": agrees})


def share_model(kit: Kit, cfg, label: str, ks: tuple[int, ...], overrides: dict[str, Any]) -> list[Row]:
    """k = each of ks seeds of one model side by side, then (on a GPU) the plan's k against the best."""
    from autorl.llm.embedded.slots import read_param_count, read_vocab_size
    from autorl.llm.prepare import BUILTIN_MODEL

    backend = kit_backend({} if kit.cuda else CPU_ONLY, spec={**overrides, "save_interval_s": 1e9})
    rows = [attempt(3, f"share/{label}/k={k}", lambda k=k: run_k(kit, cfg, backend, label, k)) for k in ks]
    if kit.cuda:
        model = overrides.get("model_path") or str(kit.root / BUILTIN_MODEL)
        planned = lambda: plan_k(read_param_count(model) or 0, read_vocab_size(model))  # noqa: E731
        rows.append(attempt(3, f"share/{label}/plan", lambda: verdict_row(label, rows, planned())))
    return rows


def part_share(kit: Kit) -> list[Row]:
    cfg = default_config(kit)
    s = kit.settings
    rows = share_model(kit, cfg, "tiny", s.tiny_ks, {})
    if kit.cuda and s.qwen_ks:
        spec = qwen3_spec(kit, build_qwen3_shape(kit))
        overrides = {"model_path": spec.model_path, **qwen3_overrides(spec)}
        rows += share_model(kit, cfg, "qwen3-0.6b", s.qwen_ks, overrides)
    if not kit.cuda:
        reason = "skipped: no CUDA device (quick mode ran the tiny model's seeds on CPU cores)"
        rows.append(Row(3, "share/gpu", "skipped", reason))
    return rows


def qwen3_overrides(spec) -> dict[str, Any]:
    return {
        "filter_zero_advantages": False,
        "seq_len": spec.seq_len,
        "sources": [src.model_dump() for src in spec.sources],
        "sampler": "hf",
    }


# --------------------------------------------------------------------------- part 4: the CPU default trial


def run_trial(kit: Kit, seeds: int, budget: float, parallel: str) -> tuple[float, dict[str, Any]]:
    """run.py as a user runs it, on the CPU only (CUDA hidden); returns (wall seconds, its result.json)."""
    from autorl.engine.backend import Launch
    from autorl.engine.process import BudgetSpec, run_budgeted

    before = set((kit.root / "runs").glob("*")) if (kit.root / "runs").exists() else set()
    argv = [sys.executable, str(REPO / "run.py"), "--seeds", str(seeds), "--budget", f"{budget:g}"]
    argv += ["--parallel", parallel, "--all-seeds", "--allow-dirty-harness"]
    log = kit.root / "part4" / f"trial-{seeds}x{parallel}.log"
    cap = 4 * (budget + 300) * seeds
    spec = BudgetSpec(budget_s=math.inf, startup_cap_s=cap, hang_s=cap, grace_s=30.0)
    started = time.monotonic()
    child = run_budgeted(Launch(argv=argv, cwd=kit.root, env=CPU_ONLY), log, spec, stop=kit.stop)
    wall = time.monotonic() - started
    new = sorted(set((kit.root / "runs").glob("*")) - before)
    if child.status != "ok" or not new or not (new[-1] / "result.json").is_file():
        raise RuntimeError(
            f"run.py {' '.join(argv[2:])}: {child.reason_text}: {' | '.join(child.log_tail[-5:])}"
        )
    return wall, json.loads((new[-1] / "result.json").read_text())


def per_night(wall: float, budget: float, waves: int) -> float:
    """Decisions per 8-hour night at the default budget: the trial's overhead plus 600 s per wave."""
    return NIGHT_S / (wall - budget * waves + DEFAULT_BUDGET_S * waves)


def part_cpu_trial(kit: Kit) -> list[Row]:
    s = kit.settings
    budget, seeds = s.trial_budget_s, s.trial_seeds
    # The parallel trial first: it also pays the base eval (cached for every later trial), so its figure is
    # the conservative one. Quick mode (1 seed): one trial stands for both.
    par_wall, result = run_trial(kit, seeds, budget, "auto")
    one_wall = run_trial(kit, 1, budget, "1")[0] if seeds > 1 else par_wall
    parallel = int(result["parallel"])
    waves = -(-seeds // parallel)
    figures = {
        "cores": len(cores()),
        "seeds": seeds,
        "parallel": parallel,
        "budget_s": budget,
        "wall_one_seed_s": round(one_wall, 1),
        "wall_parallel_s": round(par_wall, 1),
        "wall_ratio_parallel_vs_one": round(par_wall / one_wall, 2),
        "eval_score": round(float(result["eval_score"]), 4),
        "decisions_per_night_parallel": round(per_night(par_wall, budget, waves), 1),
        "decisions_per_night_sequential": round(per_night(seeds * one_wall, budget, seeds), 1),
    }
    return [Row(4, "cpu-trial", "ok", figures=figures)]


# --------------------------------------------------------------------------- part 5: eval GPU vs CPU


def part_eval(kit: Kit) -> list[Row]:
    cfg = default_config(kit)
    cpu = eval_rows(kit, cfg, None, "cpu")
    rows = [Row(5, "eval/cpu-fp32", "ok", figures={"eval_score": round(score(cpu), 4), "samples": len(cpu)})]
    if not kit.cuda:
        rows.append(Row(5, "eval/cuda-bf16", "skipped", "skipped: no CUDA device"))
        return rows
    gpu = eval_rows(kit, cfg, None, "cuda")
    key = lambda r: (r["env"], r["example_id"], r["sample"])  # noqa: E731
    theirs = {key(r): r["completion"] for r in gpu}
    same = sum(theirs.get(key(r)) == r["completion"] for r in cpu)
    figures = {
        "eval_score": round(score(gpu), 4),
        "samples": len(gpu),
        "identical_share": round(same / len(cpu), 4),
    }
    rows.append(
        Row(5, "eval/cuda-bf16", "ok", figures={**figures, "delta_vs_cpu": round(score(gpu) - score(cpu), 4)})
    )
    return rows


# --------------------------------------------------------------------------- running and reporting


def attempt(part: int, name: str, fn: Callable[[], Row]) -> Row:
    try:
        return fn()
    except Exception as exc:
        traceback.print_exc()
        return Row(part, name, "error", f"{type(exc).__name__}: {exc}")


def part_fast(kit: Kit) -> list[Row]:
    """Part 6: the fast path's rows (scripts/gpu_fast.py; issue 50), run first in a call of their own."""
    return script_module("gpu_fast").rows(kit, sys.modules[__name__])


PART_FUNCS: dict[int, Callable[[Kit], list[Row]]] = {
    1: part_default,
    2: part_qwen3,
    3: part_share,
    4: part_cpu_trial,
    5: part_eval,
    6: part_fast,
}
PART_NEEDS = {1: ("scipy",), 2: (), 3: (), 4: ("scipy",), 5: ("scipy",), 6: ()}  # autorl.record.stats


def run_part(kit: Kit, part: int) -> list[Row]:
    name = PARTS[part]
    reason = missing(*PART_NEEDS[part])
    if reason:
        return [Row(part, name, "skipped", reason)]
    start = time.monotonic()
    print(f"gpu_proof: part {part} ({name}) ...", flush=True)
    try:
        rows = PART_FUNCS[part](kit)
    except Exception as exc:
        traceback.print_exc()
        error = f"{type(exc).__name__}: {exc}"
        stopped = f"skipped: the kit was stopped by a signal in this part (then: {error})"
        rows = [Row(part, name, "skipped", stopped) if kit.stop else Row(part, name, "error", error)]
    print(f"gpu_proof: part {part} ({name}) done in {time.monotonic() - start:.0f} s", flush=True)
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| part | measurement | status | figures |", "|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: r.part):
        text = ", ".join(f"{k} {v}" for k, v in r.figures.items()) if r.status == "ok" else r.reason
        text = text.replace("|", "/").replace("\n", " ")
        lines.append(f"| {r.part} | {r.name} | {r.status} | {text} |")
    return "\n".join(lines) + "\n"


def write_results(out: Path, header: dict[str, Any], rows: list[Row]) -> None:
    """gpu_proof.json and gpu_proof.md in --out; rows of parts not run now are kept from the file, and
    part 6's measured rows by name (`--fast-rows` runs some of them; each row carries its date): a part-6
    row for the whole part (its error or skip) replaces every earlier one, and the other way round."""
    path = out / "gpu_proof.json"
    whole = {r.part for r in rows if r.part != 6 or r.name == PARTS[6]}  # parts whose earlier rows all go
    named = {r.name for r in rows if r.part == 6}  # part 6's rows measured now (a whole-part row among them)

    def replaced(r: dict[str, Any]) -> bool:
        if r["part"] in whole:
            return True
        return r["part"] == 6 and bool(named) and (r["name"] in named or r["name"] == PARTS[6])

    kept: list[dict[str, Any]] = []
    if path.is_file():
        kept = [r for r in json.loads(path.read_text()).get("rows", []) if not replaced(r)]
    new = [{**dataclasses.asdict(r), "device": header["device"], "date": header["date"]} for r in rows]
    all_rows = sorted(kept + new, key=lambda r: r["part"])
    path.write_text(json.dumps({**header, "rows": all_rows}, indent=2) + "\n")
    md = [f"# GPU proof kit: {header['device']}", "", f"`{header['command']}`, {header['date']}", ""]
    md.append(
        table([Row(**{k: r[k] for k in ("part", "name", "status", "reason", "figures")}) for r in all_rows])
    )
    (out / "gpu_proof.md").write_text("\n".join(md))


def describe_device() -> tuple[bool, str]:
    import torch

    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        return True, f"{props.name} ({props.total_memory / 2**30:.0f} GiB), {len(cores())} CPU cores"
    return False, f"CPU only ({platform.processor() or platform.machine()}), {len(cores())} cores"


def peak_for(device_name: str, given: float | None) -> float | None:
    if given:
        return given
    return next((tflops for key, tflops in PEAK_BF16_TFLOPS if key in device_name), None)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "gpu-proof", help="where gpu_proof.json/.md go")
    ap.add_argument(
        "--bundle", type=Path, default=os.environ.get(BUNDLE_VAR) or None, help=f"or ${BUNDLE_VAR}"
    )
    ap.add_argument("--parts", default="1,2,3,4,5", help="comma-separated part numbers")
    ap.add_argument("--quick", action="store_true", help="quick mode even on a GPU (automatic without one)")
    ap.add_argument("--budget", type=float, help="part 1 training seconds (default 600; quick 2)")
    ap.add_argument("--share-budget", type=float, help="part 3 training seconds per k (default 60)")
    ap.add_argument("--trial-budget", type=float, help="part 4 run.py --budget (default 120)")
    ap.add_argument("--steps", type=int, help="part 2 measured steps per run (default 10)")
    ap.add_argument(
        "--fast-rows",
        help="part 6's rows to run, comma-separated (default: correct,sampler,trainer,profile,memory)",
    )
    ap.add_argument("--peak-tflops", type=float, help="the GPU's bf16 dense peak, for the MFU estimate")
    ap.add_argument("--keep", action="store_true", help="keep the working directory (runs, logs, models)")
    ap.add_argument("--build-bundle", type=Path, metavar="DIR", help="build the bundle into DIR and exit")
    ap.add_argument("--python-version", default="3.12", help="the GPU node's Python (bundle)")
    ap.add_argument(
        "--exclude", default="", help="comma-separated packages the node has, left out of the bundle"
    )
    ap.add_argument("--platform", default="x86_64-manylinux_2_28", help="the GPU node's platform (bundle)")
    args = ap.parse_args(argv)
    try:
        args.parts = sorted({int(p) for p in args.parts.split(",")})
    except ValueError:
        ap.error(f"--parts: comma-separated numbers from {sorted(PARTS)}, got {args.parts!r}")
    if not set(args.parts) <= set(PARTS):
        ap.error(f"--parts: numbers from {sorted(PARTS)}, got {args.parts}")
    if args.fast_rows is not None:
        args.fast_rows = tuple(r for r in args.fast_rows.split(",") if r)
        unknown = set(args.fast_rows) - set(Settings.full().fast_rows)
        if unknown or not args.fast_rows:
            ap.error(f"--fast-rows: names from {list(Settings.full().fast_rows)}, got {args.fast_rows}")
    if args.bundle is not None and not Path(args.bundle).is_dir():
        ap.error(f"--bundle {args.bundle}: not a directory")
    for name in ("budget", "share_budget", "trial_budget", "steps", "peak_tflops"):
        value = getattr(args, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            ap.error(f"--{name.replace('_', '-')}: must be a positive number, got {value}")
    return args


def settings_for(args: argparse.Namespace, quick: bool) -> Settings:
    base = Settings.quick_mode() if quick else Settings.full()
    given = {
        "budget_s": args.budget,
        "share_budget_s": args.share_budget,
        "trial_budget_s": args.trial_budget,
        "steps": args.steps,
        "fast_rows": args.fast_rows,
    }
    return dataclasses.replace(base, **{k: v for k, v in given.items() if v is not None})


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.build_bundle:
        exclude = tuple(name for name in args.exclude.split(",") if name)
        return build_bundle(args.build_bundle.resolve(), args.python_version, args.platform, exclude)
    use_bundle(Path(args.bundle).resolve() if args.bundle else None)
    core = missing("torch", "transformers", "numpy", "pydantic", "psutil", "tomlkit")
    if core:
        print(f"error: {core}", file=sys.stderr)
        return 2
    from autorl.engine.console import EXIT_SIGNAL, Signals
    from autorl.engine.process import Stop

    stop = Stop()
    cuda, device = describe_device()
    settings = settings_for(args, args.quick or not cuda)
    header = {
        "device": device,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python scripts/gpu_proof.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "mode": "quick" if settings.quick else "full",
        "settings": dataclasses.asdict(settings),
        "python": sys.version.split()[0],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpu-proof-"))
    print(f"gpu_proof: {device}; {header['mode']} mode; parts {args.parts}; work dir {work}", flush=True)
    try:
        try:
            root = make_root(work, settings)
        except Exception as exc:  # every part needs the root: each gets a row that says why it did not run
            traceback.print_exc()
            reason = f"setup failed: {type(exc).__name__}: {exc}"
            write_results(args.out, header, [Row(p, PARTS[p], "error", reason) for p in args.parts])
            print(f"error: could not set up the kit's root in {work}: {exc}", file=sys.stderr)
            return 1
        kit = Kit(settings, root, args.out, cuda, device, peak_for(device, args.peak_tflops), stop)
        with Signals(stop):  # run.py's handling: the first signal stops gracefully, a second kills
            run_kit(kit, args.parts, header)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return EXIT_SIGNAL.get(stop.signum or signal.SIGINT, 130) if stop else 0


def run_kit(kit: Kit, parts: list[int], header: dict[str, Any]) -> None:
    rows: list[Row] = []
    kit.progress = lambda partial: write_results(kit.out, header, rows + partial)
    for part in parts:
        if kit.stop:
            rows.append(Row(part, PARTS[part], "skipped", "skipped: the kit was stopped by a signal"))
        else:
            rows += run_part(kit, part)
        write_results(kit.out, header, rows)  # after every part: a run cut short keeps what it measured
    print(table(rows))
    print(f"gpu_proof: wrote {kit.out / 'gpu_proof.json'} and {kit.out / 'gpu_proof.md'}")


if __name__ == "__main__":
    sys.exit(main())
