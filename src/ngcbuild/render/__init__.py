"""A loaded release -> build/R/: the image plan computed once from the manifest, the rendered
context, the stamp of what it was rendered from (the one definition of a render's inputs), and the
releases a commit touches through those inputs (changed.py, the release workflow's plan)."""
