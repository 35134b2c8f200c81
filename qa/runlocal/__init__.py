"""The local suite runner behind qa/run-local (see runner.py)."""
