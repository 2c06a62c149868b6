"""Issue 54's classes (hostile input, round six): a secret in a value that names an image, a URL or a
time, wherever it stands in it (masked before any cut); text from an image, an engine or a registry
escaped; an index that refuses our credentials; values out of their bounds."""

from __future__ import annotations

from .hostile import SECRET, HostileCase, a_key, dev, nothing_built, setup_all

# a login long enough that a cut at 40 characters before the mask would show the secret
EPOCH_URL = f"https://ci-bot:{SECRET}{'x' * 40}@host.example/epoch"


def secrets_cases(add) -> None:
    """A secret where the reference grammar does not expect a login (after the host, where the digest goes)
    and a URL with a login in SOURCE_DATE_EPOCH: one line, exit 2, never the secret nor a piece of it."""
    klass = "secrets printed"
    key = setup_all(dev, a_key("k.pub", 0o644, public=True))
    for name, argv, setup in [
        ("verify-image-token-as-digest", ("verify-attestation", "--registry-image", f"host.example/p:dev@{SECRET}",
                                          "--trusted-key", "k.pub"), key),
        ("verify-image-login-after-host", ("verify-attestation", "--registry-image",
                                           f"host.example/p:{SECRET}@x/nvidia/pytorch:dev", "--trusted-key", "k.pub"),
         key),
        ("repro-against-token-as-digest", ("repro", "--release", "dev", "--against", f"host.example/p:dev@{SECRET}"),
         dev),
        ("repro-against-login-after-host", ("repro", "--release", "dev", "--against",
                                            f"host.example/p:{SECRET}@x/nvidia/pytorch:dev"), dev),
    ]:
        add(HostileCase(name, klass, argv, setup, absent=(SECRET, SECRET[:6]), after=nothing_built))
    for task in ("build", "repro"):
        add(HostileCase(f"{task}-epoch-url-with-login", klass, (task, "--release", "dev"), dev,
                        extra_env={"SOURCE_DATE_EPOCH": EPOCH_URL}, mentions=("SOURCE_DATE_EPOCH",),
                        absent=(SECRET, SECRET[:6]), after=nothing_built))


def round6_cases(add) -> None:
    secrets_cases(add)
