"""Installed versions of the frameworks, from package metadata: nothing is imported.

Read-only and stdlib-only; runs in the TARGET interpreter (Python 3.6+). What
`doctor --quick` reads instead of importing torch, tensorrt, torch2trt or pycuda
(seconds of CPU and hundreds of MB on a Nano). collect() returns a dict.
"""

# module -> the distributions that install it, the first installed one giving the version:
# the one table of names for the probes, the facts module (module_utils/jetson_env_packages)
# and so the roles (ansible_facts.jetson_env_python.packages.MODULE). pip's TensorRT is
# per CUDA major: `tensorrt` or `tensorrt-cuXX` over `tensorrt-cuXX-bindings`.
DISTRIBUTIONS = (
    ("torch", ("torch",)),
    ("torchvision", ("torchvision",)),
    (
        "tensorrt",
        (
            "tensorrt",
            "tensorrt-cu13",
            "tensorrt-cu12",
            "tensorrt-cu11",
            "tensorrt-cu13-bindings",
            "tensorrt-cu12-bindings",
            "tensorrt-cu11-bindings",
        ),
    ),
    ("torch2trt", ("torch2trt",)),
    ("pycuda", ("pycuda",)),
    ("numpy", ("numpy",)),
    ("termcolor", ("termcolor",)),
    ("pip", ("pip",)),
)


def collect():
    packages = {}
    for module, distributions in DISTRIBUTIONS:
        versions = [distribution_version(name) for name in distributions]
        packages[module] = {
            "installed": find_spec(module),
            "version": next((version for version in versions if version), None),
        }
    return {"packages": packages}
