"""A derived image (manifests/derived/R.yaml): the base's stack is unchanged (each protected
distribution at the base's version, with the base's RECORD and every file as that RECORD hashes it,
unless an override moved it), every locked distribution is installed at its version, each of the
team's requirements imports, `pip check` is clean, and both pip and uv (where the image has it) refuse
to move a pinned distribution. Only for derived releases: conftest.py deselects these elsewhere.
Runs on every release's Python, 3.6 included (dist-info folders read directly)."""

import base64
import hashlib
import os
import platform
import re
import shutil
import sys
import zipfile

import pytest
from processes import run

pytestmark = [pytest.mark.image, pytest.mark.derived]


def _name(text):
    return re.sub(r"[-_.]+", "-", text).lower()


def _dist_infos():
    """canonical name -> (folder of its .dist-info, version), for the image's plain interpreter path."""
    found = {}
    for entry in sys.path:
        if not entry or not os.path.isdir(entry) or "/opt/ngcbuild" in entry:
            continue
        for folder in sorted(os.listdir(entry)):
            if not folder.endswith(".dist-info"):
                continue
            path = os.path.join(entry, folder)
            name = version = None
            metadata = os.path.join(path, "METADATA")
            if not os.path.isfile(metadata):
                continue
            with open(metadata, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    if line.startswith("Name:") and name is None:
                        name = line.split(":", 1)[1].strip()
                    elif line.startswith("Version:") and version is None:
                        version = line.split(":", 1)[1].strip()
                    elif not line.strip():
                        break
            if name:
                found.setdefault(_name(name), (path, version))
    return found


def _derived(expected):
    return expected["derived"]


def _machine_pins(expected, key):
    by_machine = _derived(expected)[key]
    machine = platform.machine()
    assert machine in by_machine, "no pins for %s in the expectations (%s)" % (machine, sorted(by_machine))
    return by_machine[machine]


def _sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest


def test_base_stack_is_unchanged(expected):
    """Each protected distribution: the base's version, the base's RECORD, each file as RECORD says."""
    stack = _derived(expected)["base_stack"]
    assert stack, "the expectations name no protected distribution of the base (smoke reads them from the base image)"
    overridden = _derived(expected)["overridden"]
    infos = _dist_infos()
    problems = []
    for name, facts in sorted(stack.items()):
        if name in overridden:
            continue  # moved on purpose: the lock's version is checked below
        if name not in infos:
            problems.append("%s %s is gone" % (name, facts["version"]))
            continue
        folder, version = infos[name]
        if version != facts["version"]:
            problems.append("%s is %s, the base has %s" % (name, version, facts["version"]))
            continue
        record = os.path.join(folder, "RECORD")
        if _sha256_file(record).hexdigest() != facts["record_sha256"]:
            problems.append("%s: its RECORD differs from the base's" % name)
            continue
        root = os.path.dirname(folder)
        with open(record, encoding="utf-8") as handle:
            for line in handle:
                path, _, rest = line.rstrip("\n").partition(",")
                algorithm_digest = rest.split(",", 1)[0]
                if not algorithm_digest.startswith("sha256="):
                    continue
                full = os.path.normpath(os.path.join(root, path))
                if not os.path.isfile(full):
                    problems.append("%s: %s is missing" % (name, path))
                    continue
                got = base64.urlsafe_b64encode(_sha256_file(full).digest()).rstrip(b"=").decode()
                if got != algorithm_digest[len("sha256="):]:
                    problems.append("%s: %s is not the base's file" % (name, path))
    assert not problems, "the base's stack changed: " + "; ".join(problems[:10])


def test_every_locked_distribution_is_installed_at_its_version(expected):
    locked = _machine_pins(expected, "locked_by_machine")
    assert locked, "the lock pins nothing for this machine"
    infos = _dist_infos()
    wrong = {name: (version, infos.get(name, (None, None))[1]) for name, version in locked.items()
             if infos.get(name, (None, None))[1] != version}
    assert not wrong, "locked -> installed (None: absent): %s" % wrong


def _top_level(folder):
    """The importable names a distribution installs: top_level.txt, else the first part of its RECORD's paths."""
    listed = os.path.join(folder, "top_level.txt")
    if os.path.isfile(listed):
        with open(listed, encoding="utf-8") as handle:
            names = [line.strip() for line in handle if line.strip()]
        if names:
            return sorted(set(n.replace("/", ".") for n in names if not n.startswith("_")) or names)
    names = set()
    with open(os.path.join(folder, "RECORD"), encoding="utf-8") as handle:
        for line in handle:
            path = line.split(",", 1)[0]
            first = path.split("/", 1)[0]
            if path.startswith("..") or first.endswith((".dist-info", ".data")) or first == "__pycache__":
                continue
            if "/" in path:
                names.add(first)
            elif first.endswith(".py"):
                names.add(first[:-3])
    return sorted(n for n in names if n.isidentifier() and not n.startswith("_"))


def test_each_requirement_imports(expected):
    infos = _dist_infos()
    failures = []
    checked = 0
    for requirement in _derived(expected)["requirements"]:
        name = _name(re.split(r"[\s\[<>=!~;@]", requirement, maxsplit=1)[0])
        if name not in infos:
            continue  # its marker excludes this machine: the locked-versions check says whether it should be here
        modules = _top_level(infos[name][0])
        if not modules:
            continue  # a distribution of data or tools only (no module to import)
        done = run([sys.executable, "-c", "import " + ", ".join(modules)], timeout=600)
        checked += 1
        if done.returncode != 0:
            failures.append("%s (import %s): %s" % (requirement, ", ".join(modules), done.stderr.strip()[-400:]))
    assert checked, "no requirement of the team has a module to import"
    assert not failures, "; ".join(failures)


def test_pip_check_is_clean(expected):
    out = run([sys.executable, "-m", "pip", "check", "--disable-pip-version-check"], timeout=300)
    tolerated = expected.get("pip_check_tolerated", {}).get(platform.machine(), [])
    lines = [line for line in (out.stdout + out.stderr).splitlines() if line.strip()]
    found = [line for line in lines if not any(line.startswith(name + " ") and line.endswith(
        "is not supported on this platform") for name in tolerated)]
    assert out.returncode == 0 or not found, "pip check fails: %s" % "\n".join(found)[:1500]


def _wheel(directory, name, version):
    """A minimal valid pure-Python wheel of `name` at `version`, for an offline install attempt."""
    dist = "%s-%s" % (re.sub(r"[-_.]+", "_", name), version)
    files = {dist + ".dist-info/METADATA": "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version),
             dist + ".dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: ngcbuild-smoke\nRoot-Is-Purelib: true\n"
                                         "Tag: py3-none-any\n"}
    record = ["%s,sha256=%s,%d" % (path, base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
                                   .rstrip(b"=").decode(), len(text.encode())) for path, text in files.items()]
    files[dist + ".dist-info/RECORD"] = "\n".join(record + [dist + ".dist-info/RECORD,,"]) + "\n"
    with zipfile.ZipFile(os.path.join(str(directory), dist + "-py3-none-any.whl"), "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)


def _pinned_to_move(expected):
    """A protected distribution and a locked one: what a later install must not move."""
    derived = _derived(expected)
    names = sorted(n for n in derived["base_stack"] if n not in derived["overridden"])[:1]
    names += sorted(_machine_pins(expected, "locked_by_machine"))[:1]
    assert names, "nothing pinned to try"
    return names


def test_pip_refuses_to_move_a_pinned_distribution(expected, tmp_path):
    for name in _pinned_to_move(expected):
        _wheel(tmp_path, name, "0.0.1")
        env = dict(os.environ, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(tmp_path))
        done = run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--disable-pip-version-check",
                    name + "==0.0.1"], env=env, timeout=300)
        assert done.returncode != 0, "pip install %s==0.0.1 was not refused (PIP_CONSTRAINT=%r)" % (
            name, os.environ.get("PIP_CONSTRAINT"))


def test_uv_refuses_to_move_a_pinned_distribution(expected, tmp_path):
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not in this image: nothing to refuse with")
    assert os.environ.get("UV_CONSTRAINT") == expected["pip_constraint_file"], "UV_CONSTRAINT is not the image's file"
    for name in _pinned_to_move(expected):
        _wheel(tmp_path, name, "0.0.1")
        # as a user of the image runs it (its UV_* settings as the image sets them), offline
        command = [uv, "pip", "install", "--dry-run", "--no-deps", "--offline", "--no-index", "--find-links",
                   str(tmp_path), "--python", sys.executable, name + "==0.0.1"]
        allowed = run(command, env=dict(os.environ, UV_CONSTRAINT=""), timeout=300)
        # the same request succeeds without the constraint: the refusal below is the constraint's doing
        assert allowed.returncode == 0, "without UV_CONSTRAINT uv should accept it: " + allowed.stderr[-600:]
        refused = run(command, timeout=300)
        assert refused.returncode != 0, "uv pip install %s==0.0.1 was not refused (UV_CONSTRAINT=%r)" % (
            name, os.environ.get("UV_CONSTRAINT"))
