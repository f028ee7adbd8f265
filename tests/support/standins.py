"""Stand-ins for the FILES NVIDIA ships, built on demand for tests.

TensorRT itself cannot exist here. These reproduce what detection, install and
repair logic looks at: a shared library with the real soname exporting
getInferLibVersion, the Python bindings' wheel (whose import fails exactly like
the real one when libnvinfer is not on the loader path: "libnvinfer.so.N: cannot
open shared object file"), and a tarball with TensorRT's folder layout. They cannot
build an engine, and everything built here says STAND-IN in its name or contents.
"""

import base64
import hashlib
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIXTURE_SOURCE = FIXTURES / "tensorrt"
# C compilers for the test hosts' architectures (Debian's cross compiler for arm64).
COMPILERS = {"x86_64": "gcc", "aarch64": "aarch64-linux-gnu-gcc"}


def encode_trt_version(version: str) -> int:
    major, minor, patch = (int(x) for x in [*version.split("."), "0", "0"][:3])
    return major * (10000 if major >= 10 else 1000) + minor * 100 + patch


def _shared_library(
    name: str, version: str, encoded: int, source: Path, dest: Path, cc: str
) -> Path:
    """Compile lib<name>.so.<version> (soname lib<name>.so.<major>) with STANDIN_VERSION=encoded,
    and the lib<name>.so.<major> and lib<name>.so links, as the real packages lay them out."""
    major = version.split(".")[0]
    dest.mkdir(parents=True, exist_ok=True)
    real = dest / f"lib{name}.so.{version}"
    subprocess.run(
        [cc, "-shared", "-fPIC", f"-Wl,-soname,lib{name}.so.{major}",
         f"-DSTANDIN_VERSION={encoded}", "-o", str(real), str(source)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    for link in (f"lib{name}.so.{major}", f"lib{name}.so"):
        (dest / link).unlink(missing_ok=True)
        (dest / link).symlink_to(real.name)
    return real


def build_libnvinfer(version: str, dest: Path, cc: str = "gcc") -> Path:
    """libnvinfer.so.<version> exporting getInferLibVersion."""
    source = FIXTURE_SOURCE / "libnvinfer_standin.c"
    return _shared_library("nvinfer", version, encode_trt_version(version), source, dest, cc)


BINDINGS_INIT = '''"""STAND-IN for TensorRT Python bindings (tests only)."""
import ctypes

try:
    ctypes.CDLL("libnvinfer.so.{major}")
except OSError as exc:
    raise ImportError(str(exc)) from None

__version__ = "{version}"
STANDIN = True
'''


def build_bindings_wheel(version: str, python_tag: str, dest: Path) -> Path:
    """A wheel named like NVIDIA's (tensorrt-8.6.1-cp311-none-linux_x86_64.whl), the same
    bytes on every call (it goes into the tarball images/inputs/ stages for Docker's cache)."""
    init = BINDINGS_INIT.format(major=version.split(".")[0], version=version)
    return _wheel(dest, "tensorrt", version, f"{python_tag}-none-linux_x86_64",
                  {"tensorrt/__init__.py": init.encode()})  # fmt: skip


def _wheel(
    dest: Path,
    name: str,
    version: str,
    tag: str,
    files: dict[str, bytes],
    requires: tuple[str, ...] = (),
) -> Path:
    """A platform wheel `name`-`version`-`tag`.whl holding `files`, with its RECORD."""
    dist = f"{name}-{version}"
    wheel = dest / f"{dist}-{tag}.whl"
    metadata = (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                "Summary: STAND-IN (jetson-env tests)\n"
                + "".join(f"Requires-Dist: {r}\n" for r in requires))  # fmt: skip
    files = {
        **files,
        f"{dist}.dist-info/METADATA": metadata.encode(),
        f"{dist}.dist-info/WHEEL": (f"Wheel-Version: 1.0\nGenerator: jetson-env-tests\n"
                                    f"Root-Is-Purelib: false\nTag: {tag}\n").encode(),
    }  # fmt: skip
    dest.mkdir(parents=True, exist_ok=True)
    record = []
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(zipfile.ZipInfo(path, (1980, 1, 1, 0, 0, 0)), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{path},sha256={digest.decode()},{len(data)}")
        record.append(f"{dist}.dist-info/RECORD,,")
        archive.writestr(zipfile.ZipInfo(f"{dist}.dist-info/RECORD", (1980, 1, 1, 0, 0, 0)),
                         "\n".join(record) + "\n")  # fmt: skip
    return wheel


# The Requires-Dist of PyTorch's setup.py for the releases of NVIDIA's JetPack 4/5 wheels the
# matrix names (1.6: install_requires; 2.0: without triton and the CUDA wheels of x86 builds).
JETSON_TORCH_REQUIRES = {
    "1.6": ("future", "numpy"),
    "2.0": ("filelock", "typing-extensions", "sympy", "networkx", "jinja2"),
}


def build_jetson_torch_wheel(
    filename: str, dest: Path, requires: tuple[str, ...] | None = None
) -> Path:
    """A STAND-IN of NVIDIA's torch wheel for JetPack 4/5 (`filename`, the matrix row's): its
    version and Python tag, the Requires-Dist of PyTorch's setup.py for that release (or
    `requires`), tagged for this x86 host (NVIDIA's aarch64 wheel can neither be fetched nor run
    here). `import torch` gives that version and nothing else: no tensors, no C++ to build
    torchvision against."""
    name, version, python, abi, _ = filename.removesuffix(".whl").split("-")
    if requires is None:
        requires = JETSON_TORCH_REQUIRES[".".join(version.split(".")[:2])]
    init = f'"""STAND-IN for NVIDIA\'s {filename}."""\n__version__ = "{version}"\n'
    tag = f"{python}-{abi}-linux_x86_64"
    return _wheel(dest, name, version, tag, {"torch/__init__.py": init.encode()}, requires)


def build_tensorrt_pip_wheels(version: str, cuda_major: str, dest: Path) -> list[Path]:
    """What pip installs for tensorrt-cu<major>==<version>, as stand-ins: tensorrt_cuNN (the
    `tensorrt` module, whose import loads libnvinfer through the loader, as the real
    bindings do) requiring tensorrt_cuNN_libs (site-packages/tensorrt_libs/libnvinfer.so.N)."""
    major = version.split(".")[0]
    tag = "py3-none-manylinux_2_17_x86_64"
    with tempfile.TemporaryDirectory() as tmp:
        library = build_libnvinfer(".".join(version.split(".")[:3]), Path(tmp))
        libs = _wheel(dest, f"tensorrt_cu{cuda_major}_libs", version, tag, {
            "tensorrt_libs/__init__.py": b'"""STAND-IN for tensorrt_libs (tests only)."""\n',
            f"tensorrt_libs/libnvinfer.so.{major}": library.read_bytes(),
        })  # fmt: skip
    bindings = BINDINGS_INIT.format(major=major, version=version).encode()
    meta = _wheel(dest, f"tensorrt_cu{cuda_major}", version, tag,
                  {"tensorrt/__init__.py": bindings},
                  (f"tensorrt_cu{cuda_major}_libs=={version}",))  # fmt: skip
    return [meta, libs]


# What NVIDIA's tensorrt_cuNN_libs wheel holds (site-packages/tensorrt_libs/lib<name>.so.<major>)
# and PyPI's real tensorrt_bindings/tensorrt.so lists as NEEDED (readelf -d, 11.1.0.106 cp314).
TENSORRT_PIP_LIBRARIES = ("nvinfer", "nvinfer_plugin", "nvonnxparser")


def build_tensorrt_libs_wheel(version: str, cuda_major: str, dest: Path) -> Path:
    """A STAND-IN tensorrt_cu<major>_libs wheel for PyPI's REAL tensorrt_cu<major>_bindings (PyPI
    serves only a stub of -libs that downloads from NVIDIA's index): tensorrt_libs/ with
    TENSORRT_PIP_LIBRARIES, each exporting what the real tensorrt.so imports from it
    (bindings_imports_standin.c, every call returns NULL), libnvinfer also getInferLibVersion,
    so the real bindings import against it and the probes read its version."""
    major = version.split(".")[0]
    files = {"tensorrt_libs/__init__.py": b'"""STAND-IN for tensorrt_libs (tests only)."""\n'}
    with tempfile.TemporaryDirectory() as tmp:
        for name in TENSORRT_PIP_LIBRARIES:
            sources = [FIXTURE_SOURCE / "bindings_imports_standin.c"]
            if name == "nvinfer":
                sources.append(FIXTURE_SOURCE / "libnvinfer_standin.c")
            library = Path(tmp) / f"lib{name}.so.{major}"
            subprocess.run(
                ["gcc", "-shared", "-fPIC", f"-Wl,-soname,{library.name}",
                 f"-DSTANDIN_VERSION={encode_trt_version(version)}", "-o", str(library),
                 *map(str, sources)],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            files[f"tensorrt_libs/{library.name}"] = library.read_bytes()
    return _wheel(dest, f"tensorrt_cu{cuda_major}_libs", version,
                  "py3-none-manylinux_2_17_x86_64", files)  # fmt: skip


def build_tensorrt_tarball(version: str, python_tag: str, dest: Path) -> Path:
    """TensorRT-<version>/{lib,include,python} packed like NVIDIA's tar packages: 10.x as
    TensorRT-<version>.Linux.x86_64-gnu...tar.gz, 11.x as
    TensorRT-Enterprise-<version>-Linux-x86_64-...tar.zst; both unpack to TensorRT-<version>/."""
    root_name = f"TensorRT-{version}"
    work = dest / "tree"
    root = work / root_name
    shutil.rmtree(work, ignore_errors=True)
    build_libnvinfer(version, root / "lib")
    (root / "include").mkdir(parents=True)
    (root / "include" / "NvInferVersion.h").write_text(
        "/* STAND-IN header (jetson-env tests) */\n"
        + "".join(
            f"#define NV_TENSORRT_{name} {value}\n"
            for name, value in zip(("MAJOR", "MINOR", "PATCH"), version.split("."), strict=False)
        )
    )
    # What torch2trt's plugins are compiled against (the role looks for it).
    (root / "include" / "NvInfer.h").write_text(
        '/* STAND-IN header (jetson-env tests) */\n#include "NvInferVersion.h"\n'
    )
    build_bindings_wheel(version, python_tag, root / "python")
    if int(version.split(".")[0]) >= 11:
        tarball = dest / f"TensorRT-Enterprise-{version}-Linux-x86_64-cuda-13.0-STANDIN.tar.zst"
        subprocess.run(["tar", "--zstd", "-C", str(work), "-cf", str(tarball), root_name],
                       check=True, capture_output=True)  # fmt: skip
    else:
        tarball = dest / f"{root_name}.Linux.x86_64-gnu.STANDIN.tar.gz"
        with tarfile.open(tarball, "w:gz") as archive:
            archive.add(root, arcname=root_name)
    shutil.rmtree(work)
    return tarball


def build_libcudart(version: str, dest: Path, cc: str = "gcc") -> Path:
    """libcudart.so.<version> exporting cudaRuntimeGetVersion (MAJOR*1000 + MINOR*10)."""
    major, minor = (int(x) for x in version.split(".")[:2])
    source = FIXTURE_SOURCE.parent / "cuda" / "libcudart_standin.c"
    return _shared_library("cudart", version, major * 1000 + minor * 10, source, dest, cc)


# The CUDA of the staged Orin (its usr/local/cuda-<release>/version.json): the stand-in
# toolkit's.
STAGED_CUDA_VERSION = "12.6.68"


def cuda_release(version: str) -> str:
    """A CUDA toolkit's release, as its folder names it (cuda-12.6): major.minor."""
    return ".".join(version.split(".")[:2])


def build_cuda_toolkit(dest: Path, version: str = STAGED_CUDA_VERSION) -> Path:
    """dest/cuda-<major.minor>/, returned: a version.json like the Orin's staged one (its
    version replaced), a stand-in libcudart in lib64 and a stand-in bin/nvcc that prints
    `nvcc --version`'s release line."""
    release = cuda_release(version)
    tree = dest / f"cuda-{release}"
    (tree / "lib64").mkdir(parents=True)
    (tree / "bin").mkdir()
    staged_cuda = f"cuda-{cuda_release(STAGED_CUDA_VERSION)}"
    staged = FIXTURES / "hosts" / "orin-r36.4.3" / "usr" / "local" / staged_cuda / "version.json"
    (tree / "version.json").write_text(staged.read_text().replace(STAGED_CUDA_VERSION, version))
    build_libcudart(version, tree / "lib64")
    nvcc = tree / "bin" / "nvcc"
    nvcc.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {release}, V{version}'\n")
    nvcc.chmod(0o755)
    return tree


def build_cuda_toolkit_archive(dest: Path, version: str = STAGED_CUDA_VERSION) -> Path:
    """dest/cuda.tar: build_cuda_toolkit's cuda-<major.minor>/."""
    tree = build_cuda_toolkit(dest, version)
    archive = dest / "cuda.tar"
    subprocess.run(["tar", "-C", str(dest), "-cf", str(archive), tree.name], check=True)
    return archive


def build_cusparselt_archive(version: str, machine: str, dest: Path) -> Path:
    """libcusparse_lt-linux-<sbsa|x86_64>-<version>-archive.tar.xz laid out like NVIDIA's:
    include/cusparseLt.h, lib/libcusparseLt.so.<version> (soname libcusparseLt.so.0) and
    its links, compiled for `machine`."""
    platform = "sbsa" if machine == "aarch64" else machine
    top = f"libcusparse_lt-linux-{platform}-{version}-archive"
    work = dest / "cusparselt-tree"
    shutil.rmtree(work, ignore_errors=True)
    source = FIXTURES / "cusparselt"
    (work / top / "include").mkdir(parents=True)
    shutil.copy(source / "cusparseLt.h", work / top / "include" / "cusparseLt.h")
    encoded = int(version.replace(".", ""))
    _shared_library("cusparseLt", version, encoded, source / "libcusparselt_standin.c",
                    work / top / "lib", COMPILERS[machine])  # fmt: skip
    archive = dest / f"{top}.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        tar.add(work / top, arcname=top)
    return archive


def build_standin_wheel(name: str, version: str, dest: Path) -> Path:
    """A pure-Python wheel `name`==`version` whose module says STAND-IN: what an offline
    host's local wheelhouse holds for a requirement the doctor prints (pip installs it
    like the real one)."""
    module = name.replace("-", "_").lower()
    dist = f"{module}-{version}"
    wheel = dest / f"{dist}-py3-none-any.whl"
    files = {
        f"{module}/__init__.py": f'"""STAND-IN for {name}."""\n__version__ = "{version}"\n',
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: jetson-env-tests\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    dest.mkdir(parents=True, exist_ok=True)
    record = []
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            data = text.encode()
            archive.writestr(zipfile.ZipInfo(path, (1980, 1, 1, 0, 0, 0)), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{path},sha256={digest.decode()},{len(data)}")
        record.append(f"{dist}.dist-info/RECORD,,")
        info = zipfile.ZipInfo(f"{dist}.dist-info/RECORD", (1980, 1, 1, 0, 0, 0))
        archive.writestr(info, "\n".join(record) + "\n")
    return wheel


def deterministic_tar(source: Path, top: str, archive: Path) -> Path:
    """`source` packed as `top`/ with fixed owners and times: the same bytes every time, so
    an image built from it keeps its hash."""

    def normalised(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "root", "root"
        return info

    with tarfile.open(archive, "w", format=tarfile.GNU_FORMAT) as tar:
        for path in sorted([source, *source.rglob("*")]):
            tar.add(path, arcname=str(Path(top) / path.relative_to(source)), recursive=False,
                    filter=normalised)  # fmt: skip
    return archive


CONTAINER_RUNTIME_STANDIN = FIXTURES / "docker" / "nvidia-container-runtime-standin"


def stage_container_runtime(host, path: str = "/usr/bin/nvidia-container-runtime") -> None:
    """NVIDIA's container runtime (its package comes from NVIDIA's apt repository) stood in
    for at the place its package installs it: the docker_runtime role registers the nvidia
    runtime only where it is there."""
    host.copy_in(CONTAINER_RUNTIME_STANDIN, path)
    host.exec(["chmod", "755", path])
