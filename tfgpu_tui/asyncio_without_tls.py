"""asyncio imported without the ssl module, for the dashboard process.

asyncio imports `ssl` when it loads, only to offer TLS streams, and `ssl` loads OpenSSL: 4.3 MiB of the
dashboard's resident memory (a tenth of it) and a few milliseconds of its start. The dashboard never opens a
TLS connection through asyncio: Textual uses asyncio for its event loop alone, and what the dashboard asks
over HTTPS (a Jupyter server, Prometheus, the exporters of other hosts) goes through http.client and urllib,
which import `ssl` themselves, when first used. `serve`, whose web server (aiohttp) does need asyncio's TLS,
is another process and imports asyncio as usual.
"""

from __future__ import annotations

import sys


def import_asyncio_without_tls() -> bool:
    """Import asyncio while `import ssl` fails, so its modules take ssl as absent (as on a Python built
    without OpenSSL); `ssl` imports normally afterwards for everyone else. Whether it did (False: asyncio or
    ssl was already loaded, and nothing changed)."""
    if "asyncio" in sys.modules or "ssl" in sys.modules:
        return False
    sys.modules["ssl"] = None  # type: ignore[assignment]  # `import ssl` raises ImportError meanwhile
    try:
        import asyncio  # noqa: F401
    finally:
        del sys.modules["ssl"]
    return True
