"""What every stage shares: the project's folders, errors, reading user files (files.py) and writing
outputs (outputs.py, atomic_dir.py), safe YAML, the one Jinja environment, and what releases, images
and registries are called (names.py, references.py)."""
