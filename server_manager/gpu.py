"""GPU utilisation and memory from amd-smi, rocm-smi or nvidia-smi; parsers are pure."""

from __future__ import annotations

import glob
import json
import logging
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Any

log = logging.getLogger("longdoc.server")

TIMEOUT_S = 10.0
NO_TOOL_NOTE = "no GPU monitoring tool found (amd-smi, rocm-smi)"
NO_TOOL_NOTE_NVIDIA = "no GPU monitoring tool found (nvidia-smi)"
_MIB = 1024 * 1024


@dataclass(frozen=True)
class GpuInfo:
    """One GPU; None where the tool said N/A or did not say."""

    index: int
    name: str = ""
    utilization_pct: float | None = None
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    memory_used_pct: float | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain dict for ``status --json``."""
        return asdict(self)


@dataclass(frozen=True)
class GpuReport:
    """What the monitoring tool reported; ``tool=None`` when none was found (not an error)."""

    tool: str | None
    gpus: list[GpuInfo] = field(default_factory=list)
    note: str = ""


def _number(value: Any) -> float | None:
    """A float from 42, "42", "42.0 %" or {"value": 42}; None for "N/A" and friends."""
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip().rstrip("%").strip()
    try:
        return float(text)
    except ValueError:
        return None


def _to_mib(entry: Any) -> float | None:
    """amd-smi memory values carry a unit (``MB`` usually); convert to MiB."""
    number = _number(entry)
    if number is None:
        return None
    unit = str(entry.get("unit", "MB")).upper() if isinstance(entry, dict) else "MB"
    factor = {
        "B": 1 / _MIB,
        "KB": 1 / 1024,
        "MB": 1.0,
        "MIB": 1.0,
        "GB": 1024.0,
        "GIB": 1024.0,
    }.get(unit, 1.0)
    return number * factor


def _pct(used: float | None, total: float | None) -> float | None:
    if used is None or not total:
        return None
    return round(100.0 * used / total, 1)


def parse_amd_smi(text: str) -> list[GpuInfo]:
    """``amd-smi metric -u -m --json``: a list (ROCm 6.x) or ``{"gpu_data": [...]}`` (7.x)."""
    data = json.loads(text)
    if isinstance(data, dict):
        data = data.get("gpu_data", [])
    gpus: list[GpuInfo] = []
    for position, item in enumerate(data if isinstance(data, list) else []):
        if not isinstance(item, dict):
            continue
        usage_raw, mem_raw = item.get("usage"), item.get("mem_usage")
        usage: dict[str, Any] = usage_raw if isinstance(usage_raw, dict) else {}
        mem: dict[str, Any] = mem_raw if isinstance(mem_raw, dict) else {}
        used = _to_mib(mem.get("used_vram"))
        total = _to_mib(mem.get("total_vram"))
        index = item.get("gpu", position)
        gpus.append(
            GpuInfo(
                index=int(index) if isinstance(index, int) else position,
                utilization_pct=_number(usage.get("gfx_activity")),
                memory_used_mib=used,
                memory_total_mib=total,
                memory_used_pct=_pct(used, total),
            )
        )
    return gpus


def parse_rocm_smi(text: str) -> list[GpuInfo]:
    """``rocm-smi --showuse --showmemuse --showmeminfo vram --json``: ``{"card0": {...}}``."""
    data = json.loads(text)
    gpus: list[GpuInfo] = []
    cards = [(k, v) for k, v in data.items() if k.startswith("card") and isinstance(v, dict)]
    for key, card in sorted(cards, key=lambda kv: int(kv[0][4:] or 0)):
        total_b = _number(card.get("VRAM Total Memory (B)"))
        used_b = _number(card.get("VRAM Total Used Memory (B)"))
        used = used_b / _MIB if used_b is not None else None
        total = total_b / _MIB if total_b is not None else None
        pct = _number(card.get("GPU Memory Allocated (VRAM%)"))
        gpus.append(
            GpuInfo(
                index=int(key[4:] or 0),
                name=str(card.get("Card series", card.get("Card Series", ""))),
                utilization_pct=_number(card.get("GPU use (%)")),
                memory_used_mib=used,
                memory_total_mib=total,
                memory_used_pct=pct if pct is not None else _pct(used, total),
            )
        )
    return gpus


def parse_nvidia_smi(text: str) -> list[GpuInfo]:
    """``nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used,memory.total
    --format=csv,noheader,nounits``."""
    gpus: list[GpuInfo] = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 5 or not parts[0].isdigit():
            continue
        used, total = _number(parts[3]), _number(parts[4])
        gpus.append(
            GpuInfo(
                index=int(parts[0]),
                name=parts[1],
                utilization_pct=_number(parts[2]),
                memory_used_mib=used,
                memory_total_mib=total,
                memory_used_pct=_pct(used, total),
            )
        )
    return gpus


AMD_SMI_ARGS = ["metric", "-u", "-m", "--json"]
ROCM_SMI_ARGS = ["--showuse", "--showmemuse", "--showmeminfo", "vram", "--json"]
NVIDIA_SMI_ARGS = [
    "--query-gpu=index,name,utilization.gpu,memory.used,memory.total",
    "--format=csv,noheader,nounits",
]


def _tool_output(tool: str, args: list[str]) -> str | None:
    path = shutil.which(tool)
    if path is None:
        return None
    try:
        result = subprocess.run(
            [path, *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("%s failed: %s", tool, exc)
        return None
    if result.returncode != 0:
        log.warning("%s exited with %d: %s", tool, result.returncode, result.stderr.strip())
        return None
    return result.stdout


def gpu_report(vendor: str = "amd") -> GpuReport:
    """Ask the first monitoring tool that works; never raises."""
    if vendor == "nvidia":
        tools = [("nvidia-smi", NVIDIA_SMI_ARGS, parse_nvidia_smi)]
        note = NO_TOOL_NOTE_NVIDIA
    else:
        tools = [
            ("amd-smi", AMD_SMI_ARGS, parse_amd_smi),
            ("rocm-smi", ROCM_SMI_ARGS, parse_rocm_smi),
        ]
        note = NO_TOOL_NOTE
    for tool, args, parse in tools:
        output = _tool_output(tool, args)
        if output is None:
            continue
        try:
            return GpuReport(tool=tool, gpus=parse(output))
        except (ValueError, TypeError, AttributeError) as exc:
            log.warning("cannot parse %s output: %s", tool, exc)
    return GpuReport(tool=None, gpus=[], note=note)


def count_gpus(vendor: str = "amd") -> int:
    """GPUs visible on this machine (render nodes for AMD); 0 when none are found."""
    if vendor == "nvidia":
        return len(gpu_report("nvidia").gpus)
    # The tools know which render nodes are Instinct GPUs (an iGPU also has one); the
    # render nodes are the fallback on machines without amd-smi or rocm-smi.
    report = gpu_report("amd")
    if report.gpus:
        return len(report.gpus)
    return len(glob.glob("/dev/dri/renderD*"))
