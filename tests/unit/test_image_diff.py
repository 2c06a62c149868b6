"""`ngcbuild diff OLD NEW --images`: two built images compared from their SBOMs and records alone
(no engine), and the site's "what changed in the image" page where both exist. The SBOMs are the
documents supply/sbom.py makes, from inventories written here."""

import hashlib
import json
import os

import pytest

from ngcbuild.core.errors import OutputDamaged, UserError
from ngcbuild.core.project import Project
from ngcbuild.docs.image_diff import diff_images, read_image, render_image_diff
from ngcbuild.docs.site import build_site
from ngcbuild.manifest.loader import load_release
from ngcbuild.supply.sbom import document
from ngcbuild.workspace.sections import BuildRecord

from ..conftest import run_command

SERIAL = "urn:uuid:00000000-0000-4000-8000-000000000000"


def _found(torch, extra_python=(), deb=(("libc6", "2.36-9", "amd64", "glibc"),), libraries=(), layers=(), arch=""):
    return {"python": [["torch", torch], ["numpy", "2.4.6"], *extra_python], "dpkg": [list(d) for d in deb],
            "os": {"ID": "debian", "VERSION_ID": "12"}, "python_version": "3.11.2",
            "libraries": [list(x) for x in libraries], "layers": [list(x) for x in layers], "torch_cuda_arch": arch}


def _image(image_id, env, labels):
    return {"Id": "sha256:" + image_id * 64, "Os": "linux", "Architecture": "amd64",
            "Config": {"Env": env, "Labels": labels}}


def _built(project: Project, name: str, found: dict, image: dict, size: int) -> None:
    loaded = load_release(project, "dev")
    directory = project.out(name)
    directory.mkdir(parents=True, exist_ok=True)
    doc = document(loaded.release, loaded.catalog, found, image, f"nvcr.io/nvidia/pytorch:{name}-py3",
                   BuildRecord(context_sha256="0" * 64), "2026-01-01T00:00:00Z", SERIAL)
    (directory / "sbom.cdx.json").write_text(json.dumps(doc))
    (directory / "record.json").write_text(json.dumps({"image_id": image["Id"], "size_bytes": size}))
    _recorded(directory)


def _recorded(directory) -> None:
    """The record names the SBOM as `ngcbuild sbom` records it: by its sha256."""
    record = json.loads((directory / "record.json").read_text())
    record["sbom"] = {"sha256": hashlib.sha256((directory / "sbom.cdx.json").read_bytes()).hexdigest()}
    (directory / "record.json").write_text(json.dumps(record))


@pytest.fixture
def project(scratch):
    scratch.copy_release("dev")
    scratch.copy_release("dev", "dev-next")
    where = Project.at(scratch.root)
    _built(where, "dev", _found("2.13.0", [["tqdm", "4.70.1"]], libraries=[("libcudart.so.13", "libcudart.so.13.0.96")],
                                # the first layer's line sorts after the second's: the order is kept all the same
                                layers=[(913_000_000, "ADD file:base in /"), (100_000_000, "RUN pip install torch")],
                                arch="sm_75 sm_80 compute_80"),
           _image("1", ["PATH=/usr/bin", "PYTORCH_VERSION=2.13.0"], {"com.nvidia.pytorch.version": "2.13.0"}),
           1_013_000_000)
    _built(where, "dev-next", _found("2.15.0", [["optree", "0.20.0"]],
                                     deb=(("libc6", "2.36-9+deb12u1", "amd64", "glibc"), ("g++", "4:12.2.0-3", "amd64",
                                                                                         "gcc-defaults")),
                                     libraries=[("libcudart.so.13", "libcudart.so.13.2.86"),
                                                ("libnvshmem_host.so.3", "libnvshmem_host.so.3.7.2")],
                                     layers=[(913_000_000, "ADD file:base in /"),
                                             (150_000_000, "RUN pip install torch")], arch="sm_80 sm_90 compute_90"),
           _image("2", ["PATH=/usr/bin", "PYTORCH_VERSION=2.15.0"], {"com.nvidia.pytorch.version": "2.15.0"}),
           1_063_000_000)
    return where


def test_two_built_images_compare_package_by_package_layer_by_layer(project):
    diff = diff_images(read_image(project, "dev"), read_image(project, "dev-next"))
    assert [(c.name, c.kind, c.old, c.new) for c in diff.python] == [
        ("optree", "added", None, "0.20.0"), ("torch", "upgraded", "2.13.0", "2.15.0"),
        ("tqdm", "removed", "4.70.1", None)]
    assert [(c.name, c.kind) for c in diff.deb] == [("g++", "added"), ("libc6", "changed")]
    assert [(c.name, c.kind, c.new) for c in diff.libraries] == [
        ("libcudart.so.13", "changed", "libcudart.so.13.2.86"), ("libnvshmem_host.so.3", "added",
                                                                 "libnvshmem_host.so.3.7.2")]
    assert [(c.name, c.old, c.new) for c in diff.env] == [("PYTORCH_VERSION", "2.13.0", "2.15.0")]
    assert [(c.name, c.new) for c in diff.labels] == [("com.nvidia.pytorch.version", "2.15.0")]
    assert [(r.position, r.step, r.old, r.new, r.delta) for r in diff.layers] == [
        (1, "ADD file:base in /", 913_000_000, 913_000_000, 0),
        (2, "RUN pip install torch", 100_000_000, 150_000_000, 50_000_000)]
    assert diff.cuda_arch == (("compute_80", "sm_75"), ("compute_90", "sm_90"))
    page = render_image_diff(project, "dev", "dev-next")
    assert "compute_90 sm_80 sm_90: dropped compute_80 sm_75, added compute_90 sm_90." in page
    assert "(linux/amd64, 1.0 GB) and image" in page and ": 50.0 MB." in page
    assert "| torch | upgraded | 2.13.0 | 2.15.0 |" in page
    assert "| 2 | RUN pip install torch | 100.0 MB | 150.0 MB | 50.0 MB |" in page
    assert "3 Python distributions changed: 1 added, 1 removed, 1 upgraded." in page
    assert "| libcudart.so.13 | changed | libcudart.so.13.0.96 | libcudart.so.13.2.86 |" in page
    assert "Not compared" not in page


def test_the_command_prints_markdown_or_json_and_the_site_links_the_page(project):
    result = run_command("ngcbuild", "diff", "dev", "dev-next", "--images", "--json", cwd=project.root)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["old"]["release"] == "dev" and data["python"][1]["name"] == "torch"
    site = build_site(project)
    page = site.directory / "images" / "dev-next.html"
    assert page in site.pages and "What changed in the image from dev to dev-next" in page.read_text()
    assert 'href="../images/dev-next.html"' in (site.directory / "releases" / "dev-next.html").read_text()
    (project.out("dev") / "sbom.cdx.json").unlink()  # one image not described: no page, no link
    site = build_site(project)
    assert not (site.directory / "images").exists()
    assert "images/" not in (site.directory / "releases" / "dev-next.html").read_text()


def test_an_sbom_made_before_the_image_facts_compares_what_it_has(project):
    path = project.out("dev") / "sbom.cdx.json"
    doc = json.loads(path.read_text())
    doc["metadata"]["component"]["properties"] = [p for p in doc["metadata"]["component"]["properties"]
                                                  if p["name"] in ("ngcbuild:image-id", "ngcbuild:platform")]
    path.write_text(json.dumps(doc))
    _recorded(project.out("dev"))
    page = render_image_diff(project, "dev", "dev-next")
    assert "Not compared: env, label, layer, library" in page and "| torch | upgraded |" in page


def test_an_sbom_the_record_does_not_name_is_refused(project):
    """An SBOM written over (or left from another image) is never compared: the record names its sha256."""
    path = project.out("dev-next") / "sbom.cdx.json"
    path.write_text(path.read_text().replace("2.15.0", "2.16.0"))
    with pytest.raises(UserError, match="dev-next/sbom.cdx.json: not the SBOM `invoke sbom` recorded in record.json"):
        read_image(project, "dev-next")
    result = run_command("ngcbuild", "diff", "dev", "dev-next", "--images", cwd=project.root, timeout=60)
    assert result.returncode == 2 and "not the SBOM" in result.stderr and not result.stdout, result.stderr


HOSTILE = "\x1b[2J\r# Heading\n<script>alert(1)</script> [x](javascript:y)"


def test_what_an_image_says_of_itself_reaches_the_page_and_the_terminal_escaped(project):
    """An image's labels, environment, layer steps and package names are the image's to choose: shown,
    they are text, never a terminal's control, a Markdown heading, a link or HTML."""
    path = project.out("dev-next") / "sbom.cdx.json"
    doc = json.loads(path.read_text())
    props = doc["metadata"]["component"]["properties"]
    props += [{"name": "ngcbuild:label", "value": f"evil{HOSTILE}=v{HOSTILE}"},
              {"name": "ngcbuild:env", "value": f"EVIL=x{HOSTILE}"},
              {"name": "ngcbuild:library", "value": f"libevil.so => {HOSTILE}"}]
    doc["components"].append({"bom-ref": "deb:x", "type": "library", "name": "x", "version": f"1{HOSTILE}",
                              "purl": "pkg:deb/debian/evil%0A%23%20heading@1?arch=amd64"})
    path.write_text(json.dumps(doc))
    _recorded(project.out("dev-next"))
    page = render_image_diff(project, "dev", "dev-next")
    assert "\x1b" not in page and "\r" not in page and "<script>" not in page and "[x](javascript" not in page
    assert "\n# Heading" not in page and "\n# heading" not in page
    assert "\\x1b\\[2J" in page  # shown, escaped twice over: as text, and as Markdown
    result = run_command("ngcbuild", "diff", "dev", "dev-next", "--images", "--json", cwd=project.root, timeout=60)
    assert result.returncode == 0 and "\x1b" not in result.stdout, result.stderr


@pytest.mark.parametrize("damage", ["not json", "link out", "fifo", "wrong shape"])
def test_a_damaged_or_hostile_sbom_is_one_clean_failure(project, tmp_path, damage):
    path = project.out("dev") / "sbom.cdx.json"
    path.unlink()
    if damage == "not json":
        path.write_text("{not json")
    elif damage == "link out":
        outside = tmp_path / "secret.json"
        outside.write_text('{"secret": "never shown"}')
        path.symlink_to(outside)
    elif damage == "fifo":
        os.mkfifo(path)
    else:
        path.write_text(json.dumps({"components": [{"purl": "pkg:pypi/x@1"}]}))
    with pytest.raises(OutputDamaged) as caught:
        read_image(project, "dev")
    assert "sbom.cdx.json is damaged" in str(caught.value) and "never shown" not in str(caught.value)
    result = run_command("ngcbuild", "diff", "dev", "dev-next", "--images", cwd=project.root, timeout=60)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr


def test_an_image_never_described_asks_for_the_sbom(project):
    (project.out("dev-next") / "sbom.cdx.json").unlink()
    with pytest.raises(UserError, match="ngcbuild sbom --release dev-next"):
        read_image(project, "dev-next")
    result = run_command("ngcbuild", "diff", "dev", "--images", "../../etc", cwd=project.root, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
