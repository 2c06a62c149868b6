"""Derived releases: a team's requirements on one of our releases (or on an image pinned by digest),
resolved against the base's pins before anything is built (resolve.py, with the one resolver:
resolver/), locked (lockfile.py), the lock checked before render and build (lock_check.py), rendered
FROM the base by digest (render.py, templates/derived/), built, smoked with the checks that prove the
base's stack unchanged (build.py, smoke.py), and the requirement sets a team could move to (fit.py).
The manifest side (manifests/derived/R.yaml, its requirements and lock) is read by manifest/derived.py."""
