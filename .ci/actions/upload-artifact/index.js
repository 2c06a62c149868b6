// upload-artifact stand-in: the inputs of actions/upload-artifact@v4 that our workflows use, the
// files found with @actions/glob and uploaded with @actions/artifact@1 to act's artifact server.
// As the real action does, the artifact's root is the deepest folder common to every search path.
"use strict";
const fs = require("fs");
const path = require("path");
const core = require("@actions/core");
const glob = require("@actions/glob");
const artifact = require("@actions/artifact");

function commonRoot(searchPaths) {
  if (searchPaths.length === 1) {
    const only = searchPaths[0];
    return fs.existsSync(only) && fs.statSync(only).isDirectory() ? only : path.dirname(only);
  }
  const split = searchPaths.map((p) => p.split(path.sep));
  const common = [];
  for (let i = 0; split.every((parts) => i < parts.length && parts[i] === split[0][i]); i++) {
    common.push(split[0][i]);
  }
  return common.join(path.sep) || path.sep;
}

async function main() {
  process.chdir(process.env.GITHUB_WORKSPACE || process.cwd());
  const name = core.getInput("name") || "artifact";
  const ifNone = core.getInput("if-no-files-found") || "warn";
  if (!["warn", "error", "ignore"].includes(ifNone)) {
    throw new Error(`if-no-files-found: expected warn, error or ignore, got ${JSON.stringify(ifNone)}`);
  }
  const globber = await glob.create(core.getInput("path", { required: true }), { implicitDescendants: true });
  const files = (await globber.glob()).filter((p) => fs.statSync(p).isFile());
  if (files.length === 0) {
    const message = `no files were found with the path ${JSON.stringify(core.getInput("path"))}; no artifact ${name} uploaded`;
    if (ifNone === "error") throw new Error(message);
    if (ifNone === "warn") core.warning(message);
    else core.info(message);
    return;
  }
  const root = commonRoot(globber.getSearchPaths());
  const result = await artifact.create().uploadArtifact(name, files, root, { continueOnError: false });
  if (result.failedItems.length > 0) throw new Error(`could not upload ${result.failedItems.join(", ")}`);
  core.info(`uploaded artifact ${name}: ${files.length} file(s) from ${path.relative(process.cwd(), root) || "."}`);
}

main().catch((err) => core.setFailed(`upload-artifact stand-in: ${err.message}`));
