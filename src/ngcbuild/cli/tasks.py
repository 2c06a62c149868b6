"""The task table: every task of `ngcbuild` and `invoke`, declared once (declare.py says the shape).
invoke's collection, the help and docs/tasks.md (`invoke reference`) are made from it. Each task
calls one function of `ngcbuild.cli.commands` with its options as keywords; all logic lives below
that. The stages are in the order of a release, and the tasks in each stage in the order they run.

Adding a task: one `Task(...)` here (ARCHITECTURE.md, "Adding a task") and its function in commands.py.
"""

from ngcbuild.cli import commands
from ngcbuild.cli.collection import collection
from ngcbuild.cli.declare import Option, Renamed, Stage, Task, check_table
from ngcbuild.workspace.release_dir import BUMP

CHECK = Stage("check", "what to build, and whether its pins hold, before anything is built")
BUILD = Stage("build", "the image, from the manifest")
PROVE = Stage("prove", "that the image is what the manifest says, and what it holds")
SHIP = Stage("ship", "to a registry, signed, and on to the release registry")
DESCRIBE = Stage("describe", "release notes, the support matrix, what changed, the site")
WORKFLOWS = Stage("workflows", "the CI workflows run here through act, before any runner does")
STAGES = (CHECK, BUILD, PROVE, SHIP, DESCRIBE, WORKFLOWS)

# options of one meaning, shared by the tasks that take them
RELEASE = Option("release", "release name: manifests/R.yaml", value="R", required=True)
ENGINE = Option("engine", "Docker engine URL: unix:// or tcp:// (TLS from DOCKER_TLS_VERIFY, DOCKER_CERT_PATH)",
                value="URL", default_text="$DOCKER_HOST")
BASE_IMAGE = Option("base-image", "a mirror of the manifest's base image to build FROM", value="IMAGE", dest="base")
IMAGE = Option("image", "an image in the engine to use instead of R's", value="REF",
               default_text="the one in build/R/record.json")
PLATFORM = Option("platform", "linux/amd64 or linux/arm64; one platform per build", value="P",
                  default_text="the manifest's build.platform")
TRUSTED_KEY = Option("trusted-key", "public key FILE (PEM Ed25519) whose signatures are trusted", value="FILE",
                     repeatable=True, dest="trusted_keys",
                     default_text="the files of $NGCBUILD_TRUSTED_KEYS, :-separated")
CACHE_TO = Option("cache-to", "registry to push R's layer cache (every stage's image, under <repository>-cache) to",
                  value="HOST[:PORT]")
RELEASES = Option("releases", "only these releases, by name, separated by spaces or commas", value="NAMES")
REGISTRY = "HOST[:PORT]"  # --registry: the registry that holds R's images, in every task that takes it


def _registry(help_text: str, **more) -> Option:
    return Option("registry", help_text, value=REGISTRY, **more)


def _json(instead_of: str) -> Option:
    return Option("json", f"print JSON (for CI and scripts) instead of {instead_of}", value=None, dest="as_json")


RESOLVER_WHEELHOUSE = Option("wheelhouse", "folder of wheels the resolver may use as well as the indexes", value="DIR",
                             default_text="$PIP_FIND_LINKS when it is a folder")
# the index setting of every task that reads an index (core/indexes.py, docs/indexes.md): pip's and uv's spelling
INDEX_URL = Option("index-url", "the index to read instead of PyPI (a mirror, a proxy index); credentials as "
                   "user:password@ or from netrc", value="URL",
                   default_text="$UV_INDEX_URL, else $PIP_INDEX_URL, else https://pypi.org/simple")
EXTRA_INDEX_URL = Option("extra-index-url", "one more index to read after the release's own", value="URL",
                         repeatable=True, dest="extra_index_urls",
                         default_text="$UV_EXTRA_INDEX_URL, else $PIP_EXTRA_INDEX_URL")
APT_PROXY = Option("apt-proxy", "HTTP proxy (an apt cache) for every apt read: the build's apt steps, verify's; "
                   "never in the image", value="URL", default_text="$NGCBUILD_APT_PROXY")
OLD_BASE = Renamed("--base", "--base-image")
CHANGED_TASK = "its own task: `ngcbuild changed [--since REF] [--releases NAMES]`"
RELEASE_YML, RELEASE_OR_BUMP = "workflow=release", "workflow=release|bump"  # rehearse's options by workflow

TASKS = (
    # --- check
    Task("bump", CHECK, "Propose R's next release from its indexes, verified (build/NAME/bump.md)",
         commands.bump, (
             Option("release", "the release to bump: manifests/R.yaml, with its policy under bump:", value="R",
                    required=True),
             Option("as", "name of the proposal: manifests/NAME.yaml, constraints/NAME.txt, build/NAME/bump.md",
                    value="NAME", dest="as_name", default_text="none: required unless --check", excludes=("check",)),
             Option("check", "write nothing; exit 0 when R is current, 1 when a newer set exists, 3 when it could not "
                    "check", value=None),
             Option("base-release", "a derived R: re-resolve its lock on this release (its base's proposal) instead "
                    "of its base", value="NAME", default_text="R's base"),
             INDEX_URL,
             EXTRA_INDEX_URL,
         ), writes=("manifests/NAME.yaml", "constraints/NAME.txt", f"build/NAME/{BUMP}"),
         guide="monthly-release.md"),
    Task("changed", CHECK, "JSON: the releases and CI jobs whose inputs changed since --since (the plan)",
         commands.changed_jobs, (
             Option("since", "the commit or branch to compare with", value="REF", dest="base",
                    default_text="none: every buildable release"),
             RELEASES,
         ), guide="ci.md", renamed=(Renamed("--base", "--since"),)),
    Task("verify", CHECK, "Check every pin of R against its indexes for R's Python and platforms",
         commands.verify, (
             RELEASE,
             _json("the table"),
             Option("base-image", "the mirror of the base image the build will use (as build --base-image)",
                    value="IMAGE", dest="base"),
             INDEX_URL,
             EXTRA_INDEX_URL,
             APT_PROXY,
         ), guide="verify.md", renamed=(OLD_BASE,)),
    Task("resolve", CHECK, "Resolve a derived release on its base's pins; write constraints/R.lock",
         commands.resolve, (
             Option("release", "derived release name: manifests/derived/R.yaml", value="R", required=True),
             _json("the text"),
             RESOLVER_WHEELHOUSE,
             INDEX_URL,
             EXTRA_INDEX_URL,
         ), writes=("constraints/R.lock (or each conflict named, exit 2)",), guide="derived-images.md"),
    Task("fit", CHECK, "Which of our releases a requirement set fits: release, fits, conflicts",
         commands.fit, (
             Option("requirements", "requirements FILE (anywhere: a team's own) to try on every buildable release",
                    value="FILE", required=True),
             _json("the table"),
             RESOLVER_WHEELHOUSE,
             INDEX_URL,
             EXTRA_INDEX_URL,
             Option("index-as-of", "read the indexes as they were at the end of this day (as derive.index_as_of)",
                    value="YYYY-MM-DD", default_text="today"),
         ), guide="derived-images.md"),
    # --- build
    Task("base", BUILD, "Make R's base image locally (debootstrap) when it cannot be pulled", commands.base, (
        Option("release", "release whose base image to make", value="R", default="dev"),
        Option("platform", "linux/amd64 or linux/arm64; another than the manifest's is named IMAGE-ARCH", value="P",
               default_text="the manifest's build.platform"),
    ), writes=("an image in the engine: R's base.image",), guide="building.md"),
    Task("render", BUILD, "Write build/R/: the Dockerfile and every context file, byte-identical",
         commands.render, (RELEASE, BASE_IMAGE),
         writes=("build/R/ (Dockerfile, context files, expected.json)",), guide="building.md", renamed=(OLD_BASE,)),
    Task("build", BUILD, "Render and build R with the Docker SDK; tag <registry>/nvidia/pytorch:R-py3",
         commands.build, (
        RELEASE,
        _registry("registry R's tags name; unless --reuse-from says otherwise, an image of R's context is looked "
                  "for there too", default_text="nvcr.io"),
        Option("reuse-from", "registry to look for an image of R's context in before building (pulled and tagged "
               "for --registry); `local`: this engine only", value="HOST[:PORT]|local",
               default_text="the --registry given, else this engine only"),
        Option("ca-bundle", "CA bundle FILE for pip and apt inside the build (builder stage only)", value="FILE",
               default_text="$PIP_CERT, $SSL_CERT_FILE or $REQUESTS_CA_BUNDLE"),
        Option("wheelhouse", "folder of wheels to install offline", value="DIR",
               default_text="$PIP_FIND_LINKS when it is a folder"),
        Option("no-cache", "build without the engine's layer cache", value=None),
        BASE_IMAGE,
        PLATFORM,
        Option("force-platform", "build --platform even when the manifest's build.platforms does not list it",
               value=None, needs=("platform",)),
        Option("force", "build even when an image of the same context exists, on this engine or in the registry "
               "looked in", value=None),
        Option("label", "extra image label, e.g. the CI run, for cleanup by label", value="KEY=VALUE", repeatable=True,
               dest="labels"),
        Option("cache-from", "registry to pull R's layer cache (every stage's image) from first", value=REGISTRY),
        CACHE_TO,
        INDEX_URL,
        EXTRA_INDEX_URL,
        APT_PROXY,
        Option("other-lock-index", "build a derived R whose lock was resolved against another index than this "
               "build reads (the lock's hashes still decide)", value=None),
        ENGINE,
    ), writes=("build/R/", "build/R/record.json", "the image's tags"), guide="building.md", renamed=(OLD_BASE,)),
    Task("prune", BUILD, "Remove dangling images and ngcbuild's images beyond the newest --keep",
         commands.prune, (
             Option("keep", "ngcbuild images to keep per release and platform, newest first", value="N", default="2"),
             ENGINE,
         ), guide="building.md"),
    # --- prove
    Task("smoke", PROVE, "Run the smoke suite inside R's image (or on this host's Python with --host)",
         commands.smoke, (
             Option("release", "release whose image to test (with --host: whose manifest to check against)",
                    value="R"),
             Option("require-gpu", "turn every no-GPU skip into a failure (GPU runners)", value=None),
             Option("image", IMAGE.help, value=IMAGE.value, default_text=IMAGE.default_text, excludes=("host",)),
             Option("perf", "also run the performance smoke; figures in build/R/perf.json", value=None),
             Option("baseline", "with --perf: run it in this release's image (or image REF) too; report regressions",
                    value="R|REF", needs=("perf",), excludes=("host",)),
             Option("threshold", "with --baseline: a figure worse by more than this fraction plus both runs' "
                    "spread is a regression; one noisier than it is reported, not gated", value="F",
                    default_text="0.05", needs=("baseline",)),
             Option("host", "run the checks with the host's Python, no Docker (a GPU machine); in build/host/",
                    value=None),
             Option("expect-from-env", "with --host: expect the host's PyTorch, CUDA, cuDNN and NCCL, not a manifest's",
                    value=None, needs=("host",)),
             Option("python", "with --host: the interpreter whose PyTorch to check", value="PY",
                    default_text="this one", needs=("host",)),
             ENGINE,
         ), writes=("build/R/smoke-junit.xml", "record.json: smoke", "build/R/perf.json with --perf"),
         guide="smoke.md"),
    Task("repro", PROVE, "Build R again without the layer cache: the same release image, or per layer the files "
         "that differ", commands.repro, (
             RELEASE,
             Option("against", "the image to compare the rebuild with (in the engine, or pulled: a pushed release)",
                    value="REF", default_text="the one in build/R/record.json"),
             _registry("registry R's tags name (as build's)", default_text="nvcr.io"),
             Option("ca-bundle", "CA bundle FILE for pip and apt inside the build (as build's)", value="FILE",
                    default_text="$PIP_CERT, $SSL_CERT_FILE or $REQUESTS_CA_BUNDLE"),
             Option("wheelhouse", "folder of wheels to install offline (as build's)", value="DIR",
                    default_text="$PIP_FIND_LINKS when it is a folder"),
             BASE_IMAGE,
             PLATFORM,
             INDEX_URL,
             EXTRA_INDEX_URL,
             APT_PROXY,
             ENGINE,
         ), writes=("build/R/ and record.json, as build", "the image's tags, as build"), guide="reproducible.md"),
    Task("mutate", PROVE, "Plant each known defect in R's image; the smoke suite must catch every one",
         commands.mutate, (
             RELEASE,
             Option("image", "the image to plant the defects in, instead of R's", value="REF",
                    default_text="the one in build/R/record.json"),
             Option("jobs", "mutants tested side by side, each in its own container (1 to 64)", value="N", default="2"),
             ENGINE,
         ), writes=("build/R/mutants.json", "build/R/mutants.md"), guide="smoke.md"),
    Task("sbom", PROVE, "Write build/R/sbom.cdx.json (CycloneDX) from inside the built image", commands.sbom, (
        RELEASE,
        Option("image", "the image to describe, instead of R's", value="REF",
               default_text="the one in build/R/record.json"),
    ), writes=("build/R/sbom.cdx.json", "record.json: sbom"), guide="supply-chain.md"),
    Task("audit", PROVE, "Check the SBOM's Python distributions against PyPI's advisory data",
         commands.audit, (
             RELEASE,
             Option("pypi-mirror", "a mirror of PyPI's JSON API to ask instead of PyPI: https://HOST/PATH (plain http "
                    "on the loopback only)", value="URL",
                    default_text="$NGCBUILD_PYPI_MIRROR, else beside the index's /simple, else https://pypi.org/pypi"),
             INDEX_URL,
             EXTRA_INDEX_URL,
         ), writes=("build/R/audit.json", "record.json: audit"), guide="supply-chain.md"),
    # --- ship
    Task("push", SHIP, "Push every tag of R (its layers compressed by ngcbuild: one manifest digest on any engine), "
         "verify the digest the registry serves, record it", commands.push, (
        RELEASE,
        _registry("registry to push R's tags to", required=True),
        CACHE_TO,
        ENGINE,
    ), writes=("record.json: pushed", "record.json: cache_pushed with --cache-to"), guide="publishing.md",
        renamed=(Renamed("--cache", "--cache-to HOST[:PORT]"),)),
    Task("keygen", SHIP, "Make an Ed25519 key pair for signing: PATH (mode 0600) and PATH.pub",
         commands.keygen, (
             Option("out", "where the private key goes, inside the project; the public key goes beside it",
                    value="PATH", default_text="keys/signing.key"),
         ), writes=("keys/signing.key", "keys/signing.key.pub"), guide="trust-model.md"),
    Task("attest", SHIP, "Sign the provenance of R's pushed images; attach it, the SBOM and the audit",
         commands.attest, (
             RELEASE,
             _registry("registry R was pushed to; the attestations go beside its images", required=True),
             Option("key", "private key FILE (PEM Ed25519, mode 0600)", value="FILE",
                    default_text="$NGCBUILD_SIGNING_KEY_FILE"),
         ), writes=("record.json: attested",), guide="trust-model.md"),
    Task("publish", SHIP, "Push one tag per platform of R, then R-py3 as a multi-arch manifest list",
         commands.publish, (
             RELEASE,
             _registry("registry to publish R's platforms and its multi-arch list to", required=True),
             Option("records", "folder of the platform jobs' record.json files (CI): list what they pushed",
                    value="DIR"),
         ), writes=("record.json: published",), guide="publishing.md"),
    Task("promote", SHIP, "Copy R's tested, attested image by digest to another registry",
         commands.promote, (
             RELEASE,
             Option("from", "registry to copy from", value=REGISTRY, required=True, dest="source"),
             Option("to", "registry to copy to", value=REGISTRY, required=True, dest="target"),
             TRUSTED_KEY,
             Option("zstd", "also make its zstd variant on --to from the promoted layers, tagged R-py3-zstd "
                    "(the tag and -zstd): for Docker 23+, containerd, Podman; a list's per platform", value=None),
         ), writes=("record.json: promoted",), guide="publishing.md"),
    Task("verify-attestation", SHIP, "Check an image's attestations in its registry; print what they say",
         commands.verify_attestation, (
             Option("registry-image", "the image in its registry whose attestations to check",
                    value="HOST[:PORT]/NAME:TAG|@DIGEST", required=True, dest="image"),
             TRUSTED_KEY,
         ), guide="trust-model.md", renamed=(Renamed("--image", "--registry-image"),)),
    # --- describe
    Task("notes", DESCRIBE, "Write build/R/release-notes.md: NVIDIA's sections, from the manifests",
         commands.notes, (RELEASE,), writes=("build/R/release-notes.md",), guide="documentation.md"),
    Task("matrix", DESCRIBE, "Print the support matrix of every release, newest first", commands.matrix,
         (_json("Markdown"),), guide="documentation.md",
         renamed=(Renamed("--changed", CHANGED_TASK), Renamed("--base", CHANGED_TASK),
                  Renamed("--releases", CHANGED_TASK))),
    Task("diff", DESCRIBE, "What changed from release OLD to NEW: components, packages, settings",
         commands.diff, (
             Option("old", "the earlier release", positional=True),
             Option("new", "the later release", positional=True),
             _json("Markdown"),
             Option("images", "compare the two built images (their build/R/sbom.cdx.json and record.json): packages, "
                    "libraries, layers, env, labels", value=None),
         ), guide="documentation.md"),
    Task("docs", DESCRIBE, "Build the site in build/site/: matrix, notes, diffs and the guide (docs/)",
         commands.docs, (
             Option("screenshot", "no screenshot of the index (one is taken when Chromium is installed)",
                    value=None, default=True),
         ), writes=("build/site/", "build/site/index.png"), guide="documentation.md"),
    # --- workflows
    Task("rehearse", WORKFLOWS, "Run a CI workflow here through act, with local stand-ins for its actions",
         commands.rehearse, (
             Option("workflow", "release (release.yml), ci (ci.yml's --job jobs) or bump (bump.yml)", value="NAME",
                    default="release"),
             Option("releases", "release.yml: the releases to build, by name (the dispatch input), e.g. dev; "
                    "bump.yml: the release to bump", value="NAMES", dest="release", needs=(RELEASE_OR_BUMP,)),
             Option("staging-registry", "release.yml: the registry the build jobs push to", value=REGISTRY,
                    dest="staging", needs=(RELEASE_YML,)),
             Option("release-registry", "release.yml: the registry the publish job promotes to", value=REGISTRY,
                    dest="registry", needs=(RELEASE_YML,)),
             Option("secret-file", "release.yml: KEY=VALUE lines for act's secrets", value="FILE",
                    needs=(RELEASE_YML,)),
             Option("require-gpu", "release.yml: keep smoke's --require-gpu (a rehearsal host has no GPU)",
                    value=None, needs=(RELEASE_YML,)),
             Option("job", "ci.yml: a job to run: lint, unit", value="NAME", repeatable=True, dest="jobs",
                    needs=("workflow=ci",)),
             Option("unit-tests", "ci.yml: the unit job runs only the tests `pytest -k EXPR` selects", value="EXPR",
                    default_text="every unit test", needs=("workflow=ci",)),
             Option("as", "bump.yml: the name of the proposed release (the dispatch input)", value="NAME",
                    dest="as_name", needs=("workflow=bump",)),
         ), writes=("build/rehearse/RUN/",), guide="ci.md",
         renamed=(Renamed("--release", "--releases"), Renamed("--staging", "--staging-registry"),
                  Renamed("--registry", "--release-registry"))),
)

check_table(TASKS, STAGES)
namespace = collection(TASKS)
