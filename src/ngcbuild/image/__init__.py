"""The image as data, whoever made it and wherever it goes: formats only, no engine, no registry, no
network. Every media type of an image, its manifest, a list of them and their blobs, declared once
(media.py); an engine's save read as it streams and by what it declares (save.py); one layer's tar
rewritten deterministically (layer_tar.py) less what is volatile by nature (volatile.py); the image
config normalised (config.py) by the recipe the engine's image carries (recipe.py); the layers compressed
deterministically and the manifest naming them (blobs.py), and the same layers as zstd for an image's zstd
variant, its OCI manifest and index (zstd_variant.py). It imports only core/: engine/ streams it an
engine's save,
registry/ asks for and reads what it names, publish/ and supply/ write it."""
