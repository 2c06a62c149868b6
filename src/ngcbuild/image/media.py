"""Every media type of an image format, declared once: the image manifests and the lists of them a
registry serves and ngcbuild writes (Docker schema 2, OCI), the config and layer blobs ngcbuild's push
names (blobs.py), and the OCI empty config an attachment's manifest carries (supply/attachments.py).
What an attachment holds (its artifact type, the in-toto payload) is the attachment's, not a format's."""

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_EMPTY = "application/vnd.oci.empty.v1+json"
LISTS = (DOCKER_LIST, OCI_INDEX)  # a manifest that names manifests (one per platform), not layers
