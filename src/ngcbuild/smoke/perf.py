"""build/R/perf.json from the figures the performance smoke measured: each figure with its spread within
the run, its fraction of the device's datasheet figure and of the chip's own burst measured in the same
run, and, against a baseline image, the regressions beyond a margin that allows for both runs' spread (the
"known performance regressions" of NVIDIA's release notes). A figure whose spread is beyond the threshold
is reported, not gated: a change of the threshold's size could be its noise."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ngcbuild.core.errors import SmokeFailed, excerpt
from ngcbuild.smoke.perf_reference import fraction_of_reference, reference_for
from ngcbuild.smoke.suite_output import read_figures
from ngcbuild.workspace.release_dir import PERF, PERF_MEASURED, ReleaseDir
from ngcbuild.workspace.sections import utc_timestamp

# The regression the gate looks for. The GEMM and copy figures repeat within 0.3 % on an H200 (three runs);
# each comparison adds both runs' spread to it (docs/gpu-runners.md has the figures).
DEFAULT_THRESHOLD = 0.05


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
        figures[metric] = _entry(metric, figure, reference)
    return {**report, "status": "measured", "device": device, "torch": measured.get("torch"),
            "cuda": measured.get("cuda"), "figures": figures, "raw": measured["figures"],
            "reference": None if reference is None else {
                "model": reference.model, "bf16_tflops": reference.bf16_tflops, "fp16_tflops": reference.fp16_tflops,
                "memory_gbps": reference.memory_gbps, "source": reference.source}}


def _entry(metric: str, figure: dict, reference) -> dict:
    """One figure of perf.json: its value, spread within the run (None: not measured, an older suite), and
    its fractions of the datasheet (a sustained figure against a peak) and of the chip's own burst."""
    value = figure["value"]
    entry = {"value": round(value, 3), "unit": figure["unit"], "what": figure.get("what"),
             "spread": None if figure.get("spread") is None else round(figure["spread"], 4)}
    fraction = fraction_of_reference(metric, value, reference)
    if fraction is not None:
        entry["fraction_of_datasheet"] = round(fraction, 3)
    burst = figure.get("burst")
    if burst:
        entry["burst"] = round(burst, 3)
        entry["fraction_of_burst"] = round(value / burst, 3)
    return entry


def gate(current: dict, baseline: dict, threshold: float = DEFAULT_THRESHOLD) -> dict:
    """The regression gate (all figures higher-is-better): for each figure both runs have, a regression where
    the current one is worse than the baseline by more than threshold plus both runs' spread; a figure whose
    spread (in either run) is beyond the threshold is not gated, with the reason. Both reports must come
    from the same device model, or the comparison means nothing."""
    verdicts = {"regressions": [], "not_gated": [], "gated": []}
    if current.get("status") != "measured" or baseline.get("status") != "measured":
        return verdicts
    if current["device"]["name"] != baseline["device"]["name"]:
        raise ValueError(f"baseline ran on {baseline['device']['name']}, this image on {current['device']['name']}")
    for metric, figure in sorted(current["figures"].items()):
        before = baseline["figures"].get(metric)
        if before is None or before["value"] <= 0:
            continue
        change = figure["value"] / before["value"] - 1.0
        spreads = (figure.get("spread") or 0.0, before.get("spread") or 0.0)
        item = {"metric": metric, "value": figure["value"], "baseline": before["value"], "unit": figure["unit"],
                "change": round(change, 4), "spread": figure.get("spread"), "baseline_spread": before.get("spread")}
        if max(spreads) > threshold:
            verdicts["not_gated"].append({**item, "reason": (
                f"its spread within a run ({spreads[0]:.1%}; the baseline's {spreads[1]:.1%}) is beyond the "
                f"{threshold:.0%} threshold: a change of that size cannot be told from its noise")})
            continue
        margin = round(threshold + sum(spreads), 4)
        verdicts["regressions" if change < -margin else "gated"].append({**item, "margin": margin})
    return verdicts


def regressions(current: dict, baseline: dict, threshold: float = DEFAULT_THRESHOLD) -> list[dict]:
    """The figures the gate finds worse beyond their margin."""
    return gate(current, baseline, threshold)["regressions"]


def with_baseline(current: dict, baseline: dict, baseline_image: str, threshold: float) -> dict:
    return {**current, "baseline": {"image": baseline_image, "status": baseline["status"],
                                    "figures": baseline.get("figures", {}), "threshold": threshold,
                                    **gate(current, baseline, threshold)}}


def read_measured(folder: Path) -> dict | None:
    """The figures the performance smoke wrote in the suite's out/ folder (the image's own code wrote
    them: read as hostile input, their shape checked), or None where it wrote none."""
    measured = read_figures(folder, PERF_MEASURED)
    problem = None if measured is None else _shape_problem(measured)
    if problem:
        raise SmokeFailed(f"the smoke suite's {PERF_MEASURED}: {problem}")
    return measured


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _shape_problem(measured: dict) -> str | None:
    """What is wrong with the shape perf_report reads, or None."""
    device = measured.get("device")
    if device is None:
        reason = measured.get("no_gpu_reason")
        return None if reason is None or isinstance(reason, str) else "no_gpu_reason: expected text"
    if not isinstance(device, dict) or not isinstance(device.get("name"), str) or not _number(device.get("count")):
        return "device: expected an object with a name and a count"
    figures = measured.get("figures")
    if not isinstance(figures, dict):
        return "figures: expected an object of figures"
    for metric, figure in figures.items():
        if not isinstance(figure, dict) or not _number(figure.get("value")) or not isinstance(figure.get("unit"), str):
            return f"figures.{excerpt(metric)}: expected an object with a numeric value and a unit"
        for key in ("spread", "burst"):
            if figure.get(key) is not None and not _number(figure[key]):
                return f"figures.{excerpt(metric)}.{key}: expected a number"
    return None


def write_report(directory: Path, report: dict) -> Path:
    return ReleaseDir.of(directory).write(PERF, json.dumps(report, indent=2, sort_keys=True) + "\n")


def render_perf(report: dict) -> str:
    """A few lines for the terminal: the figures, their fractions and spread, the gate's verdicts."""
    if report["status"] != "measured":
        return f"perf: no figures ({report['reason']})\n"
    lines = [f"perf on {report['device']['name']} (x{report['device']['count']}):"]
    for metric, figure in report["figures"].items():
        said = []
        if figure.get("fraction_of_datasheet") is not None:
            said.append(f"{figure['fraction_of_datasheet']:.0%} of datasheet")
        if figure.get("fraction_of_burst") is not None:
            said.append(f"{figure['fraction_of_burst']:.0%} of this chip's burst ({figure['burst']:.0f})")
        if figure.get("spread") is not None:
            said.append(f"spread {figure['spread']:.1%}")
        shown = f"  {metric:<20} {figure['value']:>10.2f} {figure['unit']}"
        lines.append(shown + (f"  {', '.join(said)}" if said else ""))
    baseline = report.get("baseline")
    if baseline:
        if baseline["status"] != "measured":
            lines.append(f"  baseline {baseline['image']}: no figures")
        elif not baseline["regressions"]:
            lines.append(f"  no regression beyond {baseline['threshold']:.0%} (plus both runs' spread) against "
                         f"{baseline['image']}")
        for item in baseline.get("not_gated", []):
            lines.append(f"  NOT GATED {item['metric']}: {item['value']:.2f} vs {item['baseline']:.2f} "
                         f"{item['unit']} ({item['change']:+.1%}): {item['reason']}")
        for item in baseline["regressions"]:
            lines.append(f"  REGRESSION {item['metric']}: {item['value']:.2f} vs {item['baseline']:.2f} "
                         f"{item['unit']} ({item['change']:+.1%}, beyond the {item['margin']:.1%} margin: the "
                         f"threshold and both runs' spread) against {baseline['image']}")
    return "\n".join(lines) + "\n"
