"""The runner's live progress lines (autorl/engine/live.py), as an agent reading a log sees them."""

from __future__ import annotations

from autorl.engine.live import LiveView


def test_a_seed_that_compiles_says_so_before_its_clock_starts(capsys):
    """The runner's progress (not a terminal here: plain lines): a child's `compiling` (its steps compiled at
    start-up, a minute where inductor's cache is cold) gets its line before `ready`'s."""
    with LiveView(90) as view:
        on_event = view.callback(0, "seed 1/2")
        on_event({"event": "compiling"}, 0.0)
        on_event({"event": "ready"}, 0.0)
    assert capsys.readouterr().out.splitlines() == [
        "[train] seed 1/2 | compiling its steps (start-up, before the training clock)",
        "[train] seed 1/2 | model loaded, training clock started",
    ]
