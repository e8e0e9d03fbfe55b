"""One line that says what machine a benchmark ran on.

Figures from a shared 2-core VM only mean something next to the machine and
its load at the time, so every benchmark prints this line first.
"""

import os
import platform
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe_machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({cpu_model()}), "
        f"Python {platform.python_version()}, load {load:.2f}"
    )
