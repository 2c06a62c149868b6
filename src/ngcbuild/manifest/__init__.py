"""manifests/R.yaml -> a validated Release: the model and its field types, the component catalog,
constraints files, the loader (extends, validation), the series of releases, and `verify` (every
pin checked against its index, apt_index.py for Debian/Ubuntu archives, closure.py for whether the
pin set is closed under its own requirements)."""
