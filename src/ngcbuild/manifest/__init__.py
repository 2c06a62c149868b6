"""manifests/R.yaml -> a validated Release: the model and its field types, the component catalog,
constraints files, the loader (extends, validation) and the series of releases. Checking the pins
against the outside world is verify/'s."""
