"""Machine inspection, the backend choice and the machine file."""

from __future__ import annotations

from autorl.io.machine import Gpu, Machine, choose_backend, inspect, load_machine, save_machine

PRIME = {"dir": "/opt/prime-rl", "commit": "559b447"}


def test_backend_choice_needs_prime_rl_and_two_gpus():
    two = [Gpu(0, "H100", 80.0), Gpu(1, "H100", 80.0)]
    assert choose_backend(two, PRIME) == "prime-rl"
    assert choose_backend(two[:1], PRIME) == "embedded"
    assert choose_backend(two, None) == "embedded"
    assert choose_backend([], None) == "embedded"


def test_inspect_reports_this_machine():
    machine = inspect()
    assert machine.cpus >= 1 and machine.ram_gb > 0
    assert machine.python.count(".") == 2
    assert machine.backend == "embedded"  # no prime-rl here


def test_machine_file_roundtrip(tmp_path):
    machine = Machine(
        python="3.11.7",
        platform="Linux x86_64",
        torch="2.13.0",
        cpus=2,
        ram_gb=24.0,
        gpus=[Gpu(0, "H100", 79.6, 78.0)],
        model_name="m",
        model_path="/m",
    )
    path = save_machine(machine, tmp_path / "machine.json")
    assert load_machine(path) == machine
    assert load_machine(tmp_path / "missing.json") is None


def test_machine_file_is_read_into_the_typed_model(tmp_path):
    """The machine file is validated, types and keys, by the Machine dataclass itself (no hand parsing)."""
    import json

    import pytest

    from autorl.io.machine import MachineFileError

    good = json.loads(Machine(python="3", platform="p", torch=None, cpus=2, ram_gb=1.0).to_json())
    good["gpus"] = [{"index": 0, "name": "H100", "memory_gb": 80, "free_gb": None}]
    path = tmp_path / "machine.json"
    path.write_text(json.dumps(good))
    machine = load_machine(path)
    assert machine.gpus == [Gpu(0, "H100", 80.0)] and isinstance(machine.gpus[0], Gpu)
    for change, words in [
        ({"cpus": "many"}, "cpus: Input should be a valid integer"),
        ({"gpus": [{"index": 0}]}, "gpus.0.name: Field required"),
        ({"slotz": []}, "slotz: Unexpected keyword argument"),
    ]:
        path.write_text(json.dumps(good | change))
        with pytest.raises(MachineFileError, match=f"not a machine file \\({words}"):
            load_machine(path)
