"""The project's own tools, which only a checkout has (not in the wheel: setuptools finds packages
under src/ only): the tasks `invoke test`, `golden`, `bench` and `reliability` (tasks.py), the
benchmarks (BENCHMARKS.md), the reliability figures (RELIABILITY.md) and the golden Dockerfiles.
They may use the test suite's helpers; the product (src/ngcbuild) never imports this package."""

# The tasks.py of a user's project (a scratch project of the benchmarks and tests): the product's
# tasks only; the checkout's own tasks.py adds the tools of this package.
USER_TASKS = (
    "from ngcbuild.cli import take_over_from_invoke\n"
    "from ngcbuild.cli.tasks import namespace\n\n"
    "take_over_from_invoke(namespace)  # `invoke TASK` behaves as `ngcbuild TASK`\n\n"
    "__all__ = [\"namespace\"]\n"
)
