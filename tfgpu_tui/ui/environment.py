"""The Environment tab: does TensorFlow really use the GPU, and if not, why.

A worker thread collects the TensorFlow-free facts (shown at once) and then runs the TensorFlow probe in a
child process with the target interpreter (a spinner meanwhile); results arrive here as messages.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from tfgpu_tui.alerts import Alert, Severity
from tfgpu_tui.env.children import stop_all
from tfgpu_tui.env.facts import collect_facts
from tfgpu_tui.env.findings import EnvReport, Finding, Status
from tfgpu_tui.env.probe_runner import run_probe_with_retry
from tfgpu_tui.env.recorded import demo_recording
from tfgpu_tui.env.report import save_markdown
from tfgpu_tui.env.runner import fast_report, full_report
from tfgpu_tui.ui.messages import AlertsChanged, ShowTab
from tfgpu_tui.ui.tab_base import DashboardTab

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
STATUS_STYLE = {
    Status.OK: "green",
    Status.WARNING: "yellow",
    Status.FAILURE: "bold red",
    Status.SKIPPED: "dim",
    Status.PENDING: "cyan",
}
ALERT_SEVERITY = {Status.FAILURE: Severity.CRITICAL, Status.WARNING: Severity.WARNING}
TAB_NAMES = {"monitor": "Monitor"}
FOUND_COLUMN_CHARS = 72  # the table shows the start of each detail; the pane beside it shows all of it


class EnvReportReady(Message):
    """A report from the check worker: the fast one (TensorFlow checks pending) or the full one."""

    def __init__(self, report: EnvReport, generation: int) -> None:
        super().__init__()
        self.report = report
        self.generation = generation


def _shorten(text: str, limit: int) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def alerts_from_report(report: EnvReport) -> list[Alert]:
    """Header alerts for the failures and warnings of a finished report."""
    return [
        Alert(
            f"env_{finding.id}",
            ALERT_SEVERITY[finding.status],
            f"{finding.title}: {finding.detail}",
            finding.fix,
        )
        for finding in report.findings
        if finding.status in ALERT_SEVERITY
    ]


def finding_markup(finding: Finding) -> str:
    """The detail pane's text for one finding (Rich markup, user text escaped)."""
    style = STATUS_STYLE[finding.status]
    lines = [
        f"[b]{escape(finding.title)}[/b]  [{style}]{finding.icon} {finding.status.value}[/{style}]",
        "",
        escape(finding.detail),
    ]
    if finding.why:
        lines += ["", f"[b]Why it matters[/b]  {escape(finding.why)}"]
    if finding.fix:
        lines += ["", "[b]Fix[/b]", f"[bold cyan]{escape(finding.fix)}[/bold cyan]"]
    if finding.link_tab:
        name = TAB_NAMES.get(finding.link_tab, finding.link_tab)
        lines += ["", f"[b]Enter[/b] opens the {name} tab."]
    return "\n".join(lines)


class EnvironmentTab(DashboardTab):
    """Findings of the environment check, the selected one's detail and fix, re-run and save keys."""

    TAB_ID = "environment"
    TAB_TITLE = "Environment"
    BINDINGS = [
        Binding("r", "rerun", "Re-run checks"),
        Binding("s", "save_report", "Save report (.md)"),
        Binding("enter", "open_link", "Open linked tab", show=False),
    ]
    DEFAULT_CSS = """
    EnvironmentTab #env-status { height: auto; padding: 0 1; background: $boost; }
    EnvironmentTab #env-body { height: 1fr; }
    EnvironmentTab #env-findings { width: 3fr; height: 1fr; }
    EnvironmentTab #env-detail-scroll { width: 2fr; height: 1fr; border-left: solid $primary-darken-2; }
    EnvironmentTab #env-detail { padding: 0 1; }
    """
    # The blocking steps, as attributes so tests can substitute them.
    collect = staticmethod(collect_facts)
    probe = staticmethod(run_probe_with_retry)

    def __init__(self, settings) -> None:  # noqa: ANN001 - Settings, as in DashboardTab
        super().__init__(settings)
        self.report: EnvReport | None = None
        self._reveal_id = ""  # a finding to select once the report has it (from an alert's link)
        self.generation = 0
        self.started_at = 0.0
        self._spin = 0
        self._save_dir: Path = Path.cwd()

    def compose(self) -> ComposeResult:
        yield Static("The environment check starts when this tab is shown.", id="env-status")
        with Horizontal(id="env-body"):
            table: DataTable = DataTable(id="env-findings", cursor_type="row", zebra_stripes=True)
            table.add_columns(" ", "Check", "Found")
            yield table
            with VerticalScroll(id="env-detail-scroll"):
                yield Static("", id="env-detail")

    def on_mount(self) -> None:
        self._spinner = self.set_interval(0.1, self._tick, pause=True)  # runs only while a check runs

    def on_show(self) -> None:
        """The first time the tab is shown, run the check (no TensorFlow child until someone looks)."""
        if self.generation == 0:
            self.action_rerun()

    # --- running the check (worker thread) -----------------------------------------------------------------

    def on_unmount(self) -> None:
        self.generation += 1  # tells a running check to stop after its current step
        stop_all()  # quitting must not wait for a TensorFlow import

    def action_rerun(self) -> None:
        """Run every check again, stopping a probe still running from before."""
        stop_all()
        self.generation += 1
        self.started_at = time.monotonic()
        if self.report is not None:
            self.report.complete = False
        self._run_check(self.generation)
        self._spinner.resume()
        self._show_status()

    @work(thread=True, group="env-check", exit_on_error=False)
    def _run_check(self, generation: int) -> None:
        try:
            if self.settings.demo:
                facts, probe = demo_recording()
            else:
                facts = self.collect(self.settings.python)
            self.post_message(EnvReportReady(fast_report(facts), generation))
            if generation != self.generation:
                return  # re-run or closed meanwhile
            if not self.settings.demo:
                probe = self.probe(self.settings.python, self.settings.env_check_timeout_seconds)
            self.post_message(EnvReportReady(full_report(facts, probe), generation))
        except Exception as error:  # noqa: BLE001 - a bug must show, not freeze the spinner
            failed = Finding(
                "check_error", Status.FAILURE, "Environment check", f"The check itself failed: {error!r}"
            )
            self.post_message(EnvReportReady(EnvReport([failed]), generation))

    def on_env_report_ready(self, message: EnvReportReady) -> None:
        if message.generation != self.generation:
            return
        self.report = message.report
        self._fill_table(message.report)
        self._show_status()
        if message.report.complete:
            self._spinner.pause()
            self.post_message(AlertsChanged(self.TAB_ID, alerts_from_report(message.report)))

    # --- widgets ---------------------------------------------------------------------------------------

    def _fill_table(self, report: EnvReport) -> None:
        table = self.query_one("#env-findings", DataTable)
        selected = self.selected_finding()
        table.clear()
        for finding in report.findings:
            style = STATUS_STYLE[finding.status]
            table.add_row(
                f"[{style}]{finding.icon}[/{style}]",
                escape(finding.title),
                escape(_shorten(finding.detail, FOUND_COLUMN_CHARS)),
                key=finding.id,
            )
        ids = [finding.id for finding in report.findings]
        wanted = self._reveal_id or (selected.id if selected is not None else None)
        if wanted in ids:
            table.move_cursor(row=ids.index(wanted))
            if report.complete:
                self._reveal_id = ""
        self._show_detail()

    def reveal(self, target: str) -> None:
        """Select the finding with this id, now or as soon as the report has it."""
        self._reveal_id = target
        if self.report is not None:
            self._fill_table(self.report)

    def selected_finding(self) -> Finding | None:
        """The finding under the table's cursor."""
        if self.report is None or not self.report.findings:
            return None
        row = self.query_one("#env-findings", DataTable).cursor_row
        return self.report.findings[row] if 0 <= row < len(self.report.findings) else None

    def _show_detail(self) -> None:
        finding = self.selected_finding()
        text = finding_markup(finding) if finding is not None else ""
        self.query_one("#env-detail", Static).update(text)

    def _show_status(self) -> None:
        report = self.report
        waiting = report is None or not report.complete
        simulated = "[reverse] SIMULATED [/reverse] " if self.settings.demo else ""
        if waiting:
            frame = SPINNER[self._spin % len(SPINNER)]
            elapsed = time.monotonic() - self.started_at
            step = "Collecting facts" if report is None else "Importing TensorFlow"
            python = escape(self.settings.python)
            text = f"{simulated}[cyan]{frame}[/cyan] {step} with {python}... {elapsed:.0f} s"
        else:
            counts = ", ".join(f"{count} {status}" for status, count in report.counts().items() if count)
            style = STATUS_STYLE[report.worst]
            text = (
                f"{simulated}[{style}]{report.worst.value.upper()}[/{style}]  {counts}  "
                f"[dim]({escape(self.settings.python)}; r re-run, s save report)[/dim]"
            )
        self.query_one("#env-status", Static).update(text)

    def _tick(self) -> None:
        if self.generation and (self.report is None or not self.report.complete):
            self._spin += 1
            self._show_status()

    @on(DataTable.RowHighlighted, "#env-findings")
    def _row_highlighted(self) -> None:
        self._show_detail()

    @on(DataTable.RowSelected, "#env-findings")
    def _row_selected(self) -> None:
        self.action_open_link()

    # --- actions ---------------------------------------------------------------------------------------

    def action_open_link(self) -> None:
        """Open the tab the selected finding links to (e.g. Monitor for GPU processes)."""
        finding = self.selected_finding()
        if finding is not None and finding.link_tab:
            self.post_message(ShowTab(finding.link_tab))

    def action_save_report(self) -> None:
        """Write the whole report as Markdown to the working directory (the temp dir if that fails)."""
        if self.report is None:
            self.notify("No report yet.", severity="warning")
            return
        partial = "" if self.report.complete else " (TensorFlow checks still running)"
        for directory in (self._save_dir, Path(tempfile.gettempdir())):
            try:
                path = save_markdown(self.report, directory)
            except OSError as error:
                failure = f"Could not write to {directory}: {error.strerror or error}"
                continue
            self.notify(f"Report written to {path}{partial}", title="Saved")
            return
        self.notify(failure, severity="error")
