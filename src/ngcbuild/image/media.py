"""Every media type of an image format, declared once: the image manifests and the lists of them a
registry serves and ngcbuild writes (Docker schema 2, OCI), the config and layer blobs ngcbuild's push
names (blobs.py), the OCI config and zstd layers of an image's zstd variant (zstd_variant.py), the gzip layers
a promoted image may name (Docker's or OCI's), and the OCI empty config an attachment's manifest carries
(supply/attachments.py).
What an attachment holds (its artifact type, the in-toto payload) is the attachment's, not a format's."""

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
OCI_LAYER_ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_EMPTY = "application/vnd.oci.empty.v1+json"
IMAGE_MANIFESTS = (DOCKER_MANIFEST, OCI_MANIFEST)  # a manifest that names a config and layers
IMAGE_CONFIGS = (DOCKER_CONFIG, OCI_CONFIG)  # the same JSON under either format's name
GZIP_LAYERS = (DOCKER_LAYER, OCI_LAYER)  # a layer tar as gzip (one member or several)
LISTS = (DOCKER_LIST, OCI_INDEX)  # a manifest that names manifests (one per platform), not layers
