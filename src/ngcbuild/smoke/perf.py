"""build/R/perf.json from the figures the performance smoke measured: each figure with its
fraction of the device's reference, and, against a baseline image, the regressions beyond a
threshold (the "known performance regressions" of NVIDIA's release notes)."""

from __future__ import annotations

import json
from pathlib import Path

from ngcbuild.smoke.perf_reference import fraction_of_reference, reference_for
from ngcbuild.workspace.release_dir import PERF, ReleaseDir
from ngcbuild.workspace.sections import utc_timestamp

DEFAULT_THRESHOLD = 0.05  # GEMM and copy figures repeat within ~1-2 % on an idle GPU


def perf_report(release: str, image: str | None, measured: dict | None) -> dict:
    """What perf.json says: the device and its figures, or that there was no GPU (and no figures)."""
    report = {"release": release, "image": image, "at": utc_timestamp()}
    if not measured or measured.get("device") is None:
        reason = (measured or {}).get("no_gpu_reason") or "the performance smoke did not run"
        return {**report, "status": "no-gpu", "reason": reason, "device": None, "figures": {}}
    device = measured["device"]
    reference = reference_for(device["name"])
    figures = {}
    for metric, figure in sorted(measured["figures"].items()):
        entry = {"value": round(figure["value"], 3), "unit": figure["unit"], "what": figure.get("what")}
        fraction = fraction_of_reference(metric, figure["value"], reference)
        if fraction is not None:
            entry["fraction_of_reference"] = round(fraction, 3)
        figures[metric] = entry
    return {**report, "status": "measured", "device": device, "torch": measured.get("torch"),
            "cuda": measured.get("cuda"), "figures": figures, "raw": measured["figures"],
            "reference": None if reference is None else {
                "model": reference.model, "bf16_tflops": reference.bf16_tflops, "fp16_tflops": reference.fp16_tflops,
                "memory_gbps": reference.memory_gbps, "source": reference.source}}


def regressions(current: dict, baseline: dict, threshold: float = DEFAULT_THRESHOLD) -> list[dict]:
    """Figures (all higher-is-better) where `current` is worse than `baseline` by more than threshold.

    Both reports must come from the same device model, or the comparison means nothing."""
    if current.get("status") != "measured" or baseline.get("status") != "measured":
        return []
    if current["device"]["name"] != baseline["device"]["name"]:
        raise ValueError(f"baseline ran on {baseline['device']['name']}, this image on {current['device']['name']}")
    found = []
    for metric, figure in current["figures"].items():
        before = baseline["figures"].get(metric)
        if before is None or before["value"] <= 0:
            continue
        change = figure["value"] / before["value"] - 1.0
        if change < -threshold:
            found.append({"metric": metric, "value": figure["value"], "baseline": before["value"],
                          "unit": figure["unit"], "change": round(change, 4)})
    return found


def with_baseline(current: dict, baseline: dict, baseline_image: str, threshold: float) -> dict:
    return {**current, "baseline": {"image": baseline_image, "status": baseline["status"],
                                    "figures": baseline.get("figures", {}), "threshold": threshold,
                                    "regressions": regressions(current, baseline, threshold)}}


def read_measured(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def write_report(directory: Path, report: dict) -> Path:
    return ReleaseDir.of(directory).write(PERF, json.dumps(report, indent=2, sort_keys=True) + "\n")


def render_perf(report: dict) -> str:
    """A few lines for the terminal: the figures, their fraction of reference, the regressions."""
    if report["status"] != "measured":
        return f"perf: no figures ({report['reason']})\n"
    lines = [f"perf on {report['device']['name']} (x{report['device']['count']}):"]
    for metric, figure in report["figures"].items():
        fraction = figure.get("fraction_of_reference")
        share = f"  {fraction:.0%} of reference" if fraction is not None else ""
        lines.append(f"  {metric:<20} {figure['value']:>10.2f} {figure['unit']}{share}")
    baseline = report.get("baseline")
    if baseline:
        if baseline["status"] != "measured":
            lines.append(f"  baseline {baseline['image']}: no figures")
        elif not baseline["regressions"]:
            lines.append(f"  no regression beyond {baseline['threshold']:.0%} against {baseline['image']}")
        for item in baseline["regressions"]:
            lines.append(f"  REGRESSION {item['metric']}: {item['value']:.2f} vs {item['baseline']:.2f} "
                         f"{item['unit']} ({item['change']:+.1%}) against {baseline['image']}")
    return "\n".join(lines) + "\n"
