"""The web face of `tfgpu-tui serve`: server.py (aiohttp), session.py (one browser session), guard.py (token,
Host, Origin), policy.py (a session's least privilege) and page/ (the static page). Importing this package
imports nothing; `commands/serve.py` imports server.py only when it serves."""
