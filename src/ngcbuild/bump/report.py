"""build/NAME/bump.md: what a proposal changes and what a reviewer must look at. The release diff
and the Key Features draft are docs/diff.py's page for the two releases; the image's environment and
labels are render/plan.py's; the verify table is verify's rows of the proposal."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ngcbuild.bump.components import Changes
from ngcbuild.bump.propose import Proposal
from ngcbuild.core.project import Project
from ngcbuild.core.references import shown_url
from ngcbuild.docs.diff import render_diff
from ngcbuild.docs.markdown import document_environment, md
from ngcbuild.manifest.loader import LoadedRelease
from ngcbuild.manifest.series import Series
from ngcbuild.render.plan import plan_image
from ngcbuild.verify.report import summary

TEMPLATE = "bump/bump.md.j2"


@dataclass(frozen=True)
class ImageChange:
    key: str
    old: str | None
    new: str | None


@dataclass(frozen=True)
class Behind:
    name: str
    proposed: str
    version: str
    reason: str


def image_changes(old: LoadedRelease, new: LoadedRelease) -> list[ImageChange]:
    """ENV and LABEL values of the two images as rendered (the components' version variables included)."""
    a, b = plan_image(old, old.catalog), plan_image(new, new.catalog)
    changes = []
    for prefix, before, after in (("ENV ", a.env, b.env), ("LABEL ", a.labels, b.labels)):
        for key in sorted(set(before) | set(after)):
            if before.get(key) != after.get(key):
                changes.append(ImageChange(prefix + key, before.get(key), after.get(key)))
    return changes


def review_items(proposal: Proposal, changes: Changes, new: LoadedRelease) -> list[str]:
    """What a reviewer must settle: the driver, the GPU architectures, what goes, text that still names
    old versions, and what bump could not decide."""
    old, release = proposal.parent.release, new.release
    items = []
    cuda_old, cuda_new = old.components.get("cuda"), release.components.get("cuda")
    if cuda_old and cuda_new and cuda_old.version != cuda_new.version:
        driver = old.notes.driver.minimum if old.notes.driver and old.notes.driver.minimum else None
        items.append(f"Minimum driver: CUDA {md(cuda_old.version)} → {md(cuda_new.version)}. "
                     + (f"{md(proposal.parent.release.release)} states {md(driver)}; " if driver else
                        "The manifest states no minimum driver (notes.driver); ")
                     + f"check NVIDIA's minimum driver for CUDA {md('.'.join(cuda_new.version.split('.')[:2]))} "
                       "and whether minor version compatibility covers the runners' drivers.")
    if old.gpu.cuda_arch_list:
        items.append(f"GPU architectures: gpu.cuda_arch_list ({md(old.gpu.cuda_arch_list)}), min_compute_capability "
                     f"{md(old.gpu.min_compute_capability)} and the families carried over unchanged from "
                     f"{md(old.release)}. A wheel's compiled architectures are not in its metadata: compare those "
                     f"{md(proposal.leader.name)} {md(proposal.leader.version)} was built for with them: once the "
                     f"proposal is built, `ngcbuild diff {md(old.release)} {md(proposal.name)} --images` names those "
                     "dropped and added (from the SBOMs); drop or add them here.")
    majors = [f"{md(name)} {md(c.version)} → {md(update.version)}" for name, update in changes.components.items()
              for c in (old.components[name],) if _major(c.version) != _major(update.version)]
    if majors:
        items.append("New major versions (read their release notes for what breaks): " + ", ".join(majors) + ".")
    removed = sorted(proposal.removed_by)
    if removed:
        old_pins = proposal.old_pins()
        items.append("Packages removed (nothing in the new set requires them, and nothing asked for them itself): "
                     + ", ".join(f"{md(k)} {md(old_pins.get(k, ''))}"
                                 + (f" (was required by {md(', '.join(proposal.removed_by[k]))})"
                                    if proposal.removed_by[k] else "") for k in removed)
                     + ". Add one to the roots (a pin of its own) if the image should keep it.")
    if changes.texts:
        items.append("Text rewritten for the new versions (dist-info folders): "
                     + ", ".join(md(k) for k in changes.texts) + ".")
    summary_words = old.summary
    stale = [v for v in _old_words(proposal) if v in summary_words]
    if stale:
        items.append(f"The summary, inherited from {md(old.release)}, names {md(', '.join(stale))}: "
                     f"“{md(summary_words)}”. Restate it in the proposal if it no longer holds.")
    old_pins, new_pins = proposal.old_pins(), proposal.new_pins()
    for wrong in old.pip.wrong_wheel_tags:
        key = canonicalize_name(wrong.distribution)
        if key in new_pins and old_pins.get(key) != new_pins[key]:
            items.append(f"pip.wrong_wheel_tags tolerates {md(wrong.distribution)} on "
                         f"{md(', '.join(wrong.platforms))} with evidence read of "
                         f"{md(old_pins.get(key, '?'))}; the pin is now {md(new_pins[key])}: see the wheel-tags rows "
                         "below and restate the evidence.")
    documented = [f"{md(name)} {md(c.version)}" for name, c in release.components.items() if c.install == "none"]
    if documented:
        items.append("Documented but not installed, carried over unchanged (bump reads only what pip installs): "
                     + ", ".join(documented) + ".")
    for update in changes.components.values():
        items += [md(problem) for problem in update.problems]
    return items


def _major(version: str):
    try:
        return Version(version).major
    except InvalidVersion:
        return version.split(".")[0]


def _old_words(proposal: Proposal) -> list[str]:
    """The old versions of the changed components as prose names them (13.0.2 and 13.0)."""
    words = []
    old, new = proposal.parent.release.components, proposal.pins
    for name, component in old.items():
        if component.install != "pip":
            continue
        package = component.package or (proposal.parent.catalog.get(name).pip_package or "")
        dist = new.get(canonicalize_name(package))
        if dist is not None and dist.version == component.version:
            continue
        if name == "cuda" or dist is not None:
            words += [component.version, ".".join(component.version.split(".")[:2])]
    return [w for w in dict.fromkeys(words) if w.count(".") >= 1]


def bump_markdown(shadow: Project, proposal: Proposal, changes: Changes, new: LoadedRelease, rows) -> str:
    parent, name = proposal.release.release, proposal.name
    series = Series((proposal.parent, new))
    diff = render_diff(shadow, series, parent, name)
    diff = "\n".join("#" + line if line.startswith("#") else line for line in diff.splitlines()) + "\n"
    policy = proposal.release.bump
    counts = summary(rows)
    pins = proposal.pins
    behind = [Behind(b.name, pins[canonicalize_name(b.name)].version, b.version, b.reason) for b in proposal.behind]
    return document_environment(shadow).get_template(TEMPLATE).render(
        name=name, parent=parent, leader=proposal.leader, old_leader=proposal.old_pins().get(proposal.leader.key),
        indexes=[shown_url(i) for i in proposal.indexes], unreachable=list(proposal.unreachable), day=proposal.day,
        python=proposal.targets[0].python, platforms=[t.platform for t in proposal.targets],
        manifest_file=f"manifests/{name}.yaml", constraints_file=f"constraints/{name}.txt",
        cuda=policy.cuda, holds=[f"{n}{h.versions}" for n, h in policy.hold.items()], require=list(policy.require),
        review=review_items(proposal, changes, new), diff=diff, image_changes=image_changes(proposal.parent, new),
        not_taken=proposal.not_taken, holds_detail=[f"{n}{h.versions}: {h.reason}" for n, h in policy.hold.items()],
        behind=behind, rows=rows, verify_counts=", ".join(f"{n} {status}" for status, n in counts.items()))
