"""autorl-arithmetic: procedural multi-digit addition/subtraction as a verifiers v1 taskset.

``core`` (no verifiers import) holds the problems and the reward; ``taskset`` wraps it for prime-rl.
The Taskset class is imported lazily, so ``import autorl_arithmetic.core`` never pays for verifiers.
"""

__all__ = ["ArithmeticTaskset"]


def __getattr__(name: str):
    # verifiers resolves the taskset with getattr(module, name) for each name in __all__.
    if name == "ArithmeticTaskset":
        from autorl_arithmetic.taskset import ArithmeticTaskset

        return ArithmeticTaskset
    raise AttributeError(f"module 'autorl_arithmetic' has no attribute {name!r}")
