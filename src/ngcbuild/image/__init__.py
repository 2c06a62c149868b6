"""The image as data, whoever made it and wherever it goes: formats only, no engine, no registry, no
network. Every media type of an image, its manifest, a list of them and their blobs, declared once
(media.py). It imports only core/: registry/ asks for and reads what it names, publish/ and supply/
write it."""
