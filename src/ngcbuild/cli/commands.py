"""One function per task, on the project found from the current directory: its root is the nearest
folder, here or above, that holds manifests/ and templates/image/.

Each command imports what it needs when it runs: the Docker SDK, pydantic and Jinja cost tenths of a
second that a command which does not use them should not pay.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

from ngcbuild.core.errors import UserError, excerpt, shown_path
from ngcbuild.core.project import Project


def project() -> Project:
    return Project.find(Path.cwd())


def render(release: str, base=None) -> None:
    from ngcbuild.render.context import render_release

    rendered = render_release(project(), release, base=base)
    print(f"rendered {len(rendered.files)} files into {rendered.directory} (context {rendered.context_hash[:12]})")


def build(release: str, registry=None, ca_bundle=None, wheelhouse=None, no_cache=False, base=None,
          platform=None, force=False, labels=None, cache_from=None, cache_to=None, engine=None,
          force_platform=False, reuse_from=None, index_url=None, extra_index_urls=None, apt_proxy=None,
          other_lock_index=False) -> None:
    from ngcbuild.engine.build import build_release
    from ngcbuild.engine.options import options_from

    _select_engine(engine)
    options = options_from(registry, ca_bundle, wheelhouse, no_cache, os.environ, base=base, platform=platform,
                           force=force, labels=labels, cache_from=cache_from, cache_to=cache_to,
                           force_platform=force_platform, reuse_from=reuse_from, index_url=index_url,
                           extra_index_urls=extra_index_urls, apt_proxy=apt_proxy, other_lock_index=other_lock_index)
    where = project()
    built = build_release(where, release, options, out=sys.stdout)
    if options.cache_to:  # the build's stage images, for the next engine's --cache-from
        from ngcbuild.publish.push import push_layer_cache

        push_layer_cache(where, built.names, options.cache_to, out=sys.stdout)  # recorded as `cache_pushed`


def repro(release: str, against=None, registry=None, ca_bundle=None, wheelhouse=None, base=None, platform=None,
          engine=None, index_url=None, extra_index_urls=None, apt_proxy=None) -> None:
    from ngcbuild.core.references import image_ref
    from ngcbuild.engine.options import options_from
    from ngcbuild.engine.repro import run_repro

    if against is not None:  # an image reference (credentials refused, never shown) before the engine is asked
        against = str(image_ref(against, "--against"))
    _select_engine(engine)
    options = options_from(registry, ca_bundle, wheelhouse, True, os.environ, base=base, platform=platform, force=True,
                           index_url=index_url, extra_index_urls=extra_index_urls, apt_proxy=apt_proxy)
    run_repro(project(), release, options, against=against, out=sys.stdout)


def smoke(release: str | None, require_gpu=False, image=None, perf=False, baseline=None,
          threshold=None, host=False, expect_from_env=False, python=None, engine=None) -> None:
    from ngcbuild.core.references import image_ref
    from ngcbuild.smoke.perf import DEFAULT_THRESHOLD

    if image is not None:  # an image reference (credentials refused, never shown) before the engine is asked
        image = str(image_ref(image, "--image"))
    _select_engine(engine)
    threshold = DEFAULT_THRESHOLD if threshold is None else _fraction(threshold)
    if host:  # --image and --baseline need Docker: the task table refuses them with --host
        _smoke_host(project(), release, expect_from_env, require_gpu, perf, python)
        return
    if not release:
        raise UserError("--release: which release's image to test (or --host --expect-from-env on a GPU host)")
    from ngcbuild.smoke import runner

    runner.run_smoke(project(), release, require_gpu=require_gpu, image=image, perf=perf,
                     baseline=baseline, threshold=threshold)


# containers run at once by `mutate` on one engine: each holds a copy of the image's suite and a thread;
# past this the engine, not ngcbuild, is what waits
MAX_MUTATE_JOBS = 64


def mutate(release: str, image=None, jobs=None, engine=None) -> dict:
    from ngcbuild.core.names import check_release_name
    from ngcbuild.core.references import image_ref

    check_release_name(release)
    if image is not None:
        image = str(image_ref(image, "--image"))
    jobs = whole_number(jobs, "--jobs", default=2, least=1, most=MAX_MUTATE_JOBS)
    _select_engine(engine)
    from ngcbuild.smoke.mutate import run_mutate

    return run_mutate(project(), release, image=image, jobs=jobs, out=sys.stdout)


def _fraction(value) -> float:
    """--threshold: a number strictly between 0 and 1."""
    try:
        # plain ASCII decimals only: float() also takes "0_5", "٠.٥" and surrounding spaces
        number = float(value) if re.fullmatch(r"[0-9]*\.?[0-9]+", str(value), re.ASCII) else float("nan")
    except (TypeError, ValueError):
        number = float("nan")
    if not 0 < number < 1:  # false for nan too
        raise UserError(f"--threshold: expected a fraction between 0 and 1 (0.05 is 5 %), got {excerpt(value)}")
    return number


def _interpreter(python: str) -> str:
    """--python: an executable file (checked before anything runs it)."""
    found = shutil.which(python) if os.sep not in python else python
    if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise UserError(f"--python {excerpt(python)}: expected a Python interpreter (an executable file "
                        "or a command on PATH)")
    return found


def _smoke_host(where: Project, release, expect_from_env, require_gpu, perf, python) -> None:
    from ngcbuild.manifest.loader import load_release
    from ngcbuild.render.context import render_files
    from ngcbuild.smoke import host
    from ngcbuild.workspace.release_dir import EXPECTED

    python = _interpreter(python) if python is not None else sys.executable
    if expect_from_env == bool(release):
        raise UserError("host mode needs exactly one of --expect-from-env (expectations from the host's "
                        "PyTorch) or --release R (expectations from R's manifest)")
    if expect_from_env:
        facts = host.probe_environment(python)
        expected = json.dumps(host.expectations_from_env(facts), indent=2, sort_keys=True).encode() + b"\n"
        name = "host"
    else:
        expected = render_files(where, load_release(where, release)).files[EXPECTED]
        name = release
    host.run_host(where.build, expected, name, python=python, require_gpu=require_gpu, perf=perf)


def push(release: str, registry: str, cache_to=None, engine=None) -> dict:
    from ngcbuild.publish.push import push_release

    _select_engine(engine)
    return push_release(project(), release, registry, out=sys.stdout, cache_to=cache_to)


def base(release: str = "dev", platform: str | None = None) -> None:
    from ngcbuild.engine.base_image import base_name, make_base
    from ngcbuild.engine.client import connect
    from ngcbuild.engine.options import checked_platform
    from ngcbuild.manifest.loader import load_release

    platform = checked_platform(platform)
    loaded = load_release(project(), release)
    platform = platform or loaded.release.build.platform
    make_base(connect(), loaded.release, platform=platform)
    if platform != loaded.release.build.platform:
        print(f"build {platform} from it with --platform {platform} --base-image {base_name(loaded.release, platform)}")


def notes(release: str) -> None:
    from ngcbuild.docs.notes import write_notes

    print(f"wrote {shown_path(write_notes(project(), release))}")


def matrix(as_json=False) -> None:
    from ngcbuild.docs.matrix import matrix_json, render_matrix

    where = project()
    if as_json:
        print(json.dumps(matrix_json(where), indent=2))
    else:
        print(render_matrix(where), end="")


def diff(old: str, new: str, as_json=False, images=False) -> None:
    where = project()
    if images:
        from ngcbuild.docs.image_diff import diff_images, read_image, render_image_diff

        if as_json:
            print(json.dumps(diff_images(read_image(where, old), read_image(where, new)).to_json(), indent=2))
        else:
            print(render_image_diff(where, old, new), end="")
        return
    from ngcbuild.docs.diff import diff_text

    print(diff_text(where, old, new, as_json=as_json), end="")


def docs(screenshot=True) -> None:
    from ngcbuild.docs import browser
    from ngcbuild.docs.site import SCREENSHOT, build_site

    site = build_site(project())
    print(f"wrote {len(site.pages)} pages into {shown_path(site.directory)}")
    if not screenshot:
        return
    chromium = browser.find_chromium()
    if chromium is None:
        print("no screenshot: chromium is not installed (bash .ci/browser installs it)")
        return
    with browser.serve(site.directory) as url:
        shot = browser.screenshot(chromium, url + "index.html", site.directory / SCREENSHOT)
    print(f"screenshot of the index (phone width) at {shown_path(shot)}")


def publish(release: str, registry: str, records=None) -> dict:
    from ngcbuild.publish.multiarch import publish_from_records, publish_release

    if records:
        return publish_from_records(project(), release, registry, Path(records), out=sys.stdout)
    return publish_release(project(), release, registry, out=sys.stdout)


def sbom(release: str, image=None) -> dict:
    from ngcbuild.core.references import image_ref
    from ngcbuild.supply.sbom import write_sbom

    if image is not None:
        image = str(image_ref(image, "--image"))
    return write_sbom(project(), release, image=image, out=sys.stdout)


def audit(release: str, pypi_mirror=None, index_url=None, extra_index_urls=None) -> dict:
    from ngcbuild.core.indexes import index_setting
    from ngcbuild.supply.audit import audit_release

    setting = index_setting(index_url, extra_index_urls)
    return audit_release(project(), release, out=sys.stdout, mirror=pypi_mirror, setting=setting)


def promote(release: str, source: str, target: str, trusted_keys=None, zstd=False) -> dict:
    from ngcbuild.publish.promote import promote_release

    return promote_release(project(), release, source, target, trusted_options=trusted_keys, out=sys.stdout,
                           zstd=bool(zstd))


def keygen(out=None) -> None:
    from ngcbuild.supply.signing import make_key_pair

    private, public, key_id = make_key_pair(project().root, out)
    print(f"wrote {shown_path(private)} (private, mode 0600: keep it secret) and {shown_path(public)} (public: give "
          f"it to whoever checks your images); key {key_id}")


def attest(release: str, registry: str, key=None) -> dict:
    from ngcbuild.supply.attest import attest_release

    return attest_release(project(), release, registry, key, out=sys.stdout)


def verify_attestation(image: str, trusted_keys=None) -> list:
    """Outside a project (a consumer), key files are read from the current folder."""
    from ngcbuild.supply.attest import key_root, verify_command

    return verify_command(key_root(project), image, trusted_keys, out=sys.stdout)


def changed_jobs(base=None, releases=None) -> dict:
    """The releases (and CI jobs) that changes since `base` touch; all buildable ones without a base;
    only those named in `releases` when given (a manual dispatch's choice).
    For `invoke changed [--since REF] [--releases NAMES]`."""
    from ngcbuild.render.changed import selection
    from ngcbuild.workflow.choose import narrow, parse_names

    if releases is not None:
        parse_names(releases)  # a malformed name stops here, before git or any manifest is read
    result = narrow(selection(project(), base), releases)
    print(json.dumps(result, indent=2))
    return result


def prune(keep=None, engine=None) -> None:
    from ngcbuild.engine.layer_cache import CACHE_SUFFIX
    from ngcbuild.engine.prune import run_prune
    from ngcbuild.manifest.series import Series

    keep = whole_number(keep, "--keep", default=2, least=0)
    _select_engine(engine)
    repositories = {loaded.release.image.repository for loaded in Series.load(project()).releases}
    run_prune(repositories | {name + CACHE_SUFFIX for name in repositories}, keep=keep, out=sys.stdout)


def whole_number(text, flag: str, default: int, least: int, most: int = 999_999_999) -> int:
    """A count given as a flag's text (declared as text: invoke's own int() would end in a traceback),
    from `least` to `most`; the message names both bounds, the ones enforced."""
    if text is None:
        return default
    # ASCII digits only: int() also takes "1_000", " 7 " and the digits of other scripts ("٣")
    ascii_digits = isinstance(text, str) and text.isascii() and text.isdigit() and len(text) <= 9
    number = int(text) if ascii_digits else least - 1
    if not least <= number <= most:
        raise UserError(f"{flag} {excerpt(text)}: expected a whole number from {least} to {most}")
    return number


def _select_engine(url) -> None:
    """--engine URL: the engine this command reaches (as DOCKER_HOST names it). Either is checked
    here, before anything is rendered or tagged."""
    from ngcbuild.engine.address import engine_address

    if url is not None:
        from ngcbuild.engine.client import select

        select(url)
    engine_address()


def verify(release: str, as_json=False, base=None, index_url=None, extra_index_urls=None, apt_proxy=None) -> None:
    """Print the verification of every pin of R (a table, or JSON); exit 1 when one failed."""
    from ngcbuild.core.indexes import apt_proxy_setting, day_end, index_setting, release_indexes
    from ngcbuild.manifest.loader import load_release
    from ngcbuild.resolver.deadline import run_deadline
    from ngcbuild.verify.report import FAILED, VerifyFailed, json_text, summary, table_text
    from ngcbuild.verify.run import verify_release
    from ngcbuild.verify.web import Web

    if base is not None:  # checked as build checks it (credentials refused, never shown), before any query
        from ngcbuild.render.image import checked_base

        base = checked_base(base)
    setting, proxy = index_setting(index_url, extra_index_urls), apt_proxy_setting(apt_proxy)  # before any query
    deadline = run_deadline()  # one for the whole run, as resolve's: an index that trickles every page ends it
    loaded = load_release(project(), release)
    if loaded.release.status != "buildable":
        raise UserError(f"{release} is archived (documentation only): nothing of it is built, so nothing to verify")
    as_of = day_end(loaded.release.derive.index_as_of) if loaded.release.derive else None  # as resolve read them
    rows = verify_release(loaded, Web(apt_proxy=proxy, run_deadline=deadline), release_indexes(loaded.release, setting),
                          base=base, index_as_of=as_of)
    sys.stdout.write(json_text(release, rows) if as_json else table_text(release, rows))
    if deadline.remaining() <= 0:  # reads it cut are rows "not verified": the run is not whole, and says so
        raise deadline.passed(f"verify {release}: its reads were not all answered")
    failed = summary(rows)[FAILED]
    if failed:
        raise VerifyFailed(f"verify {release}: {failed} failed (see the table)")


def bump(release: str, as_name=None, check=False, base_release=None, index_url=None, extra_index_urls=None) -> dict:
    from ngcbuild.bump.apply import bump_release
    from ngcbuild.core.indexes import index_setting

    setting = index_setting(index_url, extra_index_urls)
    return bump_release(project(), release, as_name, setting, check=check, base_release=base_release,
                        out=sys.stdout)


def rehearse(workflow="release", release=None, staging=None, registry=None, secret_file=None, require_gpu=False,
             jobs=None, as_name=None, unit_tests=None) -> None:
    from ngcbuild.workflow.rehearse import rehearse_bump, rehearse_ci, rehearse_release

    # which options go with which workflow: the task table (each option's `needs`)
    if workflow == "bump":
        if release is None or as_name is None:
            raise UserError("rehearse --workflow bump: missing --releases or --as (see `ngcbuild rehearse --help`)")
        rehearse_bump(project(), release, as_name, out=sys.stdout)
    elif workflow == "ci":
        rehearse_ci(project(), list(jobs or []), out=sys.stdout, unit_tests=unit_tests)
    elif workflow == "release":
        missing = [flag for flag, value in (("--releases", release), ("--staging-registry", staging),
                                            ("--release-registry", registry)) if value is None]
        if missing:
            raise UserError(f"rehearse: missing {', '.join(missing)} (see `ngcbuild rehearse --help`)")
        rehearse_release(project(), release, staging, registry, secret_file, require_gpu, out=sys.stdout)
    else:
        raise UserError(f"--workflow {excerpt(workflow)}: expected release, ci or bump")


# --- derived releases (manifests/derived/R.yaml): resolved before they are built as every release is ----

def resolve(release: str, as_json=False, wheelhouse=None, index_url=None, extra_index_urls=None) -> dict:
    from ngcbuild.core.indexes import index_setting
    from ngcbuild.core.names import check_release_name
    from ngcbuild.derive.resolve import resolve_release

    def run():
        check_release_name(release)
        setting = index_setting(index_url, extra_index_urls)
        return resolve_release(project(), release, setting, wheelhouse=wheelhouse, as_json=as_json, out=sys.stdout)
    return _json_refusals(as_json, run)


def fit(requirements: str, as_json=False, wheelhouse=None, index_url=None, extra_index_urls=None,
        index_as_of=None) -> list:
    from ngcbuild.core.indexes import index_setting
    from ngcbuild.derive.fit import run_fit

    def run():
        setting = index_setting(index_url, extra_index_urls)
        day = _day(index_as_of, "--index-as-of") if index_as_of is not None else None
        return run_fit(project(), requirements, setting, wheelhouse=wheelhouse, as_json=as_json, index_as_of=day,
                       out=sys.stdout)
    return _json_refusals(as_json, run)


def _day(text, flag: str):
    import datetime

    from ngcbuild.manifest.derive_spec import day_to_come

    if isinstance(text, str) and re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
        try:
            day = datetime.date.fromisoformat(text)
        except ValueError:
            pass
        else:
            problem = day_to_come(day)  # as derive.index_as_of: no day to come
            if problem:
                raise UserError(f"{flag} {problem}")
            return day
    raise UserError(f"{flag} {excerpt(text)}: expected a day, YYYY-MM-DD")


def _json_refusals(as_json: bool, run):
    """run(); with --json, a refusal or failure is JSON on stdout too ({"error", "exit"}), beside its
    one line on stderr. Conflicts, and fit's table of releases none of which could be checked, have
    printed their own JSON already."""
    from ngcbuild.core.errors import NgcbuildError
    from ngcbuild.derive.fit import NoneChecked
    from ngcbuild.derive.report import Conflicts

    try:
        return run()
    except (Conflicts, NoneChecked):
        raise
    except NgcbuildError as exc:
        if as_json:
            print(json.dumps({"error": str(exc), "exit": exc.exit_code}, indent=2))
            sys.stdout.flush()
        raise
