"""The environment report as Markdown, ready to paste into a bug report, and as plain terminal text."""

from __future__ import annotations

import json
import platform
import socket
import time
from pathlib import Path

from tfgpu_tui.env.findings import EnvReport, Finding, Status

REPORT_FILE_PREFIX = "tfgpu-env-report"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def finding_markdown(finding: Finding) -> str:
    """One finding as a Markdown section: what was found, why it matters, the fix as a code block."""
    lines = [f"### {finding.icon} {finding.title} ({finding.status.value})", "", finding.detail, ""]
    if finding.why:
        lines += [f"*Why it matters:* {finding.why}", ""]
    if finding.fix:
        lines += ["Fix:", "", "```", finding.fix, "```", ""]
    return "\n".join(lines)


def report_markdown(report: EnvReport, generated_at: float | None = None) -> str:
    """The whole report: summary table, every finding that needs attention, then the raw facts."""
    when = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(generated_at or time.time()))
    counts = ", ".join(f"{count} {status}" for status, count in report.counts().items() if count)
    lines = [
        "# tfgpu-tui environment report",
        "",
        f"Host `{socket.gethostname()}` ({platform.platform()}), {when}.",
        f"Result: **{report.worst.value}** ({counts}).",
        "",
        "| | Check | Status | Found |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {f.icon} | {_cell(f.title)} | {f.status.value} | {_cell(f.detail)} |" for f in report.findings
    ]
    attention = [f for f in report.findings if f.status in (Status.FAILURE, Status.WARNING)]
    if attention:
        lines += ["", "## Needs attention", ""] + [finding_markdown(f) for f in attention]
    lines += ["", "## Facts", "", "```json", json.dumps(report.facts, indent=2, default=str), "```", ""]
    return "\n".join(lines)


def report_text(report: EnvReport) -> str:
    """The findings for a terminal: one line each, with why and the fix under warnings and failures."""
    lines = []
    for finding in report.findings:
        lines.append(f"{finding.icon} {finding.title}: {finding.detail}")
        if finding.status in (Status.FAILURE, Status.WARNING):
            if finding.why:
                lines.append(f"    why: {finding.why}")
            if finding.fix:
                lines.append(f"    fix: {finding.fix}")
    counts = ", ".join(f"{count} {status}" for status, count in report.counts().items() if count)
    lines += ["", f"Result: {report.worst.value} ({counts})"]
    return "\n".join(lines)


def save_markdown(report: EnvReport, directory: Path) -> Path:
    """Write the Markdown report to a new timestamped file in `directory`; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{REPORT_FILE_PREFIX}-{time.strftime('%Y%m%d-%H%M%S')}.md"
    path.write_text(report_markdown(report), encoding="utf-8")
    return path
