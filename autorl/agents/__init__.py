"""Scripted agents for tests and demos (not user commands): `python -m autorl.agents.standin`."""
