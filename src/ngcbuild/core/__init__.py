"""What every stage shares: the project's folders, errors, reading user files (files.py) and writing
outputs whole (outputs.py), safe YAML, the one Jinja environment, the one HTTP session policy
(http.py), the one index rule of every step that reads an index and the credentials it carries
(indexes.py), and what releases, images and registries are called (names.py, references.py)."""
