"""The Batch probe tab: a form, a live table and plot of trials, and the batch size to use. Trials run with
the app's one interpreter (ui/interpreter.py), the one the Environment tab checks and the header names; `p`
picks another for both tabs."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Static

from tfgpu_tui.alerts import Alert, AlertKind, Severity
from tfgpu_tui.probe.budget import Budget, default_budget, gpu_devices
from tfgpu_tui.probe.interpreter import interpreter_problem
from tfgpu_tui.probe.pipeline_request import PipelineRequest
from tfgpu_tui.probe.pipeline_result import PipelineResult
from tfgpu_tui.probe.pipeline_runner import PipelineRunner
from tfgpu_tui.probe.precision import PrecisionComparison, precision_name, run_comparison
from tfgpu_tui.probe.record import record_of, save_record
from tfgpu_tui.probe.request import (
    ProbeRequest,
    ProbeRequestError,
    check_model_spec,
    normalise_device,
    steps_per_trial,
)
from tfgpu_tui.probe.result import ProbeResult
from tfgpu_tui.probe.simulated import SimulatedGpus, SimulatedTrialRunner, simulated_comparison
from tfgpu_tui.probe.trial import Trial
from tfgpu_tui.probe.trial_runner import TrialRunner, run_probe
from tfgpu_tui.serve.policy import model_refusal, pipeline_refusal, policy_from_settings
from tfgpu_tui.settings import Settings
from tfgpu_tui.ui import interpreter
from tfgpu_tui.ui.clipboard import copy_text
from tfgpu_tui.ui.messages import AlertsChanged
from tfgpu_tui.ui.tab_base import DashboardTab
from tfgpu_tui.ui.widgets.probe_form import ProbeForm
from tfgpu_tui.ui.widgets.probe_plot import ProbePlot
from tfgpu_tui.ui.widgets.styled_text import ERROR, StyledText
from tfgpu_tui.ui.widgets.trials_table import TrialsTable

START_HINT = "Set the model and budget, then Start (ctrl+r). Each trial is a fresh process."
DEMO_HINT = (
    "Set the model and budget, then Start (ctrl+r). Trials are computed from the simulated GPUs' free "
    "memory: no TensorFlow runs."
)

# Under DashboardTab.SHORT_BELOW lines the plot would get a row or two: it gives way to the table.
PLOT_NOTE = "The plot shows in a terminal of 30 lines or more; the table above has the same numbers."
DEMO_PIPELINE = "The pipeline probe runs your tf.data code with TensorFlow; --demo simulates no TensorFlow."


@dataclass
class ProbeStarted(Message):
    """The request is complete (default budget filled in) and the first child is about to start."""

    request: ProbeRequest


@dataclass
class TrialStarted(Message):
    """A child started training at this batch size."""

    batch_size: int


@dataclass
class TrialDone(Message):
    """A trial finished."""

    trial: Trial


@dataclass
class PipelineFinished(Message):
    """The pipeline probe ended (measured, failed or cancelled)."""

    result: PipelineResult


@dataclass
class ProbeFinished(Message):
    """The probe ended: a result, or a message saying why it could not start."""

    result: ProbeResult | None
    problem: str = ""
    comparison: PrecisionComparison | None = None


class BatchProbeTab(DashboardTab):
    """Find the largest batch that fits: every trial trains a few steps in a fresh child process."""

    DEFAULT_CSS = """
    /* Batch probe (4): table above plot below 140 columns */
    BatchProbeTab { overflow-y: auto; }
    BatchProbeTab #probe-status { height: auto; padding: 0 1; color: $text-muted; }
    BatchProbeTab #probe-status.problem { color: $error; }
    BatchProbeTab #probe-body { height: 1fr; min-height: 8; }
    BatchProbeTab #probe-trials { width: 1fr; height: 1fr; min-width: 50; }
    BatchProbeTab #probe-plot { width: 1fr; }
    BatchProbeTab.-narrow #probe-body { layout: vertical; min-height: 12; }
    BatchProbeTab.-narrow.-short #probe-body { min-height: 11; }
    BatchProbeTab.-narrow #probe-trials { width: 1fr; height: 1fr; min-width: 0; min-height: 4; }
    BatchProbeTab.-narrow #probe-plot { height: 1fr; min-height: 6; }
    BatchProbeTab #probe-plot-note { display: none; }
    BatchProbeTab.-short #probe-plot { display: none; }
    BatchProbeTab.-short #probe-plot-note {
        display: block; width: 1fr; height: auto; padding: 0 1; color: $text-muted;
    }
    BatchProbeTab #probe-results { height: auto; }
    BatchProbeTab.-narrow #probe-results { layout: vertical; }
    BatchProbeTab #probe-summary { width: 1fr; height: auto; padding: 0 1; border: round $primary; }
    BatchProbeTab #probe-comparison { width: 1fr; max-width: 72; height: auto; padding: 0 1; display: none; }
    BatchProbeTab.-narrow #probe-comparison { max-width: 100%; }
    BatchProbeTab #probe-comparison { border: round $secondary; border-title-color: $text-muted; }
    """

    TAB_ID = "probe"
    TAB_TITLE = "Batch probe"
    NARROW_BELOW = 140  # the trials table needs about 80 columns, the plot 50: stacked below this
    BINDINGS = [
        Binding("ctrl+r", "start", "Start probe"),
        Binding("escape", "cancel", "Cancel probe"),
        Binding("c", "copy_snippet", "Copy snippet"),
        Binding("p", "pick_python", "Pick Python"),
    ]

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.runner: TrialRunner | None = None
        self.pipeline_runner: PipelineRunner | None = None
        self.pipeline_result: PipelineResult | None = None
        self.request: ProbeRequest | None = None
        self.trials: list[Trial] = []
        self.result: ProbeResult | None = None
        self.comparison: PrecisionComparison | None = None
        self.compare_run = False
        self.simulated: SimulatedGpus | None = None  # --demo: the simulated GPUs the trials are computed on

    def compose(self) -> ComposeResult:
        budget = "" if self.settings.batch_budget_mb is None else str(self.settings.batch_budget_mb)
        yield ProbeForm(budget, id="probe-form")
        yield Static(id="probe-status")
        with Horizontal(id="probe-body"):
            yield TrialsTable(id="probe-trials", with_rule=not self.settings.demo)  # demo: no model facts
            yield ProbePlot(id="probe-plot")
            yield Static(PLOT_NOTE, id="probe-plot-note")
        with Horizontal(id="probe-results"):
            yield Static("No result yet.", id="probe-summary")
            yield Static(id="probe-comparison")

    def on_mount(self) -> None:
        self.shared = interpreter.shared_interpreter(self)
        if self.settings.demo:
            self.simulated = SimulatedGpus(self.simulated_gpus())
            self.query_one("#probe-summary", Static).border_title = "SIMULATED"
        self.show_status(DEMO_HINT if self.simulated else START_HINT)
        self.query_one(ProbePlot).show_trials([], None)
        self.load_devices()

    def on_unmount(self) -> None:
        self.cancel_runners()

    def cancel_runners(self) -> None:
        """Stop the search's or the pipeline probe's running child, if any."""
        for runner in (self.runner, self.pipeline_runner):
            if runner is not None:
                runner.cancel()

    def offers(self, action: str) -> bool:
        """`esc` cancels a probe: offered while one runs."""
        return action != "cancel" or self.running

    def focus_default(self) -> None:
        """Focus the Start button: Enter starts, and the number keys still switch tabs (a text field would
        swallow them); shift+tab reaches the form."""
        self.query_one("#probe-start").focus()

    @work(thread=True, group="probe-devices")
    def load_devices(self) -> None:
        """Offer every GPU NVML sees, or the simulated ones (first GPU preselected), CPU always."""
        devices = self.simulated.devices() if self.simulated else gpu_devices()
        if devices:
            self.app.call_from_thread(self._set_devices, devices)

    def _set_devices(self, devices: list[str]) -> None:
        self.query_one(ProbeForm).set_devices(devices)

    @property
    def running(self) -> bool:
        """Whether a probe (the search or the pipeline's) is in progress."""
        return self.runner is not None or self.pipeline_runner is not None

    def show_status(self, text: str, problem: bool = False) -> None:
        """One line under the form: progress, or what is wrong with the input."""
        status = self.query_one("#probe-status", Static)
        badge: list[str | tuple[str, str]] = [(" SIMULATED ", "reverse"), " "] if self.simulated else []
        status.update(Content.assemble(*badge, text))
        status.set_class(problem, "problem")

    @property
    def comparing(self) -> bool:
        """Whether the form asks for float32 and mixed precision side by side."""
        return self.query_one(ProbeForm).comparing

    def row_key(self, batch_size: int) -> str:
        """The table row of a trial of the running pass (a comparison tries a batch once per precision)."""
        return f"{precision_name(self.request) if self.request else 'float32'}:{batch_size}"

    def form_request(self) -> ProbeRequest:
        """The request the form describes (see ProbeForm.request), with the interpreter in use (the worker
        waits for it when it is still being chosen)."""
        target = self.shared.target
        return self.query_one(ProbeForm).request(target.python if target else "")

    def action_pick_python(self) -> None:
        """List every interpreter found with its TensorFlow version; the one picked runs the trials, and the
        Environment tab checks it."""
        self.shared.open_picker()

    def action_start(self) -> None:
        """Find the largest batch size that fits in GPU memory, trying sizes in fresh processes."""
        if self.running:
            self.notify("A probe is already running; cancel it first (escape).", severity="warning")
            return
        if self.query_one(ProbeForm).pipeline:
            self.start_pipeline()
            return
        try:
            request = self.form_request()
            if request.budget_mb:
                request = replace(request, budget_source="given").resolved()
            else:
                request = replace(request, budget_mb=1.0).resolved()  # checks everything but the budget
                request = replace(request, budget_mb=0.0)
        except ProbeRequestError as error:
            self.show_status(str(error), problem=True)
            return
        refusal = model_refusal(policy_from_settings(self.settings), request.model)
        if refusal is not None:  # least privilege: built-in models and model files under --log-root only
            self.show_status(refusal, problem=True)
            return
        self.trials = []
        self.result = None
        self.comparison = None
        self.query_one(TrialsTable).reset(with_rule=self.simulated is None)  # simulated: no model facts
        self.query_one("#probe-summary", Static).update("Running...")
        self.query_one("#probe-comparison", Static).display = False
        self.post_message(AlertsChanged(self.TAB_ID, []))
        self.runner = self.new_runner(request)
        self._set_running(True)
        self.query_one(TrialsTable).focus()  # Start is disabled now; the table keeps escape and c working
        real = request.python and not self.simulated  # simulated trials run no Python
        with_python = f" with {interpreter.home_short(request.python)}" if real else ""
        self.show_status(f"Starting {request.model} on {request.device}{with_python}...")
        self.compare_run = self.comparing
        self.run_probe(request, self.runner, self.compare_run)

    def pipeline_request(self) -> PipelineRequest:
        """The pipeline probe the form describes (the interpreter filled in by the worker); raises
        ProbeRequestError."""
        form = self.query_one(ProbeForm)
        probe = form.request("")
        device = normalise_device(probe.device)
        model = check_model_spec(probe.model)
        return PipelineRequest(form.pipeline, model, device, probe.mixed_precision, python="").resolved()

    def start_pipeline(self) -> None:
        """Time the form's pipeline against its model in a child process, instead of the batch search."""
        if self.simulated:
            self.show_status(DEMO_PIPELINE, problem=True)
            return
        try:
            request = self.pipeline_request()
        except ProbeRequestError as error:
            self.show_status(str(error), problem=True)
            return
        policy = policy_from_settings(self.settings)
        refusal = pipeline_refusal(policy) or model_refusal(policy, request.model)
        if refusal is not None:
            self.show_status(refusal, problem=True)
            return
        self.pipeline_result = None
        self.query_one(TrialsTable).reset()
        self.query_one(ProbePlot).show_trials([], None)
        self.query_one("#probe-summary", Static).update("Timing the pipeline...")
        self.query_one("#probe-comparison", Static).display = False
        self.post_message(AlertsChanged(self.TAB_ID, []))
        self.pipeline_runner = PipelineRunner(request)
        self._set_running(True)
        self.query_one(TrialsTable).focus()  # Start is disabled now; the table keeps escape working
        self.show_status(f"Timing the pipeline {request.spec} against {request.model} on {request.device}...")
        self.run_pipeline(request, self.pipeline_runner)

    @work(thread=True, group="probe")
    def run_pipeline(self, request: PipelineRequest, runner: PipelineRunner) -> None:
        """Fill in the interpreter (once chosen), run the pipeline probe's child and report back."""
        if not request.python:
            runner.request = replace(request, python=self.shared.current().python)
        self.post_message(PipelineFinished(runner.run()))

    def on_pipeline_finished(self, message: PipelineFinished) -> None:
        self.pipeline_runner = None
        self._set_running(False)
        result = self.pipeline_result = message.result
        self.query_one("#probe-summary", Static).update(pipeline_text(result))
        request = result.request
        if result.cancelled:
            self.show_status("Cancelled: the pipeline probe's child was stopped.")
        elif result.error:
            self.show_status("The pipeline probe stopped on an error (see below).", problem=True)
            self.post_message(AlertsChanged(self.TAB_ID, [probe_alert(result.error)]))
        else:
            self.show_status(
                f"Done: {request.spec} and {request.model} on {request.device} timed in "
                f"{result.wall_seconds:,.1f} s."
            )

    def new_runner(self, request: ProbeRequest) -> TrialRunner:
        """The trials' runner: child processes, or computed on the simulated GPUs (--demo)."""
        return SimulatedTrialRunner(request, self.simulated) if self.simulated else TrialRunner(request)

    def default_budget(self, device: str) -> Budget:
        """The device's free memory (a simulated GPU's with --demo)."""
        return self.simulated.budget(device) if self.simulated else default_budget(device)

    @work(thread=True, group="probe")
    def run_probe(self, request: ProbeRequest, runner: TrialRunner, compare: bool = False) -> None:
        """Fill in the interpreter (once chosen) and the default budget, then run every trial (each a child
        process) and report back."""
        if not request.python:
            request = runner.request = replace(request, python=self.shared.current().python)
        problem = None if self.simulated else interpreter_problem(request.python, self._python_why(request))
        if problem is not None:  # as `probe` refuses: before the first trial, with the way out
            self.post_message(ProbeFinished(None, problem))
            return
        if not request.budget_mb:
            budget = self.default_budget(request.device)
            if budget.mb is None:
                self.post_message(ProbeFinished(None, budget.source))
                return
            request = replace(request, budget_mb=budget.mb, budget_source=budget.source)
            runner.request = request

        def on_trial_start(batch: int) -> None:
            self.post_message(TrialStarted(batch))

        def on_trial_done(trial: Trial) -> None:
            self.post_message(TrialDone(trial))

        def on_pass_start(pass_request: ProbeRequest) -> None:
            self.post_message(ProbeStarted(pass_request))

        if compare:
            comparison = run_comparison(
                request,
                runner,
                on_pass_start=on_pass_start,
                on_trial_start=on_trial_start,
                on_trial_done=on_trial_done,
            )
            if self.simulated:
                comparison = simulated_comparison(comparison, self.simulated)
            self._keep_for_diagnoses(comparison.float32, comparison)
            self.post_message(ProbeFinished(comparison.float32, comparison=comparison))
            return
        self.post_message(ProbeStarted(request))
        result = run_probe(request, runner, on_trial_start=on_trial_start, on_trial_done=on_trial_done)
        self._keep_for_diagnoses(result, None)
        self.post_message(ProbeFinished(result))

    def _keep_for_diagnoses(self, result: ProbeResult, comparison: PrecisionComparison | None) -> None:
        """A real GPU probe's answer, kept where the efficiency diagnoses quote it (probe/record.py); not the
        demo's, and nothing where this session writes nothing. Not kept is no failure of the probe."""
        record = record_of(result, comparison)
        if record is None or self.simulated or not policy_from_settings(self.settings).allow_writes:
            return
        with contextlib.suppress(OSError):
            save_record(record)

    def _python_why(self, request: ProbeRequest) -> str:
        """Why the trials use `request.python`, in a few words (as `probe` says it)."""
        target = self.shared.target
        return target.why if target is not None and target.python == request.python else "picked"

    def action_cancel(self) -> None:
        """Stop the probe now; the running trial's (or the pipeline probe's) process is ended."""
        if self.running:
            self.cancel_runners()
            self.show_status("Cancelling: stopping the running child...")

    def action_copy_snippet(self) -> None:
        """Send the recommended `batch_size = N` line to the terminal's clipboard (shown to select where the
        terminal ignores that)."""
        if self.result is not None and self.result.snippet:
            copy_text(self.app, self.result.snippet, "Snippet")

    @on(Button.Pressed, "#probe-start")
    def _start_pressed(self) -> None:
        self.action_start()

    @on(Button.Pressed, "#probe-cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    @on(Input.Submitted)
    def _input_submitted(self) -> None:
        self.action_start()

    def _set_running(self, running: bool) -> None:
        self.query_one(ProbeForm).running = running
        self.refresh_bindings()  # `esc` cancels only while a probe runs

    def on_probe_started(self, message: ProbeStarted) -> None:
        self.request = message.request
        request = message.request
        self.trials = []  # the plot shows the running pass
        precision = f", {precision_name(request)}" if request.mixed_precision or self.compare_run else ""
        self.show_status(
            f"Probing {request.model} on {request.device}: budget {request.budget_mb:,.0f} MB "
            f"({request.budget_source}), {steps_per_trial(request.steps)}{precision}"
        )

    def on_trial_started(self, message: TrialStarted) -> None:
        precision = precision_name(self.request) if self.request else ""
        self.query_one(TrialsTable).started(self.row_key(message.batch_size), message.batch_size, precision)

    def on_trial_done(self, message: TrialDone) -> None:
        trial = message.trial
        self.trials.append(trial)
        self.query_one(TrialsTable).finished(self.row_key(trial.batch_size), trial)
        self.query_one(ProbePlot).show_trials(self.trials, self.request.budget_mb if self.request else None)

    def on_probe_finished(self, message: ProbeFinished) -> None:
        cancelled = self.runner is not None and self.runner.cancelled
        self.runner = None
        self._set_running(False)
        self.query_one(TrialsTable).drop_unfinished()
        summary = self.query_one("#probe-summary", Static)
        if message.result is None:
            self.show_status(message.problem, problem=True)
            summary.update("No result.")
            return
        self.result = message.result
        self.comparison = message.comparison
        summary.update(summary_text(message.result))
        if message.comparison is not None:
            comparison = self.query_one("#probe-comparison", Static)
            comparison.border_title = "float32 vs mixed precision"
            comparison.update(comparison_text(message.comparison))
            comparison.display = True
        if message.result.error:
            self.show_status("The probe stopped on an error (see below).", problem=True)
            self.post_message(AlertsChanged(self.TAB_ID, [probe_alert(message.result.error)]))
        else:
            verb = "Cancelled" if cancelled else "Done"
            request = message.result.request
            budget = f"budget {request.budget_mb:,.0f} MB ({request.budget_source})"
            self.show_status(
                f"{verb}: {len(message.result.trials)} trial(s) in {message.result.wall_seconds:,.1f} s; "
                f"{request.model} on {request.device}, {budget}."
            )


def probe_alert(error: str) -> Alert:
    """The header alert for a probe that stopped on an error."""
    fix = "pass --python PATH to an interpreter with TensorFlow" if "TensorFlow is missing" in error else ""
    return Alert(
        AlertKind.PROBE_ERROR, Severity.WARNING, f"Batch probe: {error.splitlines()[0]}", fix, "Batch probe"
    )


def summary_text(result: ProbeResult) -> Content:
    """The result box: largest batch, recommendation, best throughput, the rule of thumb beside the measured
    peak, and the snippet in bold."""
    text = StyledText()
    for line in result.summary_lines():
        if line.startswith("Paste: "):
            text.append("Paste: ")
            text.append(result.snippet, "bold reverse")
            text.append("   (c copies it)")
        else:
            text.append(line, ERROR if result.error else "")
        text.append("\n")
    return text.rstrip().content()


def pipeline_text(result: PipelineResult) -> Content:
    """The pipeline probe's sentences for the result box (in red when it could not measure)."""
    style = ERROR if result.error and not result.cancelled else ""
    return StyledText("\n".join(result.summary_lines()), style).content()


def comparison_text(comparison: PrecisionComparison) -> Content:
    """The float32 / mixed table (header in bold), the note on the device, and the mixed run's rule of thumb
    (or why it stopped, in red)."""
    header, *rows = comparison.table_lines()
    text = StyledText(header + "\n", "bold")
    text.append("\n".join(rows) + "\n")
    text.append(comparison.note + "\n", "italic")
    mixed_failed = comparison.mixed is not None and bool(comparison.mixed.error)
    for line in comparison.mixed_lines():
        text.append(line + "\n", ERROR if mixed_failed else "")
    return text.rstrip().content()
