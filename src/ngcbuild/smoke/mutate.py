"""`ngcbuild mutate --release R`: the smoke suite proven to catch broken images. Each planted defect of
smoke/mutants.yaml that applies to R is built as a thin image on top of R's built image (classic
builder, no network), the suite runs against it with -x, and the first check that fails is its
killer. A mutant no check kills is a survivor and fails the command; so does one killed by another
check than the catalogue names, or with a message that does not name the defect.

Every image a run builds carries the label io.ngcbuild.mutant=<run id> from its second instruction on
(intermediate layers included) and is removed when the run ends, however it ends.
Results: build/R/mutants.json and build/R/mutants.md (the table, between markers). Nothing is written
outside build/R/: a checkout of ngcbuild copies the table into its RELIABILITY.md with `invoke
reliability` (dev/reliability.py)."""

from __future__ import annotations

import io
import json
import os
import re
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import docker

from ngcbuild.core.errors import SmokeFailed, UserError
from ngcbuild.core.outputs import printer
from ngcbuild.core.project import Project
from ngcbuild.core.workers import Workers
from ngcbuild.engine.client import connect
from ngcbuild.engine.events import BuildStream
from ngcbuild.engine.leftovers import remove_containers
from ngcbuild.manifest.catalog import Catalog
from ngcbuild.manifest.loader import load_release
from ngcbuild.render.context import render_as_built
from ngcbuild.smoke import mutants
from ngcbuild.smoke.runner import MOUNT, gpu_visible, run_suite
from ngcbuild.workspace.locks import release_lock
from ngcbuild.workspace.record import read_record, require
from ngcbuild.workspace.release_dir import EXPECTED, MUTANTS, MUTANTS_REPORT, ReleaseDir
from ngcbuild.workspace.sections import utc_timestamp

BUILD_TIMEOUT_S = 600
STOP_WAIT_S = 10  # after a Ctrl-C: how long the running mutants get to end once their containers are gone
# With -x the suite stops at the first failure: that check is the killer, and a mutant costs only the
# checks up to it. Without a GPU the GPU checks can only skip: they are left out of the run.
SUITE_ARGS = ["-x"]
NO_GPU_ARGS = [f"--ignore-glob={MOUNT}/smoke/test_gpu*.py"]
# Mutants run side by side, each in its own container: a suite run is mostly one busy process.
DEFAULT_JOBS = 2


@dataclass
class Outcome:
    id: str
    description: str
    expected_killer: str
    killed: bool
    killed_by: str | None
    message: str
    as_expected: bool  # killed by the check the catalogue names, with a message naming the defect
    build_s: float
    smoke_s: float


def run_mutate(project: Project, name: str, image: str | None = None, jobs: int = DEFAULT_JOBS,
               out=sys.stdout) -> dict:
    say = printer(out)
    loaded = load_release(project, name)
    directory = project.out(name)
    record = read_record(directory) if image is None else None
    rendered = render_as_built(project, loaded, record.build if record else None)
    ref = image or require(record.build.image_id, directory, "image_id", "the id of the built image")
    if record and record.build.context_sha256 != rendered.context_hash:
        say(f"warning: {ref[:19]} was built from another context than the manifest renders now; "
            "rebuild to plant defects in the current image")
    expected = json.loads(rendered.files[EXPECTED])
    facts = mutants.facts_of(mutants.Release(expected, library_distributions(loaded, Catalog.load(project))))
    every = mutants.load_catalogue()
    chosen = [m for m in every if m.applies(facts)]
    client = connect()
    try:
        client.inspect_image(ref)
    except docker.errors.ImageNotFound:
        raise UserError(f"image {ref} not found; run `invoke build --release {name}` first") from None
    args = SUITE_ARGS + ([] if gpu_visible(client) else NO_GPU_ARGS)
    run_id = f"{name}-{os.getpid()}-{int(time.time())}"
    say(f"mutate: {len(chosen)} planted defects in {name} ({ref[:19]}), {jobs} at a time; "
        f"label {mutants.LABEL}={run_id}")
    started = time.monotonic()
    clients = threading.local()

    def attempt(mutant: mutants.Mutant) -> Outcome:
        if not hasattr(clients, "client"):  # one connection per worker thread
            clients.client = connect()
        return _try(clients.client, mutant, ref, run_id, expected, facts, loaded.release.python.version,
                    project.build, args, stopping=workers.stopping)

    outcomes: dict[str, Outcome] = {}
    # daemon workers (core/workers.py): a Ctrl-C is not held up by the mutants being built and tested;
    # their containers are stopped below, which ends them
    workers = Workers(chosen, attempt, jobs, "mutant")
    try:
        for _, _, outcome in workers.as_done():
            outcomes[outcome.id] = outcome
            verdict = ("killed" if outcome.as_expected else "KILLED OTHERWISE") if outcome.killed else "SURVIVED"
            say(f"[{len(outcomes)}/{len(chosen)}] {outcome.id}: {verdict} by {outcome.killed_by or 'no check'} "
                f"(build {outcome.build_s:.1f}s, suite {outcome.smoke_s:.1f}s): {outcome.message[:160]}")
    except BaseException:
        # Ctrl-C or a failure: no mutant starts any more; the running ones' containers are ended, so
        # that they return and clean up after themselves, within a bounded wait
        workers.stop()
        stop_mutant_containers(client, run_id)
        workers.wait(STOP_WAIT_S)
        # a suite whose container was being made while the first sweep ran: no worker starts one after
        # stop() (_try asks between its build and its suite), so a second sweep finds the last of them
        stop_mutant_containers(client, run_id)
        raise
    finally:
        removed = remove_mutant_images(client, run_id)
        say(f"mutate: removed {removed} image(s) labelled {mutants.LABEL}={run_id}")
    outcomes = [outcomes[m.id] for m in chosen]  # the catalogue's order
    seconds = round(time.monotonic() - started, 1)
    result = {"release": name, "image": client.inspect_image(ref)["Id"], "at": utc_timestamp(), "seconds": seconds,
              "jobs": jobs,
              "run_id": run_id, "mutants": [asdict(o) for o in outcomes],
              "killed": sum(o.killed for o in outcomes), "total": len(outcomes),
              "not_applicable": sorted(m.id for m in every if not m.applies(facts))}
    with release_lock(directory):
        path = ReleaseDir.of(directory).write(MUTANTS, json.dumps(result, indent=2, sort_keys=True) + "\n")
        table = ReleaseDir.of(directory).write(MUTANTS_REPORT, section(name, result))
    say(f"mutate: {result['killed']}/{result['total']} killed in {seconds}s; {path}; table in {table}")
    survivors = [o.id for o in outcomes if not o.killed]
    wrong = [o.id for o in outcomes if o.killed and not o.as_expected]
    if survivors or wrong:
        raise SmokeFailed("mutate: " + "; ".join(
            part for part in (f"survived (no check caught them): {', '.join(survivors)}" if survivors else "",
                              f"killed otherwise than the catalogue says (another check, or a message not naming "
                              f"the defect): {', '.join(wrong)}" if wrong else "") if part))
    return result


def library_distributions(loaded, catalog: Catalog) -> dict[str, str]:
    """Component -> the pinned distribution that carries its shared library (its one pip package)."""
    found = {}
    for name, component in loaded.release.components.items():
        entry = catalog.get(name)
        if entry is None or not entry.library:
            continue
        package = component.package or (entry.pip_package if not component.packages else None)
        if package:
            found[name] = re.sub(r"[-_.]+", "-", package).lower()
    return found


class Stopped(Exception):
    """The run stopped (an interrupt, another mutant's failure) while this mutant was being planted."""


def _try(client, mutant: mutants.Mutant, base: str, run_id: str, expected: dict, facts: dict[str, str],
         python: str, build_dir: Path, args: list[str], stopping=lambda: False) -> Outcome:
    killers = mutant.killers(facts)
    started = time.monotonic()
    ref = build_mutant(client, mutant.dockerfile_text(base, run_id, facts), run_id) if mutant.dockerfile else base
    built = time.monotonic()
    if stopping():  # no suite starts once the run is stopping: its container would outlive the cleanup
        raise Stopped(mutant.id)
    expected_json = mutants.expected_bytes(mutants.patched(expected, mutant.expect, facts))
    log = io.StringIO()
    try:
        _, rows = run_suite(client, ref, expected_json, python, build_dir, args, log, labels={mutants.LABEL: run_id})
    except docker.errors.APIError as exc:  # the image cannot even start the suite
        killed_by, message = mutants.CONTAINER, _first_line(str(exc.explanation or exc))
    else:
        if rows is None:
            killed_by, message = mutants.CONTAINER, "the suite wrote no report: " + _first_line(log.getvalue()[-500:])
        else:
            failed = next((r for r in rows if r.result in ("failed", "error")), None)
            killed_by, message = (failed.check, failed.detail) if failed else (None, "every check passed")
    names = [mutants.fill(fragment, facts) for fragment in mutant.names]
    named = all(fragment.lower() in message.lower() for fragment in names)
    return Outcome(mutant.id, mutant.description, " or ".join(killers), killed_by is not None, killed_by, message,
                   killed_by in killers and named, round(built - started, 1), round(time.monotonic() - built, 1))


def build_mutant(client, dockerfile: str, run_id: str) -> str:
    """The image of one mutant, from a Dockerfile alone (no context, no network); its intermediate
    containers are removed whatever way the build ends."""
    stream = BuildStream()
    try:
        events = client.build(fileobj=io.BytesIO(dockerfile.encode()), rm=True, forcerm=True, pull=False,
                              network_mode="none", decode=True, labels={mutants.LABEL: run_id},
                              timeout=BUILD_TIMEOUT_S)
        for event in events:
            stream.feed(event)
    finally:
        remove_containers(client, stream.containers)
    if stream.error or not stream.image_id:
        tail = "\n".join(f"  | {line}" for line in stream.tail)
        raise SmokeFailed(f"a planted defect did not build (a defect of the catalogue, {mutants.CATALOGUE.name}) "
                          f"at {stream.failed_step}:\n{tail}\n{stream.error or 'no image id'}")
    return stream.image_id


def stop_mutant_containers(client, run_id: str) -> int:
    """Kill and remove every container of this run (the suites running against its mutants)."""
    stopped = 0
    for container in client.containers(all=True, quiet=True, filters={"label": f"{mutants.LABEL}={run_id}"}):
        try:
            client.remove_container(container, force=True)
            stopped += 1
        except docker.errors.APIError:
            continue  # gone already, or being removed by its own worker
    return stopped


def remove_mutant_images(client, run_id: str) -> int:
    """Every image (intermediate layers too) labelled with this run's id. An image with children is
    left for a later pass (removing a child takes its unlabelled-by-tag parents along); a parent that
    went with its child is not an error."""
    removed = 0
    for _ in range(50):
        images = client.images(all=True, quiet=True, filters={"label": f"{mutants.LABEL}={run_id}"})
        if not images:
            break
        for image in images:
            try:
                client.remove_image(image, force=True)
                removed += 1
            except docker.errors.NotFound:
                continue
            except docker.errors.APIError as exc:
                if exc.status_code != 409:  # 409: it has children; they go first
                    raise
    return removed


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def section(name: str, result: dict) -> str:
    """R's table (build/R/mutants.md), between its own markers: the section of it that a checkout's
    RELIABILITY.md holds."""
    begin, end = markers(name)
    total, killed = result["total"], result["killed"]
    lines = [begin, f"## Planted defects in `{name}`", "",
             f"Written by `invoke mutate --release {name}` on {result['at']} ({result['seconds']} s, image "
             f"`{result['image'][:19]}`): {killed} of {total} planted defects killed "
             f"({killed / total:.0%})." if total else "No planted defect applies.", "",
             "| mutant | planted defect | killed by | message |", "|---|---|---|---|"]
    for item in result["mutants"]:
        killer = item["killed_by"] or "**survived**"
        if item["killed"] and not item["as_expected"]:
            killer += f" (catalogue: {item['expected_killer']})"
        cells = (f"`{item['id']}`", _cell(item["description"]), f"`{_cell(killer)}`", _cell(item["message"]))
        lines.append("| " + " | ".join(cells) + " |")
    if result["not_applicable"]:
        lines += ["", f"Not applicable to `{name}` (it lacks what they break): "
                  + ", ".join(f"`{m}`" for m in result["not_applicable"]) + "."]
    lines.append(end)
    return "\n".join(lines) + "\n"


def markers(name: str) -> tuple[str, str]:
    return f"<!-- mutants:{name}:begin -->", f"<!-- mutants:{name}:end -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:300]
