"""The Environment tab: does TensorFlow really use the GPU, and if not, why.

A worker thread collects the TensorFlow-free facts (shown at once) and then runs the TensorFlow inspection in
a child process with the target interpreter (a spinner meanwhile); results arrive here as messages. The
target is the app's one interpreter (ui/interpreter.py): `r` chooses it again, and when it changes elsewhere
(`p` in another tab, a TensorFlow job in use that ended) the check runs again on the new one.
"""

from __future__ import annotations

import io
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.geometry import Region, Spacing
from textual.message import Message
from textual.widgets import DataTable, Static

from tfgpu_tui.alerts import Alert, Severity
from tfgpu_tui.env.check_run import fast_report, full_report
from tfgpu_tui.env.facts import collect_facts
from tfgpu_tui.env.findings import EnvReport, Finding, Status
from tfgpu_tui.env.report_formats import REPORT_FILE_PREFIX, report_markdown, save_markdown
from tfgpu_tui.env.targets import Target
from tfgpu_tui.env.tf_inspection import inspect_tensorflow
from tfgpu_tui.proc.spawn import stop_all
from tfgpu_tui.serve.policy import WRITES_REFUSED, policy_from_settings
from tfgpu_tui.ui import interpreter
from tfgpu_tui.ui.clipboard import copy_text
from tfgpu_tui.ui.messages import AlertsChanged, ShowTab
from tfgpu_tui.ui.tab_base import DashboardTab
from tfgpu_tui.ui.text_fit import whole_words
from tfgpu_tui.ui.widgets.finding_detail import STATUS_STYLE, FindingDetail, FixPane

if TYPE_CHECKING:
    from tfgpu_tui.gpu.simulated import SimulatedSource

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
ALERT_SEVERITY = {Status.FAILURE: Severity.CRITICAL, Status.WARNING: Severity.WARNING}
CHECK_COLUMN_SHARE = 0.45  # of the table's width at most; the Found column gets the rest
MIN_FOUND_CHARS = 16
FOUND_ENOUGH_CHARS = 60  # in a wide list, width beyond this goes to the Check column first
WIDE_FROM = 140  # columns from which the list takes 3/5 of the width (the detail 2/5)


@dataclass
class EnvReportReady(Message):
    """A report from the check worker: the fast one (TensorFlow checks pending) or the full one."""

    report: EnvReport
    generation: int


def _shorten(text: str, limit: int) -> str:
    return whole_words(text.splitlines()[0] if text else "", limit)


def column_widths(table_width: int, titles: list[str]) -> tuple[int, int]:
    """(Check, Found) column widths that fill `table_width` without a sideways scroll: the Check column as
    wide as its longest title up to CHECK_COLUMN_SHARE of the table (more once the Found column has
    FOUND_ENOUGH_CHARS), the Found column the rest. Every column takes 2 cells of padding, the icon column 1
    cell, the vertical scrollbar 2."""
    free = max(table_width - 3 - 2 * 2 - 2, 2 * MIN_FOUND_CHARS)  # icon column, padding, a scrollbar
    room = max(int(free * CHECK_COLUMN_SHARE), free - FOUND_ENOUGH_CHARS)
    check = min(max((len(title) for title in titles), default=5), room)
    check = max(check, 5)
    return check, max(free - check, MIN_FOUND_CHARS)


def first_problem(report: EnvReport) -> str | None:
    """The id of the first failure, else of the first warning, else None: where the list opens."""
    for status in (Status.FAILURE, Status.WARNING):
        found = next((finding.id for finding in report.findings if finding.status is status), None)
        if found is not None:
            return found
    return None


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


class FindingsTable(DataTable):
    """The list of findings. Its columns are fitted to its width, which changes with the terminal and also
    when the tab's layout switches between stacked and side by side (a tab hidden meanwhile gets no resize
    of its own), so it says when its size changed."""

    BINDINGS = [
        Binding("up", "cursor_up", "Select the finding above", show=False),
        Binding("down", "cursor_down", "Select the finding below", show=False),
    ]

    @dataclass
    class Resized(Message):
        """The table's size changed."""

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized())
        self.call_after_refresh(self.keep_cursor_in_view)  # a shorter table can hide the selected row

    def keep_cursor_in_view(self) -> None:
        """Scroll so that the selected row shows: move_cursor scrolls only when the row changes, and against
        the size the table had then. The header stays on the top line, above the rows (one line each)."""
        header = self.header_height if self.show_header else 0
        row = Region(0, header + self.cursor_row, 1, 1)
        self.scroll_to_region(row, spacing=Spacing(header, 0, 0, 0), animate=False, immediate=True)


class EnvironmentTab(DashboardTab):
    """Findings of the environment check, the selected one's detail and fix, re-run, copy and save keys.
    Below 100 columns the list and the detail stack (class ``-narrow``)."""

    DEFAULT_CSS = """
    /* Environment (1): below 100 columns (-narrow) the list and the detail stack */
    EnvironmentTab #env-status { height: auto; padding: 0 1; background: $boost; }
    EnvironmentTab #env-body { height: 1fr; }
    EnvironmentTab #env-findings { width: 1fr; height: 1fr; }
    EnvironmentTab FindingDetail {
        width: 1fr; height: 1fr; border-left: solid $primary-darken-2; scrollbar-size-vertical: 1;
    }
    EnvironmentTab.-narrow #env-body { layout: vertical; }
    EnvironmentTab.-narrow #env-findings { width: 1fr; height: 1fr; min-height: 5; }
    EnvironmentTab.-narrow FindingDetail {
        width: 1fr; height: 1fr; min-height: 6; border-left: none; border-top: solid $primary-darken-2;
    }
    /* From 140 columns (-wide) the list takes 3/5: its Found column is what is read first */
    EnvironmentTab.-wide #env-findings { width: 3fr; }
    EnvironmentTab.-wide FindingDetail { width: 2fr; }
    /* The fix: full width under the list and the detail, so its rows hold nothing else (a mouse copy runs) */
    EnvironmentTab #env-fix-pane { height: auto; max-height: 50%; border-top: solid $primary-darken-2; }
    """

    TAB_ID = "environment"
    TAB_TITLE = "Environment"
    BINDINGS = [
        Binding("r", "rerun", "Re-run checks"),
        Binding("c", "copy_fix", "Copy fix"),
        Binding("s", "save_report", "Save report (.md)"),
        Binding("p", "pick_python", "Pick Python"),
        Binding("enter", "open_link", "Open linked tab", show=False),
    ]
    # The blocking steps, as attributes so tests can substitute them.
    collect = staticmethod(collect_facts)
    inspect = staticmethod(inspect_tensorflow)

    def __init__(self, settings) -> None:  # noqa: ANN001 - Settings, as in DashboardTab
        super().__init__(settings)
        self.report: EnvReport | None = None
        self._reveal_id = ""  # a finding to select once the report has it (from an alert's link)
        self.generation = 0
        self.started_at = 0.0
        self._spin = 0
        self._save_dir: Path = Path.cwd()
        self._widths: tuple[int, int] = (0, 0)
        self.target: Target | None = None  # the interpreter checked, and why
        self._choosing = False  # the check's worker is choosing the interpreter (it checks what it gets)
        self._opened = False  # the first complete report has put the cursor on the first problem

    def compose(self) -> ComposeResult:
        yield Static("The environment check starts when this tab is shown.", id="env-status")
        with Horizontal(id="env-body"):
            yield FindingsTable(id="env-findings", cursor_type="row", zebra_stripes=True)
            yield FindingDetail(id="env-detail-pane")
        yield FixPane(id="env-fix-pane")

    def apply_size_classes(self) -> None:
        """The base classes, and ``-wide`` from WIDE_FROM columns (the list takes more of the width)."""
        super().apply_size_classes()
        self.set_class(self.app.size.width >= WIDE_FROM, "-wide")

    def on_mount(self) -> None:
        self._spinner = self.set_interval(0.1, self._tick, pause=True)  # runs only while a check runs
        self.shared = interpreter.shared_interpreter(self)
        self.shared.changed.subscribe(self, self._interpreter_changed)

    def _interpreter_changed(self, target: Target) -> None:
        """Another interpreter is in use (picked, or a job in use ended): check it, if checked before."""
        if self.generation and not self._choosing and target != self.target:
            self.action_rerun(choose=False)

    def on_show(self) -> None:
        """The first time the tab is shown, run the check (no TensorFlow child until someone looks); later,
        forget a TensorFlow job in use that has ended since."""
        if self.generation == 0:
            self.action_rerun()
        else:
            self.shared.forget_ended_job()  # a job in use that has ended: chosen again and checked

    # --- running the check (worker thread) -----------------------------------------------------------------

    def on_unmount(self) -> None:
        self.generation += 1  # tells a running check to stop after its current step
        stop_all()  # quitting must not wait for a TensorFlow import

    def action_rerun(self, choose: bool = True) -> None:
        """Run every check again, stopping an inspection still running from before; `choose`: choose the
        interpreter again first (a job that has ended is forgotten, a new one found)."""
        stop_all()
        self.generation += 1
        self.started_at = time.monotonic()
        if self.report is not None:
            self.report.complete = False
        fresh = choose and self.generation > 1  # the first check takes the header's choice
        self._run_check(self.generation, self.simulated_gpus() if self.settings.demo else None, fresh)
        self._spinner.resume()
        self._show_status()

    @work(thread=True, group="env-check", exit_on_error=False)
    def _run_check(self, generation: int, simulated: SimulatedSource | None, fresh: bool = False) -> None:
        """Choose the interpreter (`fresh`: again), collect the facts, then run the TensorFlow inspection;
        with `simulated` (--demo), the simulated machine's environment instead."""
        try:
            self._choosing = True
            self.target = self.shared.choose_again() if fresh else self.shared.current()
            self._choosing = False
            if simulated is not None:
                from tfgpu_tui.env.simulated import simulated_environment

                facts, inspection = simulated_environment(self.settings.demo_gpus, source=simulated)
            else:
                python = self.target.python
                facts = self.collect(python)
            self.post_message(EnvReportReady(fast_report(facts), generation))
            if generation != self.generation:
                return  # re-run or closed meanwhile
            if simulated is None:
                inspection = self.inspect(python, self.settings.env_check_timeout_seconds)
            self.post_message(EnvReportReady(full_report(facts, inspection), generation))
        except Exception as error:  # noqa: BLE001 - a bug must show, not freeze the spinner
            self._choosing = False
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

    def on_findings_table_resized(self, message: FindingsTable.Resized) -> None:
        if self.report is not None:
            self.call_after_refresh(self._refit_table)

    def _refit_table(self) -> None:
        """Rebuild the table when its width changed the columns it can give (15 rows: cheap); not while
        hidden (no width)."""
        if not self.query_one("#env-findings", DataTable).size.width:
            return
        if self.report is not None and self._widths != self._column_widths(self.report):
            self._fill_table(self.report)

    def _column_widths(self, report: EnvReport) -> tuple[int, int]:
        width = self.query_one("#env-findings", DataTable).size.width  # with or without a scrollbar
        return column_widths(width, [finding.title for finding in report.findings])

    def _fill_table(self, report: EnvReport) -> None:
        table = self.query_one("#env-findings", FindingsTable)
        selected = self.selected_finding()
        self._widths = check_width, found_width = self._column_widths(report)
        table.clear(columns=True)
        table.add_column(" ", width=1)
        table.add_column("Check", width=check_width)
        table.add_column("Found", width=found_width)
        for finding in report.findings:
            table.add_row(
                Content.styled(finding.icon, STATUS_STYLE[finding.status]),
                _shorten(finding.title, check_width),
                _shorten(finding.detail, found_width),
                key=finding.id,
            )
        ids = [finding.id for finding in report.findings]
        wanted = self._reveal_id or (selected.id if selected is not None else None)
        if report.complete and not self._opened:
            self._opened = True  # once: later the cursor stays where the user put it
            if not self._reveal_id and table.cursor_row <= 0:
                wanted = first_problem(report) or wanted
        if wanted in ids:
            row = ids.index(wanted)
            table.move_cursor(row=row)
            self.call_after_refresh(table.keep_cursor_in_view)
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
        self.query_one(FindingDetail).finding = finding
        self.query_one(FixPane).show(finding)

    def _show_status(self) -> None:
        report = self.report
        waiting = report is None or not report.complete
        parts: list[str | tuple[str, str]] = [(" SIMULATED ", "reverse"), " "] if self.settings.demo else []
        if waiting:
            frame = SPINNER[self._spin % len(SPINNER)]
            elapsed = time.monotonic() - self.started_at
            step = "Collecting facts" if report is None else "Importing TensorFlow"
            parts += [(frame, "$accent"), f" {step} with {self._python_label()}... {elapsed:.0f} s"]
        elif report is not None:
            counts = ", ".join(f"{count} {status}" for status, count in report.counts().items() if count)
            parts += [(report.worst.value.upper(), STATUS_STYLE[report.worst]), f"  {counts}  "]
            another = "" if self.settings.demo else "; p picks another"
            parts.append((f"({self._python_label()}{another})", "dim"))
        self.query_one("#env-status", Static).update(Content.assemble(*parts))

    # --- the target interpreter (ui/interpreter.py) -----------------------------------------------------

    def _python_label(self) -> str:
        target = self.target
        if target is None:
            return "the Python in use"
        python = interpreter.home_short(target.python)
        return f"{python} — {target.why}" if target.why != "--python" else python

    def action_pick_python(self) -> None:
        """List every interpreter found with its TensorFlow version; the one picked is checked at once, and
        used by the Batch probe too."""
        self.shared.open_picker()

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

    def action_copy_fix(self) -> None:
        """Copy the selected finding's fix to the clipboard (OSC 52: works over SSH in most terminals)."""
        finding = self.selected_finding()
        if finding is None or not finding.fix:
            self.notify("The selected finding has no fix to copy.", severity="warning")
            return
        copy_text(self.app, finding.fix, "Fix")

    def action_save_report(self) -> None:
        """Write the whole report as Markdown to the working directory (the temp dir if that fails)."""
        if self.report is None:
            self.notify("No report yet.", severity="warning")
            return
        partial = "" if self.report.complete else " (TensorFlow checks still running)"
        if not policy_from_settings(self.settings).allow_writes:  # least privilege: nothing written here
            if self.app.is_web:  # the browser downloads it; the server keeps nothing
                name = f"{REPORT_FILE_PREFIX}-{time.strftime('%Y%m%d-%H%M%S')}.md"
                markdown = io.StringIO(report_markdown(self.report))
                self.app.deliver_text(markdown, save_filename=name, mime_type="text/markdown")
                self.notify(f"Report sent to your browser as {name}{partial}", title="Report")
            else:
                self.notify(WRITES_REFUSED, severity="warning")
            return
        for directory in (self._save_dir, Path(tempfile.gettempdir())):
            try:
                path = save_markdown(self.report, directory)
            except OSError as error:
                failure = f"Could not write to {directory}: {error.strerror or error}"
                continue
            self.notify(f"Report written to {path}{partial}", title="Saved")
            return
        self.notify(failure, severity="error")
