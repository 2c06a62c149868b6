"""build/R/, the spine between the stages: the one list of what it holds (release_dir.py), its
locks and whole-directory swaps (atomic_dir.py), and the typed record every stage adds its section
to (record.py). Every file a stage leaves in build/R/ is written through core/outputs.write_file."""
