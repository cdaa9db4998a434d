"""The machine a result was measured on, in one line. Reports name the CPU model, not only the architecture:
the same adapter answering from videos memorized on another CPU model can score differently (the speech
recognizer's int8 kernels hear other words), so a number without its CPU cannot be compared."""

from __future__ import annotations

import os
import platform


def cpu_model(cpuinfo: str | os.PathLike[str] = "/proc/cpuinfo") -> str:
    """The CPU's model name from ``cpuinfo`` (Linux); the platform's processor or architecture elsewhere."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> float | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):  # not every platform names these
        return None


def describe() -> str:
    """``"AMD EPYC 7B13, 2 cores, 24 GiB RAM, Python 3.11.7"``: what every report's machine line says."""
    memory = memory_gib()
    parts = [cpu_model(), f"{os.cpu_count()} cores"] + ([f"{memory:.0f} GiB RAM"] if memory else [])
    return ", ".join(parts + [f"Python {platform.python_version()}"])
