"""Rendering the config `rl` runs with: train.toml's raw dict plus the harness-owned keys.

The harness-owned keys: output dir, fixed run name, 1+1 GPU deployment, filesystem weight broadcast, file
metrics, no online eval, the inference server (bound to 127.0.0.1: see `bind_host`), seeds, the local-only
environment harness and, for a seed that shares the machine with others (a `Slot`), its ports and its share
of the inference GPU's memory.
Every rendered key is in the pinned schema (autorl/llm/primerl_keys.txt, prime-rl 559b447).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from autorl.engine.backend import WHOLE_MACHINE, Slot
from autorl.io import paths
from autorl.record import wandb_log

OUTPUT_SUBDIR = "primerl"  # prime-rl's output_dir, inside the seed's run dir
RUN_NAME = "autorl"  # fixed run.name: prime-rl writes to <output_dir>/<run.name>
DEFAULT_SEQ_LEN = 2048  # prime-rl's default seq_len; vLLM's max_model_len follows it

INFERENCE_PORT = 8000  # vLLM's OpenAI server; AUTORL_PRIMERL_PORT overrides (a second job on the node)
# Every server the run starts listens on the loopback interface: left unset, prime-rl's vLLM server binds
# every interface (an unauthenticated OpenAI endpoint with weight-update routes). AUTORL_PRIMERL_HOST widens
# it, an explicit multi-node choice (docs/prime-rl.md, "Network exposure").
LOOPBACK = "127.0.0.1"
# A slot's ports, from its base port (Slot.port): vLLM on the base port itself, the orchestrator -> trainer
# ZMQ rollout transport on base+10 and base+11 (prime-rl binds port and port + 1; its default is 5555), the
# env servers on base+20, base+21, ... (one per train source; prime-rl's default base is 5000). The trainer's
# torchrun rendezvous takes a free port by itself; filesystem weight broadcast and the (off) metrics server
# open none.
PORT_STRIDE = 100  # slot i's base port: AUTORL_PRIMERL_PORT + PORT_STRIDE * i
ROLLOUT_TRANSPORT_OFFSET = 10
ENV_SERVER_OFFSET = 20
VLLM_MEMORY_UTILIZATION = 0.9  # prime-rl's (vLLM's) default share of the inference GPU for one engine


def inference_port() -> int:
    """vLLM's port: $AUTORL_PRIMERL_PORT (an integer in 1024..65000) or 8000."""
    from autorl.io.tomlcheck import ConfigError

    text = os.environ.get("AUTORL_PRIMERL_PORT", str(INFERENCE_PORT))
    if not text.isdigit() or not 1024 <= int(text) <= 65000:
        raise ConfigError(f"AUTORL_PRIMERL_PORT must be an integer in 1024..65000, got {text!r}")
    return int(text)


def bind_host() -> str:
    """The address the run's servers listen on: 127.0.0.1, or the IP address in $AUTORL_PRIMERL_HOST."""
    import ipaddress

    from autorl.io.tomlcheck import ConfigError

    text = os.environ.get("AUTORL_PRIMERL_HOST", LOOPBACK)
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise ConfigError(
            f"AUTORL_PRIMERL_HOST must be an IP address to listen on (default {LOOPBACK}), got {text!r}"
        ) from None


def local_model_dir(name: str | None) -> Path | None:
    """The directory of a model name that is a local path (relative names are relative to the repo root)."""
    if not name:
        return None
    candidate = Path(name).expanduser()
    if not candidate.is_absolute():
        candidate = paths.repo_root() / candidate
    if name.startswith((".", "/", "~")) or candidate.exists():
        return candidate.resolve()
    return None


def _seq_len(data: dict[str, Any]) -> int:
    """The longest sequence any component is configured for (vLLM must hold prompt + completion)."""
    lengths = [
        data.get("seq_len"),
        data.get("orchestrator", {}).get("seq_len"),
        data.get("trainer", {}).get("model", {}).get("seq_len"),
    ]
    return max((n for n in lengths if isinstance(n, int)), default=DEFAULT_SEQ_LEN)


def render(data: dict[str, Any], run_dir: Path, seed: int, slot: Slot = WHOLE_MACHINE) -> dict[str, Any]:
    """train.toml's raw dict + the harness-owned keys = the config `rl` runs with (prime-rl key names).

    Every key added here is harness-owned: the config loader refuses them in train.toml, so nothing the
    user wrote is overwritten. A slot with a port moves every port the run opens (see PORT_STRIDE); a slot
    with a gpu_share gives vLLM that share of prime-rl's default memory utilization. The whole machine
    (the default slot) adds neither.
    """
    cfg = copy.deepcopy(data)
    run_dir = Path(run_dir).resolve()

    # The model: a local path must be absolute, `rl` runs in prime-rl's checkout.
    model = cfg.setdefault("model", {})
    local = local_model_dir(model.get("name"))
    if local is not None:
        model["name"] = str(local)

    # Where prime-rl writes: <run_dir>/primerl/autorl/{configs,logs,metrics.jsonl,broadcasts,...}.
    cfg["output_dir"] = str(run_dir / OUTPUT_SUBDIR)
    cfg["run"] = {"name": RUN_NAME}
    cfg["clean"] = True  # a retried seed reuses its directory; never resume another run's state

    # The first visible GPU serves vLLM, the second trains (CUDA_VISIBLE_DEVICES: the slot's pair or "0,1").
    cfg["deployment"] = {"type": "single_node", "num_infer_gpus": 1, "num_train_gpus": 1}
    # Filesystem broadcast writes HF safetensors to broadcasts/step_N every step: the latest weights are
    # always on disk when the budget stops the run (under NCCL only a DCP checkpoint would be).
    cfg["weight_broadcast"] = {"type": "filesystem"}

    monitors: dict[str, Any] = {"file": {"path": "metrics.jsonl"}}
    if wandb_log.enabled():
        monitors["wandb"] = {
            "project": wandb_log.project(),
            "name": f"{run_dir.parent.name}/{run_dir.name}",
        }
    cfg["monitors"] = monitors

    orch = cfg.setdefault("orchestrator", {})
    # No online eval: it would run inside the training budget; the fixed harness evaluates afterwards.
    orch.pop("eval", None)
    port = slot.port if slot.port is not None else inference_port()
    host = bind_host()
    client_host = LOOPBACK if host in ("0.0.0.0", "::") else host
    if ":" in client_host:
        client_host = f"[{client_host}]"
    orch.setdefault("model", {}).setdefault("client", {})["base_url"] = f"http://{client_host}:{port}/v1"
    if local is not None:
        # renderer "auto" only knows exact hub ids; a local directory needs one named (its chat template).
        orch["renderer"] = {"name": "default"}
    for source in orch.get("train", {}).get("source", []):
        agent = source.setdefault("env", {}).setdefault("agent", {})
        # Defaults are the `bash` harness in a remote `prime` sandbox; the harness runs everything locally.
        agent.setdefault("harness", {})["id"] = "null"
        agent.setdefault("runtime", {})["type"] = "subprocess"
        taskset = source["env"].get("taskset", {})
        if isinstance(taskset.get("data_path"), str):  # relative to our repo, not prime-rl's checkout
            data_path = Path(taskset["data_path"]).expanduser()
            taskset["data_path"] = str((paths.repo_root() / data_path).resolve())
        sampler = source.get("curriculum", {}).get("sampler", {})
        if sampler.get("type") == "difficulty_pool":
            sampler["seed"] = seed
    if slot.port is not None:  # side by side with other seeds: none of the run's ports at its default
        orch["env_server_base_port"] = port + ENV_SERVER_OFFSET
        transport = {"type": "zmq", "host": LOOPBACK, "port": port + ROLLOUT_TRANSPORT_OFFSET}
        orch["rollout_transport"] = dict(transport)
        cfg.setdefault("trainer", {})["rollout_transport"] = dict(transport)

    inference = cfg.setdefault("inference", {})
    inference["server"] = {"host": host, "port": port}
    inference["router"] = "None"  # a bare vLLM engine on server.port: one engine needs no router
    inference["vllm"] = {
        "seed": seed,  # vLLM's sampling seed (the trainer has no seed key in the pinned schema)
        # Start-up is outside the budget: CUDA graphs (enforce_eager = false) cost the budget nothing and
        # make every rollout in it faster.
        "enforce_eager": False,
        # No sample is longer than seq_len (prime-rl truncates there); vLLM need not serve the model's
        # full context.
        "max_model_len": _seq_len(cfg),
    }
    if slot.gpu_share is not None:  # k engines share the inference GPU: each gets 1/k of the default
        inference["vllm"]["gpu_memory_utilization"] = round(VLLM_MEMORY_UTILIZATION * slot.gpu_share, 4)
    return cfg


def flat_keys(data: Any, prefix: tuple[str, ...] = ()) -> Iterator[str]:
    """Every leaf key of a config as a dotted path; array-of-tables items are their index."""
    if isinstance(data, dict):
        for key, value in data.items():
            path = (*prefix, str(key))
            if isinstance(value, dict) and value:
                yield from flat_keys(value, path)
            elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                for i, item in enumerate(value):
                    yield from flat_keys(item, (*path, str(i)))
            else:
                yield ".".join(path)


def unknown_keys(config: dict[str, Any]) -> list[str]:
    """Rendered keys that the pinned prime-rl schema does not have (must be none)."""
    from autorl.llm.primerl_keys import is_primerl_key

    return [key for key in flat_keys(config) if not is_primerl_key(key)]


def to_toml(config: dict[str, Any]) -> str:
    import tomlkit

    header = "# Rendered by autorl from train.toml + harness-owned keys; run with `rl @ this-file`.\n"
    return header + tomlkit.dumps(config)


def primerl_run_dir(run_dir: Path) -> Path:
    """Where prime-rl writes the seed's logs, metrics and broadcasts (inside our run directory)."""
    return Path(run_dir) / OUTPUT_SUBDIR / RUN_NAME
