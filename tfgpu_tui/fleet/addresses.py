"""Checking the fleet view's addresses where they enter (the command line): ``--prometheus URL`` and
``--remote HOST:PORT,...``. Light to import: the CLI uses these as argparse types."""

from __future__ import annotations

import argparse
import urllib.parse

MAX_REMOTES = 500


def prometheus_url(text: str) -> str:
    """An http(s) URL with a host (a path prefix, as behind a proxy, is kept)."""
    parts = urllib.parse.urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(
            f"not an http(s) URL of a Prometheus: {text!r} (e.g. http://prom:9090)"
        )
    if parts.query or parts.fragment:
        raise argparse.ArgumentTypeError(f"a Prometheus base URL has no query or fragment: {text!r}")
    try:
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad port in {text!r}") from None
    return text.strip().rstrip("/")


def remote_target(text: str) -> str:
    """HOST:PORT, [IPv6]:PORT or an http(s) URL of an exporter."""
    item = text.strip()
    url = item if "://" in item else f"http://{item}"
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
        if "://" not in item:
            raise argparse.ArgumentTypeError(f"bad port in {item!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"not HOST:PORT or an http(s) URL: {item!r}")
    if "://" not in item and port is None:
        raise argparse.ArgumentTypeError(f"{item!r} needs a port (tfgpu-tui export listens on 9400)")
    return item


def remote_list(text: str) -> list[str]:
    """A comma-separated list of exporters (duplicates dropped, order kept)."""
    items = [remote_target(part) for part in text.split(",") if part.strip()]
    if not items:
        raise argparse.ArgumentTypeError("no HOST:PORT given")
    if len(items) > MAX_REMOTES:
        raise argparse.ArgumentTypeError(f"at most {MAX_REMOTES} exporters")
    return list(dict.fromkeys(items))
