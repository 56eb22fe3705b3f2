"""Readers of the fleet: Prometheus's HTTP API (``--prometheus URL``) or exporters scraped directly
(``--remote HOST:PORT,...``). Each ``read()`` returns a FleetView; a host that stops answering stays listed
as down, with the reason and the age of its last good data, and one that comes back is picked up again."""

from __future__ import annotations

import base64
import datetime as dt
import http.client
import itertools
import json
import ssl
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from prometheus_client.parser import text_string_to_metric_families

from tfgpu_tui.export import names
from tfgpu_tui.fleet.decode import DECODED, HostSeries, Sample, group_by_instance
from tfgpu_tui.fleet.fast_parse import plain_samples
from tfgpu_tui.fleet.hosts import FleetView, HostSnapshot

TIMEOUT_SECONDS = 5.0
MAX_BODY_BYTES = 16 * 1024 * 1024
SERIES_QUERY = '{__name__=~"DCGM_FI_DEV_.+|tfgpu_.+"}'
MAX_WORKERS = 16


class ReadError(Exception):
    """A request failed; the message is what the fleet view shows."""


_TLS: ssl.SSLContext | None = None


def _tls_context() -> ssl.SSLContext:
    global _TLS
    if _TLS is None:
        _TLS = ssl.create_default_context()
    return _TLS


def _request(url: str, timeout: float) -> bytes:
    """GET a URL (basic auth from user:password@ in it); ReadError with a short reason on any failure.
    http.client directly: a fleet view makes 25 a second, and urllib's machinery costs as much again."""
    parts = urllib.parse.urlsplit(url)
    headers = {"Accept": "text/plain;version=0.0.4, application/json", "Connection": "close"}
    if parts.username is not None:
        token = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(token.encode()).decode()
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    connection: http.client.HTTPConnection
    try:
        if parts.scheme == "https":
            connection = http.client.HTTPSConnection(
                parts.hostname or "", parts.port, timeout=timeout, context=_tls_context()
            )
        else:
            connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
        try:
            connection.request("GET", path, headers=headers)
            reply = connection.getresponse()
            body = reply.read(MAX_BODY_BYTES + 1)
        finally:
            connection.close()
    except (OSError, http.client.HTTPException, ValueError) as error:
        raise ReadError(getattr(error, "strerror", None) or str(error) or type(error).__name__) from None
    if reply.status != 200:
        raise ReadError(f"HTTP {reply.status} {reply.reason}")
    if len(body) > MAX_BODY_BYTES:
        raise ReadError(f"reply larger than {MAX_BODY_BYTES // 2**20} MiB")
    return body


def parse_time(text: str) -> float | None:
    """Prometheus's RFC 3339 times (nanoseconds, Z) as Unix time; None for the zero time or garbage."""
    if not text or text.startswith("0001-"):
        return None
    text = text.replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:
        digits = "".join(itertools.takewhile(str.isdigit, rest))
        zone = rest[len(digits) :]
        text = f"{head}.{digits[:6]}{zone}"
    try:
        return dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def _host(
    key: str, series: HostSeries | None, up: bool, reason: str, age: float | None, now: float
) -> HostSnapshot:
    if series is None:
        return HostSnapshot(key, key, up, reason, age)
    if up and series.unavailable:
        reason = f"no GPU: {series.unavailable}"
    return HostSnapshot(
        key, series.hostname or key, up, reason, age, series.snapshot(now), series.summaries()
    )


class PrometheusReader:
    """Reads every tfgpu-tui exporter a Prometheus scrapes: the current series through ``/api/v1/query`` and
    the targets' health (up, last error, last scrape) through ``/api/v1/targets``."""

    def __init__(self, url: str, timeout: float = TIMEOUT_SECONDS) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._last: dict[str, HostSnapshot] = {}  # by instance: what each host showed when last seen
        self._last_ok: dict[str, float] = {}  # by instance: time of the last successful scrape
        self._pools: set[str] = set()  # scrape pools (jobs) that hold tfgpu-tui exporters

    def _get_json(self, path: str, query: dict[str, str]) -> dict:
        body = _request(f"{self.url}{path}?{urllib.parse.urlencode(query)}", self.timeout)
        try:
            data = json.loads(body)
        except ValueError:
            raise ReadError(f"{path} did not return JSON (is {self.url} a Prometheus?)") from None
        if not isinstance(data, dict) or data.get("status") != "success":
            raise ReadError(f"{path}: {data.get('error', 'failed') if isinstance(data, dict) else 'failed'}")
        return data.get("data") or {}

    def read(self) -> FleetView:
        """One refresh: every exporter's series and health."""
        started = time.perf_counter()
        now = time.time()
        try:
            result = self._get_json("/api/v1/query", {"query": SERIES_QUERY})
            targets = self._get_json("/api/v1/targets", {"state": "active"})
        except ReadError as error:
            hosts = tuple(
                replace(h, up=False, reason=f"Prometheus unreachable: {error}") for h in self._hosts(now)
            )
            return FleetView(hosts, self.url, f"Prometheus at {self.url}: {error}", _ms(started))
        samples = _api_samples(result.get("result", []))
        # tfgpu-tui exporters only (a dcgm-exporter's DCGM_* series alone do not make a host here)
        grouped = {k: v for k, v in group_by_instance(samples).items() if v.hostname}
        health = {}
        for target in targets.get("activeTargets", []):
            instance = target.get("labels", {}).get("instance", "")
            if instance in grouped or instance in self._last:
                self._pools.add(target.get("scrapePool", ""))
            health[instance] = target
        for instance, target in health.items():
            if target.get("scrapePool", "") not in self._pools:
                continue
            up = target.get("health") == "up"
            scraped = parse_time(target.get("lastScrape", ""))
            if up and scraped is not None:
                self._last_ok[instance] = scraped
            ok = self._last_ok.get(instance)
            age = max(0.0, now - ok) if ok is not None else None
            series = grouped.get(instance)
            if series is None and instance in self._last:
                self._last[instance] = replace(
                    self._last[instance], up=up, reason=_reason(target), scrape_age=age
                )
                continue
            self._last[instance] = _host(instance, series, up, "" if up else _reason(target), age, now)
        for gone in [key for key in self._last if key not in health]:  # no longer a target of Prometheus
            del self._last[gone]
            self._last_ok.pop(gone, None)
        return FleetView(tuple(self._hosts(now)), self.url, "", _ms(started))

    def _hosts(self, now: float) -> list[HostSnapshot]:
        return [self._last[key] for key in sorted(self._last)]

    def close(self) -> None:
        """Nothing held between reads."""


def _reason(target: dict) -> str:
    if target.get("health") == "up":
        return ""
    error = target.get("lastError") or ""
    return error or ("not scraped yet" if target.get("health") == "unknown" else "down")


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _api_samples(result: list) -> list[Sample]:
    samples: list[Sample] = []
    for item in result:
        metric = item.get("metric", {})
        try:
            value = float(item["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        samples.append((metric.get("__name__", ""), metric, value))
    return samples


def metrics_url(target: str) -> str:
    """``HOST:PORT`` -> ``http://HOST:PORT/metrics``; a full URL is kept (``/metrics`` added when no path)."""
    target = target.strip()
    if "://" not in target:
        target = f"http://{target}"
    parts = urllib.parse.urlsplit(target)
    if parts.path in ("", "/"):
        parts = parts._replace(path="/metrics")
    return urllib.parse.urlunsplit(parts)


def target_key(target: str) -> str:
    """How a --remote target is named in the view: HOST:PORT (no credentials, no scheme)."""
    parts = urllib.parse.urlsplit(metrics_url(target))
    host = parts.hostname or target
    return f"{host}:{parts.port}" if parts.port else host


def exporter_samples(text: str, instance: str) -> list[Sample]:
    """An exporter's text output as samples labelled with `instance`: the fast path for plain lines, else
    prometheus-client's parser."""
    try:
        return plain_samples(text, instance, DECODED)
    except ValueError:
        return parsed_samples(text, instance)


def parsed_samples(text: str, instance: str) -> list[Sample]:
    """The same through prometheus-client's parser."""
    samples: list[Sample] = []
    for family in text_string_to_metric_families(text):
        if not (family.name.startswith(("DCGM_FI_", names.PREFIX))):
            continue
        for sample in family.samples:
            name = sample.name
            if family.type == "counter" and name.endswith("_total") and name[:-6] in names.DCGM_BY_NAME:
                name = name[:-6]  # the parser adds _total to dcgm-exporter's counters; the series has none
            labels = dict(sample.labels)
            labels["instance"] = instance
            samples.append((name, labels, sample.value))
    return samples


class DirectReader:
    """Scrapes each exporter's /metrics itself, in parallel (no Prometheus needed)."""

    def __init__(self, targets: list[str], timeout: float = TIMEOUT_SECONDS) -> None:
        self.targets = {target_key(t): metrics_url(t) for t in targets}
        self.timeout = timeout
        self._last: dict[str, HostSnapshot] = {}
        self._last_ok: dict[str, float] = {}
        self._pool = ThreadPoolExecutor(max_workers=min(MAX_WORKERS, max(1, len(self.targets))))

    def _scrape(self, key: str) -> tuple[str, HostSeries | None, str]:
        try:
            text = _request(self.targets[key], self.timeout).decode("utf-8", errors="replace")
            grouped = group_by_instance(exporter_samples(text, key))
        except ReadError as error:
            return key, None, str(error)
        except ValueError as error:  # the parser's complaint: not an exporter's output
            return key, None, f"not Prometheus's text format: {error}"
        series = grouped.get(key)
        if series is None or not series.hostname:
            return key, None, "no tfgpu-tui series (is this a tfgpu-tui exporter?)"
        return key, series, ""

    def read(self) -> FleetView:
        """One refresh: every exporter scraped once."""
        started = time.perf_counter()
        for key, series, error in self._pool.map(self._scrape, list(self.targets)):
            now = time.time()
            if series is not None:
                self._last_ok[key] = now
                self._last[key] = _host(key, series, True, "", 0.0, now)
                continue
            ok = self._last_ok.get(key)
            age = now - ok if ok is not None else None
            previous = self._last.get(key)
            if previous is None:
                self._last[key] = HostSnapshot(key, key, False, error, age)
            else:
                self._last[key] = replace(previous, up=False, reason=error, scrape_age=age)
        hosts = tuple(self._last[key] for key in self.targets)
        return FleetView(hosts, f"{len(self.targets)} exporters scraped directly", "", _ms(started))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def make_reader(
    prometheus: str | None, remotes: tuple[str, ...] | list[str]
) -> PrometheusReader | DirectReader:
    """The reader for the fleet view's options: Prometheus when given, else the exporters themselves."""
    if prometheus:
        return PrometheusReader(prometheus)
    return DirectReader(list(remotes))
