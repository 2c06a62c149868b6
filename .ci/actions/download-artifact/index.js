// download-artifact stand-in: the inputs of actions/download-artifact@v4 that our workflows use,
// served by @actions/artifact@1 from act's artifact server. With `pattern`, every artifact is fetched
// into a scratch folder and those whose name matches are moved to PATH/NAME (PATH with merge-multiple),
// as the real action lays them out.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const core = require("@actions/core");
const artifact = require("@actions/artifact");
const minimatch = require("minimatch");

function moveInto(source, target) {
  fs.mkdirSync(target, { recursive: true });
  for (const entry of fs.readdirSync(source)) {
    fs.renameSync(path.join(source, entry), path.join(target, entry));
  }
}

async function main() {
  process.chdir(process.env.GITHUB_WORKSPACE || process.cwd());
  const name = core.getInput("name");
  const pattern = core.getInput("pattern");
  const target = path.resolve(core.getInput("path") || ".");
  const merge = core.getBooleanInput("merge-multiple");
  const client = artifact.create();
  if (name) {
    await client.downloadArtifact(name, target, { createArtifactFolder: false });
    core.info(`downloaded artifact ${name} into ${target}`);
  } else {
    const scratch = fs.mkdtempSync(path.join(process.env.RUNNER_TEMP || os.tmpdir(), "download-artifact-"));
    const all = await client.downloadAllArtifacts(scratch);
    const chosen = all.filter((a) => !pattern || minimatch(a.artifactName, pattern));
    if (chosen.length === 0) {
      throw new Error(`no artifact of this run matches ${JSON.stringify(pattern)} (there are: ` +
        `${all.map((a) => a.artifactName).join(", ") || "none"})`);
    }
    for (const a of chosen) {
      moveInto(path.join(scratch, a.artifactName), merge ? target : path.join(target, a.artifactName));
      core.info(`downloaded artifact ${a.artifactName} into ${merge ? target : path.join(target, a.artifactName)}`);
    }
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  core.setOutput("download-path", target);
}

main().catch((err) => core.setFailed(`download-artifact stand-in: ${err.message}`));
