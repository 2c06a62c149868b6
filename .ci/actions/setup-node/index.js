// setup-node stand-in: the host's node (the one running this action) stays on PATH; its version is
// the output, and a version other than the one asked is said in the log.
"use strict";
const path = require("path");
const core = require("@actions/core");

const asked = core.getInput("node-version");
const host = process.version.replace(/^v/, "");
if (asked && !`${host}.`.startsWith(`${asked}.`)) {
  core.warning(`setup-node stand-in: the workflow asks for Node.js ${asked}; using the host's ${host}`);
}
core.addPath(path.dirname(process.execPath));
core.setOutput("node-version", `v${host}`);
core.info(`setup-node stand-in: Node.js ${host} (host)`);
