"""A signed statement, read back: the one shape-checked reader of the in-toto statement (v1) with its
SLSA provenance predicate (v1) that supply/provenance.py makes.

A valid signature proves who signed the payload, not that the payload has the shape we expect: a key
holder (or a stolen key) can sign anything. Every field promote and verify-attestation use or print
is checked for its type here, once, and kept as plain values; what is printed of them is escaped
(core/text.safe) by the one that prints it. A payload of the wrong shape is an AttestationRejected
naming the field, never a traceback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ngcbuild.core.jsonload import load_json
from ngcbuild.supply.provenance import PREDICATE_TYPE, STATEMENT_TYPE
from ngcbuild.supply.signing import AttestationRejected

MAX_SUBJECTS = 64
MAX_DEPENDENCIES = 4096  # a release's files: a few hundred templates at most
MAX_BYPRODUCTS = 64
_HEX = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Dependency:
    uri: str
    name: str
    digest: dict  # algorithm -> value, both strings


@dataclass(frozen=True)
class Statement:
    subjects: tuple[tuple[str, str], ...]  # (name, sha256 hex)
    builder: str
    release: str
    platform: str
    context: str
    version: str
    dependencies: tuple[Dependency, ...]
    byproducts: dict  # name -> (sha256 hex or None, annotations: dict of str -> str|int|None)

    @property
    def named(self) -> set[str]:
        return {sha for _, sha in self.subjects}

    def byproduct_sha256(self, name: str) -> str | None:
        return (self.byproducts.get(name) or (None, {}))[0]


def read_statement(payload: bytes, where: str) -> Statement:
    """The statement in a verified envelope's payload, or AttestationRejected saying which field is wrong."""
    try:
        document = load_json(payload, where)
    except ValueError:
        raise AttestationRejected(f"{where}: the signed payload is not JSON (expected an in-toto statement v1)"
                                  ) from None
    if not isinstance(document, dict) or document.get("_type") != STATEMENT_TYPE:
        raise AttestationRejected(f"{where}: the signed payload is not an in-toto statement v1")
    if document.get("predicateType") != PREDICATE_TYPE:
        raise AttestationRejected(f"{where}: the statement's predicate is not SLSA provenance v1")
    field = _Fields(where)
    subjects = field.items(document, "subject", MAX_SUBJECTS)
    named = []
    for number, subject in enumerate(subjects):
        sha = field.text(field.obj(subject, f"subject.{number}", "digest"), f"subject.{number}.digest", "sha256")
        if not _HEX.fullmatch(sha):
            raise AttestationRejected(f"{where}: subject.{number}.digest.sha256 is not 64 hex digits")
        named.append((field.text(subject, f"subject.{number}", "name", default=""), sha))
    if not named:
        raise AttestationRejected(f"{where}: the statement names no subject")
    predicate = field.obj(document, "", "predicate")
    definition = field.obj(predicate, "predicate", "buildDefinition", default={})
    run = field.obj(predicate, "predicate", "runDetails", default={})
    external = field.obj(definition, "predicate.buildDefinition", "externalParameters", default={})
    internal = field.obj(definition, "predicate.buildDefinition", "internalParameters", default={})
    dependencies = []
    for number, entry in enumerate(field.items(definition, "predicate.buildDefinition", MAX_DEPENDENCIES,
                                               key="resolvedDependencies", default=[])):
        at = f"predicate.buildDefinition.resolvedDependencies.{number}"
        digest = field.obj(entry, at, "digest", default={})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in digest.items()):
            raise AttestationRejected(f"{where}: {at}.digest is not an object of strings")
        dependencies.append(Dependency(field.text(entry, at, "uri", default=""),
                                       field.text(entry, at, "name", default=""), dict(digest)))
    byproducts = {}
    for number, entry in enumerate(field.items(run, "predicate.runDetails", MAX_BYPRODUCTS, key="byproducts",
                                               default=[])):
        at = f"predicate.runDetails.byproducts.{number}"
        name = field.text(entry, at, "name", default="")
        digest = field.obj(entry, at, "digest", default={})
        sha = digest.get("sha256")
        if sha is not None and not (isinstance(sha, str) and _HEX.fullmatch(sha)):
            raise AttestationRejected(f"{where}: {at}.digest.sha256 is not 64 hex digits")
        notes = field.obj(entry, at, "annotations", default={})
        notes = {k: v for k, v in notes.items() if isinstance(k, str) and (v is None or isinstance(v, (str, int)))}
        byproducts.setdefault(name, (sha, notes))
    builder = field.obj(run, "predicate.runDetails", "builder", default={})
    return Statement(
        subjects=tuple(named),
        builder=field.text(builder, "predicate.runDetails.builder", "id", default=""),
        release=field.text(external, "externalParameters", "release", default=""),
        platform=field.text(external, "externalParameters", "platform", default=""),
        context=field.text(internal, "internalParameters", "context_sha256", default=""),
        version=field.text(internal, "internalParameters", "ngcbuild_version", default=""),
        dependencies=tuple(dependencies),
        byproducts=byproducts,
    )


class _Fields:
    """Typed reads of a JSON object, each failure naming the field."""

    _MISSING = object()

    def __init__(self, where: str):
        self.where = where

    def _get(self, parent, at: str, key: str, default):
        if not isinstance(parent, dict):
            raise AttestationRejected(f"{self.where}: {at or 'the statement'} is not an object")
        value = parent.get(key, self._MISSING)
        if value is self._MISSING or value is None:
            if default is self._MISSING:
                raise AttestationRejected(f"{self.where}: {_join(at, key)} is missing")
            return default
        return value

    def obj(self, parent, at: str, key: str, default=_MISSING) -> dict:
        value = self._get(parent, at, key, default)
        if not isinstance(value, dict):
            raise AttestationRejected(f"{self.where}: {_join(at, key)} is not an object")
        return value

    def text(self, parent, at: str, key: str, default=_MISSING) -> str:
        value = self._get(parent, at, key, default)
        if not isinstance(value, str):
            raise AttestationRejected(f"{self.where}: {_join(at, key)} is not a string")
        return value

    def items(self, parent, at: str, limit: int, key: str | None = None, default=_MISSING) -> list:
        key = key or at
        at = "" if key == at else at
        value = self._get(parent, at, key, default)
        if not isinstance(value, list):
            raise AttestationRejected(f"{self.where}: {_join(at, key)} is not a list")
        if len(value) > limit:
            raise AttestationRejected(f"{self.where}: {_join(at, key)} has {len(value)} entries, more than {limit}")
        return value


def _join(at: str, key: str) -> str:
    return f"{at}.{key}" if at else key
