"""Releases -> documents: release notes, the support matrix, diffs and the static site, with
the facts and provenance marks they share."""
