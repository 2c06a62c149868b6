// setup-python stand-in: a virtual environment made from the host's python3, put on PATH as
// setup-python puts the Python it installs. Never installs into the host's Python itself (a
// `pip install -e .` in a job must not repoint the host's packages).
"use strict";
const path = require("path");
const { execFileSync } = require("child_process");
const core = require("@actions/core");

try {
  const asked = core.getInput("python-version");
  const host = execFileSync("python3", ["-c", "import platform; print(platform.python_version())"]).toString().trim();
  if (asked && !`${host}.`.startsWith(`${asked}.`)) {
    core.warning(`setup-python stand-in: the workflow asks for Python ${asked}; using the host's ${host}`);
  }
  const venv = path.join(process.env.RUNNER_TEMP, "setup-python-venv");
  execFileSync("python3", ["-m", "venv", "--clear", venv], { stdio: "inherit" });
  core.addPath(path.join(venv, "bin"));
  core.exportVariable("pythonLocation", venv);
  core.setOutput("python-version", host);
  core.setOutput("python-path", path.join(venv, "bin", "python"));
  core.info(`setup-python stand-in: Python ${host} (host) in a fresh virtual environment at ${venv}`);
} catch (err) {
  core.setFailed(`setup-python stand-in: ${err.message}`);
}
