"""Facts -> findings: every check says what it found, why it matters and the exact fix.

The checks live in ``checks_*.py`` by topic and register themselves, with their place in the report, through
``check_base.check``; this module imports them and evaluates them in report order. Pure: ``EnvFacts``
(TensorFlow-free facts) and an ``InspectionRun`` (what the TensorFlow inspection said, parsed once into an
``InspectionResult``) in, findings out. Checks that need the inspection are pending until it finished.
"""

from __future__ import annotations

from tfgpu_tui.alerts import Severity
from tfgpu_tui.env import (
    checks_devices,
    checks_gpu,
    checks_libraries,
    checks_mig,
    checks_packages,
    checks_system,
    checks_tensorflow,
    log_owners,
)
from tfgpu_tui.env.check_base import Check, Verdict, report_order, tensorflow_unusable
from tfgpu_tui.env.facts import EnvFacts
from tfgpu_tui.env.findings import Finding, Status, pending
from tfgpu_tui.env.inspection_data import InspectionResult
from tfgpu_tui.env.tf_inspection import InspectionRun

# The modules whose decorated functions are the checks (importing them registers them).
CHECK_MODULES = (
    checks_system,
    checks_tensorflow,
    checks_packages,
    checks_libraries,
    checks_devices,
    checks_gpu,
    checks_mig,
)
CHECKS: list[Check] = report_order()
REPORT_ORDER: tuple[str, ...] = tuple(item.id for item in CHECKS)  # every check id, in report order
# Diagnoses that are expected (not problems) on a machine without an NVIDIA GPU.
NO_GPU_EXPECTED = frozenset({"missing_lib", "no_device", "no_driver", "silent_cpu_fallback"})


def log_findings(
    facts: EnvFacts, inspection: InspectionResult | None, checked: list[Finding]
) -> list[Finding]:
    """One finding per problem message in TensorFlow's log (ok-informational when expected without a GPU),
    except a message whose cause a check in `checked` already named: it is folded into that check's
    finding (``log_owners.fold``, which updates `checked`), so the two never disagree."""
    findings = []
    for diagnosis in inspection.diagnoses if inspection is not None else ():
        expected = not facts.nvml.devices and diagnosis.signature.category in NO_GPU_EXPECTED
        optional = diagnosis.severity is Severity.INFO  # e.g. TensorRT, which training does not need
        status = Status.FAILURE if diagnosis.severity is Severity.CRITICAL else Status.WARNING
        if not (expected or optional) and log_owners.fold(checked, diagnosis, status):
            continue
        note = " (expected on a machine without a GPU)" if expected else " (optional)" if optional else ""
        findings.append(
            Finding(
                f"log:{diagnosis.id}",
                Status.OK if expected or optional else status,
                f"TensorFlow log: {diagnosis.id}",
                diagnosis.line.strip()[:300] + note,
                diagnosis.meaning,
                "" if expected or optional else log_owners.owned_fix(diagnosis, facts, inspection),
                informational=expected or optional,
            )
        )
    return findings


def _run(item: Check, facts: EnvFacts, inspection: InspectionResult | None) -> Verdict:
    skipped = tensorflow_unusable(facts, inspection) if item.needs_tensorflow else None
    return skipped or item.run(facts, inspection)


def evaluate(facts: EnvFacts, inspection: InspectionRun | None = None) -> list[Finding]:
    """Every check's finding; TensorFlow checks are pending while `inspection` is None."""
    result = InspectionResult.from_run(inspection) if inspection is not None else None
    findings = []
    for item in CHECKS:
        if item.needs_inspection and result is None:
            findings.append(pending(item.id, item.title))
            continue
        verdict = _run(item, facts, result)
        findings.append(
            Finding(
                item.id,
                verdict.status,
                item.title,
                verdict.detail,
                verdict.why,
                verdict.fix,
                verdict.informational,
                verdict.link_tab,
            )
        )
    return findings + log_findings(facts, result, findings)
