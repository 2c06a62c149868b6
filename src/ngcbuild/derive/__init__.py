"""Derived releases, before they are built: a team's requirements on one of our releases (or on an image
pinned by digest), resolved against the base's pins (resolve.py, with the one resolver: resolver/),
locked (lockfile.py), and the requirement sets a team could move to (fit.py); the lock is checked before
render and build by manifest/lock_check.py. The manifest side (manifests/derived/R.yaml, its requirements and lock) is
read by manifest/derived.py; from there a derived release takes the one pipeline: rendered FROM its base
by digest (render/derived.py), built, smoked, pushed and described as every release is."""
