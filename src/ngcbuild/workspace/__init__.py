"""build/R/, the spine between the stages: the one list of what it holds (release_dir.py), its locks
(locks.py), whole-directory swaps (atomic_dir.py), and the typed record every stage adds its section to
(record.py: one frozen dataclass per section in sections.py, read and written as the same JSON by
schema.py). Every file a stage leaves in build/R/ is written whole through ReleaseDir.write."""
