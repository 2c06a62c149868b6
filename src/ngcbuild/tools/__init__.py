"""The project's own tools, apart from the pipeline: benchmarks (BENCHMARKS.md), the
reliability figures (RELIABILITY.md) and the CI selection of changed releases."""
