"""Issue 55's surfaces: the index setting on every task that reads an index (build, repro, verify, audit
beside resolve, fit and bump), the apt proxy (`--apt-proxy`, $NGCBUILD_APT_PROXY) of build, repro and
verify, and audit's advisories asked beside the index setting's mirror. Bad values are refused in one
line naming the setting, exit 2, before the engine or any index is asked, never echoing a login, an
escape sequence or the whole of a huge value."""

from __future__ import annotations

from .hostile import SECRET, HostileCase, dev, edit, setup_all, write
from .hostile import nothing_built as untouched
from .trust import TQDM_LATEST, USER, audited, index, index_asked

LOGIN = f"{USER}:{SECRET}"
# values every URL setting refuses: (name, value, words the message must hold besides the setting)
BAD_URLS = [
    ("option-like", "--release", ()),  # the parser refuses it as a missing value
    ("file-scheme", f"file://{LOGIN}@x/simple", ()),
    ("control-characters", f"https://{LOGIN}@mirror.example/\x1b[2Jsimple", ()),
    ("huge", f"https://{LOGIN}@mirror.example/" + "p" * 5000, ()),
    ("login-and-garbage", f"https://{LOGIN}@mirror example/simple", ()),
    ("no-host", "https:///simple", ()),
]
# what an apt proxy refuses besides those: a path or a query (a proxy is an address alone)
BAD_PROXIES = BAD_URLS + [
    ("with-path", f"http://{LOGIN}@apt-cache.example:3142/debian", ("address alone",)),
    ("with-token-query", f"http://apt-cache.example:3142/?token={SECRET}", ("address alone",)),
]
TASKS = {  # the tasks that take the index setting, with the arguments of one run each
    "build": ("build", "--release", "dev"),
    "repro": ("repro", "--release", "dev"),
    "verify": ("verify", "--release", "dev"),
    "audit": ("audit", "--release", "dev"),
}


def no_audit_written(project, outside) -> str | None:
    return "build/dev/audit.json was written" if (project.root / "build/dev/audit.json").exists() else None


def mirror_cases(add) -> None:
    klass = "index and apt settings"
    for task, argv in TASKS.items():
        setup = audited if task == "audit" else dev
        nothing_built = no_audit_written if task == "audit" else untouched
        for name, value, words in BAD_URLS:
            add(HostileCase(f"{task}-index-url-{name}", klass, (*argv, f"--index-url={value}"), setup,
                            mentions=("--index-url", *words), absent=(SECRET, "\x1b", "p" * 300),
                            after=nothing_built))
        add(HostileCase(f"{task}-extra-index-url-env-{BAD_URLS[1][0]}", klass, argv, setup,
                        extra_env={"PIP_EXTRA_INDEX_URL": f"https://ok.example/simple {BAD_URLS[1][1]}"},
                        mentions=("$PIP_EXTRA_INDEX_URL",), absent=(SECRET,), after=nothing_built))
        add(HostileCase(f"{task}-index-env-uv-first", klass, argv, setup,
                        extra_env={"UV_INDEX_URL": f"https://{LOGIN}@mirror.example/simple?token={SECRET}",
                                   "PIP_INDEX_URL": "https://fine.example/simple"},
                        mentions=("$UV_INDEX_URL", "query"), absent=(SECRET,), after=nothing_built))
    for task in ("build", "repro", "verify"):
        for name, value, words in BAD_PROXIES:
            add(HostileCase(f"{task}-apt-proxy-{name}", klass, (*TASKS[task], f"--apt-proxy={value}"), dev,
                            mentions=("--apt-proxy", *words), absent=(SECRET, "\x1b", "p" * 300), after=untouched))
        add(HostileCase(f"{task}-apt-proxy-env-file-scheme", klass, TASKS[task], dev,
                        extra_env={"NGCBUILD_APT_PROXY": f"ftp://{LOGIN}@apt-cache.example/"},
                        mentions=("$NGCBUILD_APT_PROXY",), absent=(SECRET,), after=untouched))
    for task in ("build", "repro"):
        # a mirror on this machine's loopback is read on the host's network: not through a remote engine
        for name, option in (("index", f"--index-url=http://{LOGIN}@127.0.0.1:9/simple"),
                             ("apt-proxy", f"--apt-proxy=http://{LOGIN}@localhost:9")):
            add(HostileCase(f"{task}-loopback-{name}-through-a-remote-engine", klass, (*TASKS[task], option), dev,
                            extra_env={"DOCKER_HOST": "tcp://gpu-runner.example:2375"},
                            mentions=("loopback", "gpu-runner.example"), absent=(SECRET,), after=untouched))
        # a chosen mirror that is down: one line before the engine is asked, not a failed step in a build's log
        for name, option, where in (("index", f"--index-url=http://{LOGIN}@127.0.0.1:9/simple", "--index-url"),
                                    ("extra-index", f"--extra-index-url=https://{LOGIN}@mirror.invalid/simple",
                                     "name not found"),
                                    ("apt-proxy", f"--apt-proxy=http://{LOGIN}@localhost:9", "the apt proxy")):
            add(HostileCase(f"{task}-{name}-takes-no-connection", klass, (*TASKS[task], option), dev, exit_status=1,
                            mentions=("takes no connection", where), absent=(SECRET,), after=untouched))
    lock_cases(add, klass)
    # the audit's advisories follow the index setting where the mirror serves PyPI's JSON API beside
    # its simple index (/pypi beside /simple); its login goes to that host alone and is never shown
    add(HostileCase("audit-advisories-beside-the-index", klass,
                    ("audit", "--release", "dev", "--index-url", f"http://{LOGIN}@INDEX/simple"), audited,
                    serve=index(TQDM_LATEST), exit_status=0, shows=("| tqdm | 4.70.1 | checked |",
                                                                    "the JSON API beside the index"),
                    absent=(SECRET,), hides=(SECRET,), after=index_asked, time_bound=60))
    add(HostileCase("audit-advisories-beside-the-env-index", klass, ("audit", "--release", "dev"), audited,
                    serve=index(TQDM_LATEST), extra_env={"UV_INDEX_URL": f"http://{LOGIN}@INDEX/simple/"},
                    exit_status=0, shows=("| tqdm | 4.70.1 | checked |", "from $UV_INDEX_URL"),
                    absent=(SECRET,), hides=(SECRET,), after=index_asked, time_bound=60))


def lock_cases(add, klass: str) -> None:
    """A derived lock resolved against another index than the build reads: refused in one line before the
    engine is asked, naming both indexes without their logins; --other-lock-index builds it anyway."""
    from .derived_hostile import BASE_RECORD, copy_team_vision

    lock = "constraints/team-vision.lock"
    recorded = setup_all(dev, lambda p, o: copy_team_vision(p),
                         write("build/dev/record.json", BASE_RECORD.replace("DIGEST", "sha256:" + "1" * 64)),
                         edit(lock, "# base: dev\n", "# base: dev\n# index: https://mirror.example/simple\n"))
    add(HostileCase("lock-resolved-against-another-index", klass, ("build", "--release", "team-vision"), recorded,
                    mentions=("team-vision.lock", "resolved against https://mirror.example/simple",
                              "this build reads https://pypi.org/simple", "--other-lock-index")))
    add(HostileCase("lock-index-with-login-never-shown", klass,
                    ("build", "--release", "team-vision", "--index-url", f"https://{LOGIN}@other.example/simple"),
                    recorded, mentions=("this build reads https://other.example/simple (from --index-url)",),
                    absent=(SECRET,)))
