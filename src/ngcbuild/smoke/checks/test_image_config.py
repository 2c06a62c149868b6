"""Env vars, labels, workdir and entrypoint are the ones rendered from the manifest."""

import os

import pytest

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


def test_workdir_and_entrypoint(expected, image_config):
    assert image_config["WorkingDir"] == expected["workdir"], \
        f"the image's WorkingDir is {image_config['WorkingDir']!r}, the manifest's is {expected['workdir']!r}"
    assert image_config["Entrypoint"] == [expected["entrypoint"]], \
        f"the image's Entrypoint is {image_config['Entrypoint']!r}, expected [{expected['entrypoint']!r}]"
    assert os.getcwd() == expected["workdir"], f"the suite started in {os.getcwd()}, not in {expected['workdir']}"
