"""The x86 host image plus Debian bookworm's own torch (python3-torch 1.13.1 and libtorch-dev's
headers, which extensions compile against): test_torchvision_upstream.py's hosts. Debian built
it from a tree without version information, so it reports itself as 1.13.0a0.

Built once (tagged with its Dockerfile's hash); the default run builds it beside the other
images (support.hosts.prepare_default_run), so a fresh machine's downloads of Debian's
packages do not hold up a test."""

import shlex

from support.hosts import HOSTS, BuildContext, HostImage, _ensure_image

DEBIAN_TORCH = "1.13.1+dfsg-4"
DEBIAN_TORCH_PACKAGES = (f"python3-torch={DEBIAN_TORCH}", f"libtorch-dev={DEBIAN_TORCH}")


def debian_torch_image() -> str:
    """The image's tag, built first where it is missing."""
    base = HostImage(HOSTS["x86-debian12"]).ensure()
    install = shlex.join(
        ["apt-get", "install", "-y", "--no-install-recommends", *DEBIAN_TORCH_PACKAGES]
    )
    # The package lists stay: the role's apt task trusts their age (cache_valid_time).
    context = BuildContext(
        f"FROM {base}\nRUN apt-get update && DEBIAN_FRONTEND=noninteractive {install}\n"
    )
    tag = f"jetson-env-host:x86-debian12-debian-torch-{context.digest}"
    return _ensure_image(tag, lambda: context.build(tag))
