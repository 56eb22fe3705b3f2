"""NVML's clock event reasons (nvmlClocksEventReason*, formerly "throttle reasons"): why the clocks are below
their maximum now. Only some of them cost speed: a power cap, a thermal limit, a hardware slowdown."""

from __future__ import annotations

# bit -> (name, what it means); nvml.h's nvmlClocksEventReason* values
REASONS: dict[int, tuple[str, str]] = {
    0x1: ("gpu_idle", "nothing runs, so the clocks are lowered"),
    0x2: ("applications_clocks_setting", "the application clocks are set lower (nvidia-smi -ac)"),
    0x4: ("sw_power_cap", "the power cap: the card draws its power limit"),
    0x8: ("hw_slowdown", "a hardware slowdown (power brake or overheating, signalled by the board)"),
    0x10: ("sync_boost", "held to the clocks of the other GPUs of a sync-boost group"),
    0x20: ("sw_thermal_slowdown", "the driver slows the clocks to keep the GPU cool"),
    0x40: ("hw_thermal_slowdown", "the hardware slows the clocks: the GPU or its memory is too hot"),
    0x80: ("hw_power_brake_slowdown", "an external power brake (the power supply asked the board to slow)"),
    0x100: ("display_clock_setting", "held to the display's clock setting"),
}
POWER = 0x4 | 0x80
THERMAL = 0x20 | 0x40
SLOWDOWN = 0x8
# the reasons that make a busy GPU slower than it could be: a power or thermal cap, a hardware slowdown
THROTTLING = POWER | THERMAL | SLOWDOWN


def names(mask: int | None) -> list[str]:
    """The active reasons' names, lowest bit first; unknown bits as `bit_0x...`; [] for None."""
    if not mask:
        return []
    found = [name for bit, (name, _) in REASONS.items() if mask & bit]
    unknown = mask & ~sum(REASONS)
    bit = 1
    while unknown >= bit:
        if unknown & bit:
            found.append(f"bit_{bit:#x}")
        bit <<= 1
    return found


def throttle_kind(mask: int) -> str:
    """The throttling part of `mask` in words: "power cap", "thermal", "hardware slowdown", or several."""
    words = ((POWER, "power cap"), (THERMAL, "thermal"), (SLOWDOWN, "hardware slowdown"))
    kinds = [word for bits, word in words if mask & bits]
    return " and ".join(kinds)
