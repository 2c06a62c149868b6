"""Env vars, labels, workdir and entrypoint are the ones rendered from the manifest."""

import os

import pytest
from version_rule import mismatch

# Checks of the image itself: host mode (no image) deselects them.
pytestmark = pytest.mark.image


def _env_of(image_config):
    return dict(item.split("=", 1) for item in image_config.get("Env") or [])


def test_image_env_has_every_rendered_variable(expected, image_config):
    env = _env_of(image_config)
    wrong = {k: (v, env.get(k)) for k, v in expected["env"].items() if env.get(k) != v}
    assert not wrong, f"expected -> image: {wrong}"


def test_process_env_has_every_rendered_variable(expected):
    wrong = {k: (v, os.environ.get(k)) for k, v in expected["env"].items() if os.environ.get(k) != v}
    assert not wrong, f"expected -> process: {wrong}"


def test_image_labels_are_the_rendered_ones(expected, image_config):
    labels = image_config.get("Labels") or {}
    wrong = {k: (v, labels.get(k)) for k, v in expected["labels"].items() if labels.get(k) != v}
    assert not wrong, f"expected -> image: {wrong}"


def path_list_problems(expected, environ):
    """What is wrong with the path lists of one environment (the image's config or a process's): each
    variable the manifest prepends to must start with those folders and keep no empty entry (which the
    dynamic linker would read as the current folder). Forward compatibility changes nothing here: its
    link is named in LD_LIBRARY_PATH from the start (55-cuda-forward-compat.sh), enabled or not."""
    wrong = {}
    for name, folders in sorted(expected.get("env_prepend", {}).items()):
        value = environ.get(name)
        entries = (value or "").split(":")
        if value is None or entries[:len(folders)] != folders or "" in entries:
            wrong[name] = value
    return wrong


def test_path_lists_start_with_the_rendered_folders(expected, image_config):
    """A variable the manifest prepends to (LD_LIBRARY_PATH with torch's lib, as in NGC's images) starts
    with those folders, each there (the forward-compat link only while enabled), in the image's config and
    in a container's process."""
    prepended = expected.get("env_prepend", {})
    if not prepended:
        pytest.skip("the manifest of {} prepends to no variable".format(expected["release"]))
    wrong = {}
    for where, environ in (("image", _env_of(image_config)), ("process", os.environ)):
        wrong.update({"{} ({})".format(name, where): value
                      for name, value in path_list_problems(expected, environ).items()})
    link = (expected.get("cuda_compat") or {}).get("link")
    for name, folders in sorted(prepended.items()):
        missing = [folder for folder in folders if folder != link and not os.path.isdir(folder)]
        if missing:
            wrong["{} names folders that do not exist".format(name)] = missing
    assert not wrong, "expected to start with {}: {}".format(prepended, wrong)


def test_labels_of_what_the_base_carries_name_the_manifest_versions(expected, image_config):
    """The base image labels what it carries in its own form (cuDNN's 9.17.0.29); this build writes none
    of those labels, and each the base has must be a form of the manifest's version (the version rule: the
    manifest's 9.17.0 accepts the label's 9.17.0.29)."""
    wanted = expected.get("base_labels", {})
    if not wanted:
        pytest.skip("the manifest of {} names no labelled component of its base image".format(expected["release"]))
    labels = image_config.get("Labels") or {}
    wrong = {key: (version, labels[key], mismatch(labels[key], version)) for key, version in wanted.items()
             if key in labels and mismatch(labels[key], version) is not None}
    assert not wrong, "manifest -> the base image's label: {}".format(wrong)
    absent = sorted(key for key in wanted if key not in labels)
    if absent:
        pytest.skip("the base image carries no {} (this build writes none: the base's form of the version is "
                    "not known)".format(", ".join(absent)))


def test_workdir_and_entrypoint(expected, image_config):
    assert image_config["WorkingDir"] == expected["workdir"], \
        f"the image's WorkingDir is {image_config['WorkingDir']!r}, the manifest's is {expected['workdir']!r}"
    assert image_config["Entrypoint"] == [expected["entrypoint"]], \
        f"the image's Entrypoint is {image_config['Entrypoint']!r}, expected [{expected['entrypoint']!r}]"
    assert os.getcwd() == expected["workdir"], f"the suite started in {os.getcwd()}, not in {expected['workdir']}"
