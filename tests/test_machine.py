"""Machine inspection, the backend choice and the machine file."""

from __future__ import annotations

from autorl.machine import Gpu, Machine, choose_backend, inspect, load_machine, save_machine

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
