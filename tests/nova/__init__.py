"""Real Nova on stowage's Placement: Nova 34.0.0's functional tests, run live.

`inside.py` runs in the side venv `.venv-nova` (environment.py) and points
Placement's test fixture at a live `stowage serve --services placement`;
everything else here runs in the project's own interpreter.
"""
