"""The trial engine, floor 2: the backend protocol and the track registry, run.py's typed options, a seed as
a budgeted child process (warm starters, progress markers, live lines), the local and Ray pools, the slot
plan, a validated trial from base eval to summary and ledger row, what decisions cost here, re-training
recorded configs. Imports autorl.io and autorl.record; reaches a track only through the registry, by name."""
