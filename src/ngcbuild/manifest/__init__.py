"""manifests/R.yaml -> a validated Release: the model and its field types, the component catalog,
constraints files, the loader (extends, validation) and the series of releases; a derived release's lock
read (lock.py) and checked before anything renders it (lock_check.py). Checking the pins
against the outside world is verify/'s."""
