"""The interpreter and every pinned distribution are what the manifest says."""

import sys

import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

# Checks of the image itself: host mode (no image) deselects them.
pytestmark = pytest.mark.image


def test_python_version(expected):
    assert f"{sys.version_info.major}.{sys.version_info.minor}" == expected["python"]["version"]


def test_torch_lives_in_the_manifest_site_packages(expected):
    import torch

    assert torch.__file__.startswith(expected["python"]["site_packages"] + "/"), torch.__file__


def test_every_pinned_package_is_installed_at_its_pin(expected, installed):
    have = {canonicalize_name(name): version for name, version in installed.items()}
    wrong = {name: (pin, have.get(name)) for name, pin in expected["packages"].items()
             if have.get(name) is None or Version(have[name]) != Version(pin)}
    assert not wrong, f"pinned -> installed: {wrong}"
