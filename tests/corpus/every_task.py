"""Every task of the task table (cli/tasks.py), walked the way issue 43 asks:

- **secrets printed**: each task run with credentials in everything a user may hand it (index URLs and
  a proxy in the environment, the registry's password, a mirror with a login, image references and
  registries written with a login in its options), and again with a manifest whose
  `pip.extra_index_urls` carries one: no message, no line of output and no file it writes or changes
  (build/, the site, keys) holds the secret, in clear or as a Docker config's base64;
- **printing**: each task run with its standard output closed (`>&-`), with a pipe its reader closes
  after one byte (`| head -c1`), and under an ASCII locale (`LC_ALL=C`, UTF-8 mode off) with non-ASCII
  text to print (a release summary, an advisory's id and summary): the status is the task's own, there
  is no traceback nor "Exception ignored", and what it writes to files is written.

The tasks run offline: what they reach (an index, a registry, a proxy) is refused or unreachable at once,
and the engine is the corpus's sentinel; each run's status is the one that offline state gives.
"""

from __future__ import annotations

import json

from .hostile import (
    GOOD_RECORD,
    MANIFEST,
    SECRET,
    HostileCase,
    a_key,
    dev,
    edit,
    git_repo,
    setup_all,
    write,
)
from .trust import AUDIT_SBOM, audited, index

CLOSED_PORT = "127.0.0.1:9"  # discard: nothing listens there
LOGIN = f"u:{SECRET}"
# credentials in everything of the environment that may hold one
CREDENTIAL_ENV = {
    "PIP_INDEX_URL": f"https://{LOGIN}@index.invalid/simple", "PIP_EXTRA_INDEX_URL": f"https://{LOGIN}@extra.invalid/",
    "UV_INDEX_URL": f"https://{LOGIN}@index.invalid/simple", "UV_EXTRA_INDEX_URL": f"https://{LOGIN}@extra.invalid/",
    "UV_INDEX": f"team=https://{LOGIN}@team.invalid/simple", "NGCBUILD_PYPI_MIRROR": f"https://{LOGIN}@mirror.invalid/pypi",
    "NGCBUILD_REGISTRY_USER": "u", "NGCBUILD_REGISTRY_PASSWORD": SECRET, "NGCBUILD_REGISTRY_HOST": CLOSED_PORT,
    "HTTPS_PROXY": f"http://{LOGIN}@{CLOSED_PORT}", "https_proxy": f"http://{LOGIN}@{CLOSED_PORT}",
    "HTTP_PROXY": f"http://{LOGIN}@{CLOSED_PORT}", "http_proxy": f"http://{LOGIN}@{CLOSED_PORT}",
    "NO_PROXY": "", "no_proxy": "", "NGCBUILD_HTTP_DEADLINE_S": "5",
    "NGCBUILD_APT_PROXY": f"http://{LOGIN}@{CLOSED_PORT}",
}
ASCII_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}
NON_ASCII = "naïve — “quoted” ß 漢字"
REF = f"{LOGIN}@registry.invalid/nvidia/pytorch:dev-py3"  # an image reference written with a login


def non_ascii(project, outside):
    """dev, its summary in words no ASCII locale can print (matrix, notes, diff and the site show it)."""
    dev(project, outside)
    edit(MANIFEST, "summary: ", f"summary: {NON_ASCII} ")(project, outside)


def requirements_with_login(project, outside):
    non_ascii(project, outside)
    write("requirements.txt", f"demo @ https://{LOGIN}@files.invalid/demo-1.0-py3-none-any.whl#sha256={'0' * 64}\n"
          f"--extra-index-url https://{LOGIN}@extra.invalid/simple\n-ihttps://{LOGIN}@index.invalid/simple\n"
          )(project, outside)


def with_records(project, outside):
    non_ascii(project, outside)
    write("build/dev/record.json", GOOD_RECORD)(project, outside)


def with_sbom(project, outside):
    audited(project, outside)  # dev, recorded, with an SBOM
    edit(MANIFEST, "summary: ", f"summary: {NON_ASCII} ")(project, outside)


def in_git(project, outside):
    non_ascii(project, outside)
    git_repo(project, outside)


def with_trusted_key(project, outside):
    non_ascii(project, outside)
    a_key("keys/trusted.pub", public=True)(project, outside)


def with_secret_file(project, outside):
    non_ascii(project, outside)
    write("secrets.env", f"RELEASE_REGISTRY_PASSWORD={SECRET}\n")(project, outside)


ADVISORY = {"id": "GHSA-naïve-ß", "aliases": ["CVE-2099-1"], "fixed_in": ["9.9"], "summary": NON_ASCII,
            "link": "https://osv.dev/vulnerability/GHSA-x"}
ADVISED = index({"/pypi/tqdm/json": (200, json.dumps({"info": {"version": "4.70.1"},
                                                       "vulnerabilities": [ADVISORY]}).encode()),
                 "/pypi/torch/2.13.0/json": (200, json.dumps({"info": {"version": "2.13.0"},
                                                              "vulnerabilities": []}).encode())})

# task -> its runs: (argv, setup, the status offline, a server it talks to or None). Every task of the
# table has at least one (test_every_task_is_walked).
# (bump --check offline: 3, "could not check", not 1, "a newer set": bump.yml acts on each)
RUNS = {
    "bump": [(("bump", "--release", "dev", "--check"), non_ascii, 3, None)],
    "changed": [(("changed", "--since", "HEAD"), in_git, 0, None)],
    "verify": [(("verify", "--release", "dev", "--json"), non_ascii, 0, None),  # every row "not verified": offline
               (("verify", "--release", "dev", "--base-image", REF), non_ascii, 2, None)],
    "resolve": [(("resolve", "--release", "dev"), non_ascii, 2, None)],
    "fit": [(("fit", "--requirements", "requirements.txt"), requirements_with_login, 2, None)],
    "base": [(("base", "--release", "dev"), non_ascii, 1, None)],
    "render": [(("render", "--release", "dev"), non_ascii, 0, None),
               (("render", "--release", "dev", "--base-image", REF), non_ascii, 2, None)],
    "build": [(("build", "--release", "dev", "--registry", f"{LOGIN}@registry.invalid"), non_ascii, 2, None),
              (("build", "--release", "dev", "--cache-from", CLOSED_PORT, "--engine",
                f"tcp://{LOGIN}@127.0.0.1:9"), non_ascii, 2, None)],
    "prune": [(("prune",), non_ascii, 1, None)],
    "smoke": [(("smoke", "--release", "dev", "--image", REF), with_records, 2, None),
              (("smoke", "--release", "dev"), with_records, 1, None)],
    "mutate": [(("mutate", "--release", "dev", "--image", REF), with_records, 2, None)],
    "sbom": [(("sbom", "--release", "dev", "--image", REF), with_records, 2, None),
             (("sbom", "--release", "dev"), with_records, 1, None)],
    "audit": [(("audit", "--release", "dev"), with_sbom, 1, None),
              # the fake index (on the loopback, past the proxy) answers an advisory in non-ASCII words
              (("audit", "--release", "dev", "--pypi-mirror", f"http://{LOGIN}@INDEX/pypi"), with_sbom, 1, ADVISED)],
    "push": [(("push", "--release", "dev", "--registry", f"{LOGIN}@registry.invalid"), with_records, 2, None),
             (("push", "--release", "dev", "--registry", CLOSED_PORT), with_records, 1, None)],
    "keygen": [(("keygen", "--out", "keys/signing.key"), non_ascii, 0, None)],
    "attest": [(("attest", "--release", "dev", "--registry", CLOSED_PORT), with_records, 2, None)],
    "publish": [(("publish", "--release", "dev", "--registry", CLOSED_PORT), with_records, 1, None)],
    "promote": [(("promote", "--release", "dev", "--from", f"{LOGIN}@a.invalid", "--to", "b.invalid"),
                 with_records, 2, None),
                (("promote", "--release", "dev", "--from", CLOSED_PORT, "--to", "127.0.0.1:10"), with_records, 2,
                 None)],
    "verify-attestation": [(("verify-attestation", "--registry-image", REF), non_ascii, 2, None),
                           (("verify-attestation", "--registry-image", f"{CLOSED_PORT}/nvidia/pytorch:dev-py3",
                             "--trusted-key", "keys/trusted.pub"), with_trusted_key, 1, None)],
    "notes": [(("notes", "--release", "dev"), non_ascii, 0, None)],
    "matrix": [(("matrix",), non_ascii, 0, None), (("matrix", "--json"), non_ascii, 0, None)],
    "diff": [(("diff", "dev", "dev"), non_ascii, 0, None), (("diff", "dev", "dev", "--json"), non_ascii, 0, None)],
    "docs": [(("docs", "--no-screenshot"), non_ascii, 0, None)],
    "rehearse": [(("rehearse", "--releases", "dev", "--staging-registry", f"{LOGIN}@registry.invalid",
                   "--release-registry", CLOSED_PORT, "--secret-file", "secrets.env"), with_secret_file, 2, None)],
}
# runs made as fresh processes (the rest are forked from the corpus's zygote, which sets up the locale
# and the standard streams as the interpreter would): the zygote's stand-ins checked against the real thing
IN_A_PROCESS = {("matrix-1", "ascii-locale"), ("audit-2", "ascii-locale"), ("notes", "stdout-closed"),
                ("diff-2", "pipe-closed"), ("render-1", "ascii-locale")}
# how the command's standard output is taken, and under which locale
PRINTING = {"captured": ({}, "captured"), "stdout-closed": ({}, "closed"), "pipe-closed": ({}, "head1"),
            "ascii-locale": (ASCII_LOCALE, "captured")}


def manifest_with_login(project, outside):
    """dev whose pip.extra_index_urls names an index with a login in its URL."""
    dev(project, outside)
    edit(MANIFEST, "    - https://download.pytorch.org/whl/cpu\n",
         f"    - https://{LOGIN}@index.invalid/simple\n")(project, outside)


def every_task_cases(add) -> None:
    for task, runs in RUNS.items():
        for number, (argv, setup, status, serve) in enumerate(runs, 1):
            name = f"{task}-{number}" if len(runs) > 1 else task
            for variant, (env, stdout) in PRINTING.items():
                add(HostileCase(f"every-task-{name}-{variant}", "printing" if variant != "captured" else
                                "secrets printed", argv, setup, exit_status=status,
                                extra_env={**CREDENTIAL_ENV, **env, **({"NO_PROXY": "127.0.0.1"} if serve else {})},
                                stdout=stdout, scan_outputs=True, engine_allowed=True, serve=serve, time_bound=60,
                                process=(name, variant) in IN_A_PROCESS))
        argv, _, _, _ = runs[0]
        add(HostileCase(f"every-task-{task}-manifest-login", "secrets printed", argv,
                        setup_all(manifest_with_login, _extras(task)), exit_status=_manifest_status(task),
                        scan_outputs=True, engine_allowed=True, time_bound=60))


def _extras(task: str):
    """What the task's first run needs besides the manifest (a record, an SBOM, a git history)."""
    setup = RUNS[task][0][1]

    def step(project, outside):
        if setup is with_sbom:
            write("build/dev/sbom.cdx.json", AUDIT_SBOM)(project, outside)
            write("build/dev/record.json", GOOD_RECORD)(project, outside)
        elif setup is with_records:
            write("build/dev/record.json", GOOD_RECORD)(project, outside)
        elif setup is requirements_with_login:
            write("requirements.txt", "demo==1.0\n")(project, outside)
        elif setup is with_secret_file:
            write("secrets.env", f"RELEASE_REGISTRY_PASSWORD={SECRET}\n")(project, outside)
    return step


# tasks that never load a manifest, or not dev's: they run as they would without the login in it
_MANIFEST_FREE = {"keygen": 0, "verify-attestation": 2, "rehearse": 2, "changed": 2, "resolve": 2}


def _manifest_status(task: str) -> int:
    return _MANIFEST_FREE.get(task, 2)
