"""perf.json: figures with their spread, as fractions of the device's datasheet and of its own burst, no figures
without a GPU, and the regression gate fed the figures of three runs on one H200 (issue 42)."""

import json

import pytest

from ngcbuild.smoke.checks.perf_measure import (
    MIN_SAMPLE_S,
    calls_per_sample,
    copy_gbps,
    gemm_tflops,
    ratio_spread,
    speedup,
    summarise,
)
from ngcbuild.smoke.perf import gate, perf_report, regressions, render_perf, with_baseline, write_report
from ngcbuild.smoke.perf_reference import REFERENCES, reference_for


def measured(name="NVIDIA H100 80GB HBM3", bf16=700.0, fp16=720.0, copy=2900.0, compile_x=1.4):
    figures = {"gemm_bf16_tflops": {"value": bf16, "unit": "TFLOP/s", "what": "bf16 matmul"},
               "gemm_fp16_tflops": {"value": fp16, "unit": "TFLOP/s", "what": "fp16 matmul"},
               "d2d_copy_gbps": {"value": copy, "unit": "GB/s", "what": "copy"},
               "compile_speedup": {"value": compile_x, "unit": "x", "what": "compile"}}
    return {"device": {"name": name, "count": 1, "capability": "9.0", "memory_bytes": 85e9},
            "no_gpu_reason": None, "torch": "2.10.0a0+b4e4ee81d3", "cuda": "13.1", "figures": figures}


def test_formulas():
    assert gemm_tflops(8192, 8192, 8192, 1e-3) == pytest.approx(2 * 8192 ** 3 / 1e-3 / 1e12)
    assert copy_gbps(1 << 30, 1e-3) == pytest.approx(2 * (1 << 30) / 1e-3 / 1e9)  # read + write
    assert speedup(3.0, 2.0) == 1.5
    stats = summarise([1.0, 1.2, 0.9, 1.1, 5.0], burst_s=0.8)
    assert stats["median"] == 1.1 and stats["repeats"] == 5 and stats["spread"] == pytest.approx(4.1 / 1.1)
    assert stats["burst_s"] == 0.8
    assert ratio_spread({"spread": 0.02}, {"spread": 0.01}) == pytest.approx(0.03)


def test_no_gpu_means_no_figures_and_says_why(tmp_path):
    no_gpu = {"device": None, "no_gpu_reason": "no GPU visible to PyTorch 2.13.0+cpu", "figures": {}}
    report = perf_report("dev", "sha256:abc", no_gpu)
    assert report["status"] == "no-gpu" and report["figures"] == {} and report["device"] is None
    assert "no GPU visible" in report["reason"]
    assert "no figures (no GPU visible" in render_perf(report)
    written = json.loads(write_report(tmp_path, report).read_text())
    assert written["status"] == "no-gpu" and written["figures"] == {}
    assert perf_report("dev", None, None)["status"] == "no-gpu"  # the suite wrote nothing at all


def test_figures_carry_their_fraction_of_the_device_reference():
    report = perf_report("25.12", "sha256:abc", measured())
    assert report["status"] == "measured"
    assert report["figures"]["gemm_bf16_tflops"]["fraction_of_datasheet"] == pytest.approx(700 / 989.4, abs=1e-3)
    assert report["figures"]["d2d_copy_gbps"]["fraction_of_datasheet"] == pytest.approx(2900 / 3350, abs=1e-3)
    assert "fraction_of_datasheet" not in report["figures"]["compile_speedup"]  # already a ratio
    assert report["reference"]["source"].startswith("NVIDIA H100")
    assert "71% of datasheet" in render_perf(report)


def test_unknown_device_has_figures_but_no_fractions():
    report = perf_report("25.12", None, measured(name="NVIDIA RTX 6000 Ada Generation"))
    assert report["reference"] is None
    assert all("fraction_of_datasheet" not in f for f in report["figures"].values())


@pytest.mark.parametrize("name,model", [
    ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB"), ("NVIDIA H100 PCIe", "H100 PCIe 80GB"),
    ("NVIDIA H200", "H200 SXM 141GB"), ("NVIDIA H200 NVL", "H200 NVL"), ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"),
    ("NVIDIA A100-PCIE-40GB", "A100 40GB"), ("NVIDIA L4", "L4"), ("NVIDIA L40S", "L40S"), ("Tesla T4", "T4"),
])
def test_reference_table_matches_torch_device_names(name, model):
    assert reference_for(name).model == model


def test_every_reference_names_its_source_and_devices_without_bf16_say_so():
    assert all(ref.source and ref.fp16_tflops > 0 and ref.memory_gbps > 0 for _, ref in REFERENCES)
    assert reference_for("Tesla V100-SXM2-32GB").bf16_tflops is None
    report = perf_report("20.12", None, measured(name="Tesla V100-SXM2-32GB"))
    assert "fraction_of_datasheet" not in report["figures"]["gemm_bf16_tflops"]


def test_regressions_beyond_the_threshold_only():
    base = perf_report("25.11", None, measured(bf16=700, fp16=720, copy=2900, compile_x=1.40))
    new = perf_report("25.12", None, measured(bf16=680, fp16=600, copy=2950, compile_x=1.30))
    found = {r["metric"]: r for r in regressions(new, base, threshold=0.05)}
    # bf16 -2.9 % is noise; fp16 -16.7 % and compile -7.1 % are regressions; copy improved.
    assert set(found) == {"gemm_fp16_tflops", "compile_speedup"}
    assert found["gemm_fp16_tflops"]["change"] == pytest.approx(600 / 720 - 1, abs=1e-4)
    assert regressions(new, base, threshold=0.2) == []
    combined = with_baseline(new, base, "nvcr.io/nvidia/pytorch:25.11-py3", 0.05)
    text = render_perf(combined)
    assert "REGRESSION gemm_fp16_tflops" in text and "REGRESSION compile_speedup" in text


def test_regressions_need_the_same_device_and_figures_on_both_sides():
    h100 = perf_report("a", None, measured())
    a100 = perf_report("b", None, measured(name="NVIDIA A100-SXM4-80GB"))
    with pytest.raises(ValueError, match="baseline ran on NVIDIA A100"):
        regressions(h100, a100)
    no_gpu = perf_report("c", None, None)
    assert regressions(h100, no_gpu) == []
    assert "no figures" in render_perf(with_baseline(h100, no_gpu, "old", 0.05))


@pytest.mark.parametrize("seconds_per_call,calls", [
    (0.0015, 67),   # an 8192^3 bf16 GEMM on an H100: 67 calls make a 100 ms sample
    (0.0007, 143),  # a 1 GiB device copy at ~3 TB/s
    (0.25, 1),      # a slow call is a sample by itself
    (0.0, 1),
])
def test_each_timed_sample_lasts_at_least_100_ms(seconds_per_call, calls):
    assert MIN_SAMPLE_S == 0.1
    assert calls_per_sample(seconds_per_call) == calls
    if seconds_per_call:
        assert calls * seconds_per_call >= MIN_SAMPLE_S


def test_the_summary_says_how_long_each_sample_was():
    stats = summarise([0.0015, 0.0016, 0.0015], calls=67)
    assert stats["calls_per_sample"] == 67 and stats["sample_s"] == pytest.approx(0.1005)


# --- the gate fed the figures of three runs on one H200 (issue 42): bf16, fp16, copy, compile, and beside
# them the bf16 burst (801 TFLOP/s in a 10-call burst at 1980 MHz). GEMM and copy repeat within 0.3 %; the
# compile figure of the old model moved by +-8 % between runs, its eager samples 26 % apart within one.
H200_RUNS = [
    {"gemm_bf16_tflops": 691.5, "gemm_fp16_tflops": 646.9, "d2d_copy_gbps": 4264, "compile_speedup": 1.27},
    {"gemm_bf16_tflops": 691.0, "gemm_fp16_tflops": 657.5, "d2d_copy_gbps": 4260, "compile_speedup": 1.35},
    {"gemm_bf16_tflops": 693.0, "gemm_fp16_tflops": 657.0, "d2d_copy_gbps": 4266, "compile_speedup": 1.15},
]
H200_SPREAD = {"gemm_bf16_tflops": 0.003, "gemm_fp16_tflops": 0.003, "d2d_copy_gbps": 0.003,
               "compile_speedup": 0.26}
UNITS = {"gemm_bf16_tflops": "TFLOP/s", "gemm_fp16_tflops": "TFLOP/s", "d2d_copy_gbps": "GB/s", "compile_speedup": "x"}


def h200_run(values: dict, spread: dict = H200_SPREAD, burst: float = 801.0) -> dict:
    figures = {metric: {"value": value, "unit": UNITS[metric], "what": metric, "spread": spread[metric]}
               for metric, value in values.items()}
    figures["gemm_bf16_tflops"]["burst"] = burst
    return perf_report("25.12", None, {"device": {"name": "NVIDIA H200", "count": 1, "capability": "9.0",
                                                  "memory_bytes": 150e9}, "figures": figures})


def test_each_h200_figure_against_the_datasheet_and_the_chips_own_burst():
    report = h200_run(H200_RUNS[0])
    bf16 = report["figures"]["gemm_bf16_tflops"]
    assert bf16["fraction_of_datasheet"] == pytest.approx(691.5 / 989.5, abs=1e-3)  # 70%: sustained vs peak
    assert bf16["fraction_of_burst"] == pytest.approx(691.5 / 801, abs=1e-3)  # 86% of what this chip reached
    assert bf16["spread"] == 0.003 and report["figures"]["compile_speedup"]["spread"] == 0.26
    assert "gemm_bf16_tflops         691.50 TFLOP/s  70% of datasheet, 86% of this chip's burst (801), spread 0.3%" \
        in render_perf(report)


@pytest.mark.parametrize("before,after", [(b, a) for b in range(3) for a in range(3) if a != b])
def test_a_good_h200_image_is_not_failed_on_noise(before, after):
    """Any of the three runs against any other: no regression; the compile figure, noisier than the
    threshold, is reported with the reason and not gated (with today's --threshold 0.05 it failed 3 of 6)."""
    verdicts = gate(h200_run(H200_RUNS[after]), h200_run(H200_RUNS[before]), 0.05)
    assert verdicts["regressions"] == []
    assert [item["metric"] for item in verdicts["not_gated"]] == ["compile_speedup"]
    assert "its spread within a run (26.0%; the baseline's 26.0%) is beyond the 5% threshold" in \
        verdicts["not_gated"][0]["reason"]
    assert {item["metric"] for item in verdicts["gated"]} == {"gemm_bf16_tflops", "gemm_fp16_tflops", "d2d_copy_gbps"}
    assert all(item["margin"] == pytest.approx(0.056) for item in verdicts["gated"])  # 5% + 0.3% + 0.3%


def test_a_real_regression_on_the_h200_is_caught():
    slower = {**H200_RUNS[2], "gemm_bf16_tflops": 640.0, "d2d_copy_gbps": 3900}  # -7.4% and -8.5%
    combined = with_baseline(h200_run(slower), h200_run(H200_RUNS[0]), "ngc:25.11", 0.05)
    found = {item["metric"]: item for item in combined["baseline"]["regressions"]}
    assert set(found) == {"gemm_bf16_tflops", "d2d_copy_gbps"}
    assert found["gemm_bf16_tflops"]["change"] == pytest.approx(640 / 691.5 - 1, abs=1e-4)
    text = render_perf(combined)
    assert "REGRESSION gemm_bf16_tflops: 640.00 vs 691.50 TFLOP/s (-7.4%, beyond the 5.6% margin" in text
    assert "NOT GATED compile_speedup: 1.15 vs 1.27 x (-9.4%)" in text


def test_the_steadier_compile_figure_is_gated_and_its_regression_caught():
    """The compile step at d_model 1024, batch 32x512: 1.262-1.269x over five repeats (0.6% spread)."""
    steady = {**H200_SPREAD, "compile_speedup": 0.006}
    good = gate(h200_run({**H200_RUNS[0], "compile_speedup": 1.262}, steady),
                h200_run({**H200_RUNS[1], "compile_speedup": 1.269}, steady), 0.05)
    assert good["regressions"] == [] and good["not_gated"] == []
    worse = gate(h200_run({**H200_RUNS[0], "compile_speedup": 1.10}, steady),
                 h200_run({**H200_RUNS[1], "compile_speedup": 1.269}, steady), 0.05)
    assert [item["metric"] for item in worse["regressions"]] == ["compile_speedup"]
    assert worse["regressions"][0]["margin"] == pytest.approx(0.062)


def test_figures_of_an_older_suite_without_a_spread_are_gated_on_the_threshold_alone():
    old = perf_report("25.11", None, measured())  # no spread recorded
    assert old["figures"]["gemm_bf16_tflops"]["spread"] is None
    verdicts = gate(perf_report("25.12", None, measured(bf16=660)), old, 0.05)
    assert [item["metric"] for item in verdicts["regressions"]] == ["gemm_bf16_tflops"]
    assert verdicts["regressions"][0]["margin"] == 0.05
