"""A loaded release -> build/R/: the image plan computed once from the manifest, the rendered
context, the stamp of what it was rendered from, and the golden Dockerfiles."""
