"""CUDA forward compatibility as NGC's images switch it: the base's compat libraries (a newer libcuda than
an older kernel driver's) kept in one folder, and a link to that folder named in LD_LIBRARY_PATH from the
start, after torch's lib. The start-up snippet (entrypoint.d/55-cuda-forward-compat.sh) makes the link only
when compatibility is needed and a cuInit through it succeeds, so the process's LD_LIBRARY_PATH is the same
string with compatibility enabled and disabled: torch/lib stays first either way (issue 53: exporting the
compat folder in front of the path broke the smoke check on a 580 driver under CUDA 13.1).

The build moves whatever layout the base has into that form (templates/image/cuda-compat.j2)."""

from __future__ import annotations

from dataclasses import dataclass

from ngcbuild.core.errors import ManifestError
from ngcbuild.manifest.loader import LoadedRelease

# NGC's _CUDA_COMPAT_PATH; lib is the name NGC's LD_LIBRARY_PATH carries (ngc-image-layout.md), lib.real
# where the libraries stay while the link is absent.
CUDA_COMPAT_ROOT = "/usr/local/cuda/compat"


@dataclass(frozen=True)
class CudaCompat:
    root: str = CUDA_COMPAT_ROOT

    @property
    def link(self) -> str:
        return f"{self.root}/lib"

    @property
    def libraries(self) -> str:
        return f"{self.root}/lib.real"


def compat_of(loaded: LoadedRelease) -> CudaCompat | None:
    """The forward-compat layout of a release whose base carries CUDA (and so may carry its compat package);
    None where CUDA comes from wheels or not at all. Such a release's manifest names the link in its
    LD_LIBRARY_PATH (env or env_prepend), where it wants it: otherwise a ManifestError."""
    release = loaded.release
    cuda = release.components.get("cuda")
    if cuda is None or cuda.install != "base":
        return None
    compat = CudaCompat()
    if "LD_LIBRARY_PATH" in release.env_prepend:
        key, folders = "env_prepend.LD_LIBRARY_PATH", list(release.env_prepend["LD_LIBRARY_PATH"])
    else:
        key, folders = "env.LD_LIBRARY_PATH", (release.env.get("LD_LIBRARY_PATH") or "").split(":")
    if compat.link not in folders:
        raise ManifestError(loaded.path, key, f"expected {compat.link} among the folders (the base carries CUDA: "
                            "the link the start-up snippet makes when forward compatibility is enabled)")
    return compat
