"""Real CUDA device code for the kernels probe and checks, built here on demand.

Shared objects compiled by this machine's nvcc (CUDA 13.0) from tests/fixtures/device_code/
kernel.cu, one per -gencode choice; libraries linked by gcc whose DT_NEEDED the loader finds
through $ORIGIN, through LD_LIBRARY_PATH, or nowhere; one real CUDA wheel (nvidia-nvjpeg-cu12)
and cuobjdump (nvidia-cuda-cuobjdump, the oracle) fetched with pip and pinned by sha256, kept
in .cache/ between runs. Nothing of NVIDIA's is a stand-in here.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "fixtures" / "device_code"
CACHE = ROOT / ".cache" / "device-code"
NVCC = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "nvcc"

# name -> nvcc -gencode arguments: what the GPU machine's script builds too (scripts/gpu-kernels)
KERNEL_OBJECTS = {
    "sm87": ["-gencode", "arch=compute_87,code=sm_87"],
    "sm80": ["-gencode", "arch=compute_80,code=sm_80"],
    "ptx80": ["-gencode", "arch=compute_80,code=compute_80"],
    "sm87_ptx87": ["-gencode", "arch=compute_87,code=[sm_87,compute_87]"],
    "sm110": ["-gencode", "arch=compute_110,code=sm_110"],
    "sm90a": ["-gencode", "arch=compute_90a,code=sm_90a"],
    "sm80_sm90": [
        "-gencode",
        "arch=compute_80,code=sm_80",
        "-gencode",
        "arch=compute_90,code=sm_90",
    ],
}

# (distribution, version, file name, sha256): pip download --no-deps of these exact files
WHEELS = {
    "nvjpeg": (
        "nvidia-nvjpeg-cu12",
        "12.4.0.76",
        "nvidia_nvjpeg_cu12-12.4.0.76-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        "3888f10b32fbd58e80166c48e01073732d752fa5f167b7cb5b9615f1c6375a20",
    ),
    "cuobjdump": (
        "nvidia-cuda-cuobjdump",
        "13.5.37",
        "nvidia_cuda_cuobjdump-13.5.37-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
        "38780fee50863252a0b8926357faa91615ca1c8346490563f33a06100cd73f58",
    ),
}


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in args], check=True, capture_output=True, text=True, **kwargs
    )


def build_kernels(dest: Path) -> dict[str, Path]:
    """lib<name>.so for each KERNEL_OBJECTS entry (nvcc -shared, the CUDA runtime static)."""
    if not NVCC.exists():
        raise FileNotFoundError(f"{NVCC} is missing: this machine's CUDA 13.0 toolkit builds them")
    dest.mkdir(parents=True, exist_ok=True)
    built = {name: dest / f"lib{name}.so" for name in KERNEL_OBJECTS}
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        list(
            pool.map(
                lambda name: run(
                    NVCC,
                    "-shared",
                    "-Xcompiler",
                    "-fPIC",
                    *KERNEL_OBJECTS[name],
                    "-o",
                    built[name],
                    SOURCE / "kernel.cu",
                ),
                built,
            )
        )
    return built


# name -> nvcc -gencode arguments of the fatbins libselfload.so keeps in its .ldata
SELF_LOADED = {
    "ptx75": ["-gencode", "arch=compute_75,code=compute_75"],
    "sm90_sm120": [
        "-gencode",
        "arch=compute_90,code=sm_90",
        "-gencode",
        "arch=compute_120,code=sm_120",
    ],
}
SELF_LOADED_LAYOUT = """\
.section .ldata,"aw",@progbits
.balign 32
.incbin "head.bin"
.balign 16
.globl jetson_env_ptx75
jetson_env_ptx75: .incbin "ptx75.fatbin"
.balign 16
.skip 24
.incbin "twiddles.bin"
.balign 16
.globl jetson_env_sm90_sm120
jetson_env_sm90_sm120: .incbin "sm90_sm120.fatbin"
"""


def build_self_loading(dest: Path) -> dict[str, Path]:
    """libselfload.so laid out as cuFFT's libcufft.so.12: its .nv_fatbin (what the runtime
    registers at load, what cuobjdump lists) holds sm_75 cubins without a kernel of its own
    (nvcc -shared of a host-only .cu); its kernels are fatbins nvcc builds from kernel.cu
    (nvcc -fatbin), kept in .ldata among other data for the library to load itself
    (cuModuleLoadData): 6,000 bytes of data, compute_75 PTX, 24 bytes, 200 KB of fp16
    values (cuFFT's twiddle tables: 11 MB between its first containers and the rest), sm_90
    and sm_120 SASS. {"so": the object, "ptx75"/"sm90_sm120": the fatbin files}."""
    if not NVCC.exists():
        raise FileNotFoundError(f"{NVCC} is missing: this machine's CUDA 13.0 toolkit builds them")
    dest.mkdir(parents=True, exist_ok=True)
    built = {name: dest / f"{name}.fatbin" for name in SELF_LOADED}
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(
            pool.map(
                lambda name: run(
                    NVCC, "-fatbin", *SELF_LOADED[name], "-o", built[name], SOURCE / "kernel.cu"
                ),
                built,
            )
        )
    (dest / "head.bin").write_bytes(bytes(range(250)) * 24)
    (dest / "twiddles.bin").write_bytes(b"\x00\x3c\x00\xbc\xa8\x39\xa8\xb9" * 25600)
    (dest / "layout.S").write_text(SELF_LOADED_LAYOUT)
    (dest / "stub.cu").write_text('extern "C" int jetson_env_stub(void) { return 0; }\n')
    run("gcc", "-c", "-o", dest / "layout.o", dest / "layout.S", cwd=dest)
    built["so"] = dest / "libselfload.so"
    run(
        NVCC,
        "-shared",
        "-Xcompiler",
        "-fPIC",
        "-gencode",
        "arch=compute_75,code=sm_75",
        "-o",
        built["so"],
        dest / "stub.cu",
        dest / "layout.o",
    )
    return built


def build_loader_cases(dest: Path, side: Path) -> dict[str, Path]:
    """In dest, CUDA objects (nvcc, sm_87 SASS) that need a library each:
    libneeds_missing.so needs libjetsonenv_gone.so, which is nowhere; libneeds_origin.so
    needs libjetsonenv_origin.so, in dest/deps (RUNPATH $ORIGIN/deps); libneeds_ldpath.so
    needs libjetsonenv_ldpath.so, in `side`, which only LD_LIBRARY_PATH names; and
    libneeds_far.so (far_names)."""
    scratch = dest.parent / "scratch"
    folders = {"missing": scratch, "origin": dest / "deps", "ldpath": side}
    libraries = {"missing": "gone", "origin": "origin", "ldpath": "ldpath"}
    for case, folder in folders.items():
        folder.mkdir(parents=True, exist_ok=True)
        run(
            "gcc",
            "-shared",
            "-fPIC",
            f"-Wl,-soname,libjetsonenv_{libraries[case]}.so",
            "-DLIBRARY",
            "-o",
            folder / f"libjetsonenv_{libraries[case]}.so",
            SOURCE / "needs.c",
        )
    built = {case: dest / f"libneeds_{case}.so" for case in folders}

    def link(case: str) -> None:
        rpath = ["-Xlinker", "--enable-new-dtags", "-Xlinker", "-rpath=$ORIGIN/deps"]
        run(
            NVCC,
            "-shared",
            "-Xcompiler",
            "-fPIC",
            *KERNEL_OBJECTS["sm87"],
            *(rpath if case == "origin" else []),
            "-o",
            built[case],
            SOURCE / "kernel.cu",
            SOURCE / "needs.c",
            f"-L{folders[case]}",
            f"-ljetsonenv_{libraries[case]}",
        )

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        list(pool.map(link, built))
    built["far"] = far_names(dest, scratch)
    shutil.rmtree(scratch)  # libjetsonenv_gone.so is nowhere now
    return built


def far_names(dest: Path, scratch: Path) -> Path:
    """libneeds_far.so (gcc, no device code): 4000 exported names of 130 bytes before the
    name of the library it needs (libjetsonenv_gone.so) in its .dynstr, half a MB in, as
    libtorch_cpu.so's needs lie after MBs of symbol names."""
    source = dest.parent / "far.c"
    source.write_text(
        "".join(
            f"int jetson_env_{'padding' * 16}_{i:05d}(void) {{ return {i}; }}\n"
            for i in range(4000)
        )
    )
    built = dest / "libneeds_far.so"
    run(
        "gcc",
        "-shared",
        "-fPIC",
        "-o",
        built,
        source,
        "-Wl,--no-as-needed",
        f"-L{scratch}",
        "-ljetsonenv_gone",
    )
    return built


def add_distribution(
    site: Path, name: str, version: str, files: list[Path], requires: tuple[str, ...] = ()
) -> None:
    """A dist-info folder in `site` whose RECORD lists `files` (under site), as pip writes it;
    `requires`: its Requires-Dist lines."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    requirements = "".join(f"Requires-Dist: {spec}\n" for spec in requires)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{requirements}"
    )
    lines = [f"{path.relative_to(site)},," for path in files]
    lines += [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(lines) + "\n")


def wheel(key: str) -> Path:
    """The pinned wheel, from .cache/ or pip download (its sha256 checked either way).
    Downloaded into a folder of this process's own and then renamed into place: the two
    xdist workers may fetch it at once."""
    name, version, file_name, digest = WHEELS[key]
    path = CACHE / file_name
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
            run(
                "python3",
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary",
                ":all:",
                "--dest",
                scratch,
                f"{name}=={version}",
            )
            os.replace(Path(scratch) / file_name, path)
    if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
        path.unlink()
        raise ValueError(f"{file_name}: sha256 is not the pinned {digest}")
    return path


def cuobjdump() -> Path:
    """cuobjdump from NVIDIA's wheel, unpacked in .cache/: into a folder of this process's
    own, then renamed into place, so that no worker rewrites the file another one runs
    ("Text file busy")."""
    folder = CACHE / "cuobjdump"
    tool = folder / "nvidia" / "cu13" / "bin" / "cuobjdump"
    if not tool.exists():
        scratch = Path(tempfile.mkdtemp(dir=CACHE))
        with zipfile.ZipFile(wheel("cuobjdump")) as archive:
            archive.extractall(scratch)
        (scratch / tool.relative_to(folder)).chmod(0o755)
        try:
            scratch.rename(folder)
        except OSError:  # another worker's is in place
            shutil.rmtree(scratch)
    return tool


def oracle(path: Path) -> tuple[list[str], list[str]]:
    """(SASS archs, PTX archs) as cuobjdump --list-elf --list-ptx names them
    ('libsm87.1.sm_87.cubin' -> 'sm_87'; PTX 'x.1.sm_80.ptx' -> 'compute_80')."""
    listed = run(cuobjdump(), "--list-elf", "--list-ptx", path).stdout.split()
    sass = {name.rsplit(".", 2)[-2] for name in listed if name.endswith(".cubin")}
    ptx = {
        name.rsplit(".", 2)[-2].replace("sm_", "compute_")
        for name in listed
        if name.endswith(".ptx")
    }
    order = lambda a: (int("".join(c for c in a if c.isdigit())), a)  # noqa: E731
    return sorted(sass, key=order), sorted(ptx, key=order)


def make_venv(python: Path, where: Path, objects: dict) -> Path:
    """A venv of `python` holding each kernel object as a distribution of its own
    (cudakernels-NAME), the loader cases as `loaderdemo`, and the nvjpeg wheel
    (objects["nvjpeg"], where it is not None) installed by pip; its interpreter."""
    run(python, "-m", "venv", "--without-pip", where)
    site = Path(
        run(
            where / "bin" / "python",
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ).stdout.strip()
    )
    for name, path in objects["kernels"].items():
        folder = site / f"cudakernels_{name}"
        folder.mkdir()
        copy = folder / path.name
        shutil.copy2(path, copy)
        add_distribution(site, f"cudakernels-{name}", "1.0", [copy])
    shutil.copytree(next(iter(objects["loader"].values())).parent, site / "loaderdemo")
    add_distribution(site, "loaderdemo", "1.0", sorted((site / "loaderdemo").rglob("*.so")))
    if objects.get("nvjpeg"):
        run(
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--target",
            site,
            objects["nvjpeg"],
        )
    return where / "bin" / "python"
