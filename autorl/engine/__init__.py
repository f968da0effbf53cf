"""The trial engine: the backend protocol and the track registry, a seed as a budgeted child process (warm
starters, progress markers, live lines), the local and Ray pools, the slot plan, a validated trial from base
eval to ledger row, re-training recorded configs. Imports autorl.io and autorl.record; reaches the tracks
only through the registry (by name)."""
