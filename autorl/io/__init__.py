"""Input/output helpers, floor 0: the one atomic writer, the one JSON-lines and given-file readers, where
things live, the harness hash, the machine file, range-checked flags, the TOML checker. Imports nothing of
autorl above it."""
