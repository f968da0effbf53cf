"""The commands, floor 4: run.py's trial command and the `autorl` console script's subcommands (status, show,
report, mark, ledger, loop, tune, confirm, fidelity), their flags, the config reference generator. Anything
below may be imported here; nothing here is imported from below."""
