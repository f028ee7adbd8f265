"""The TensorRT API the project uses, checked against PyPI's REAL TensorRT Python bindings.

PyPI serves the bindings as wheels (tensorrt-bindings 8.6.1, tensorrt-cu12-bindings and
tensorrt-cu13-bindings 10.x and 11.x); only the libraries (libnvinfer ...) come from NVIDIA's
own index. The bindings' tensorrt.so imports a dozen symbols from those libraries: stand-in
libraries exporting just those (tests/fixtures/tensorrt/bindings_imports_standin.c, compiled
here with gcc under every soname tensorrt.so lists as NEEDED) let the real module import, so its
classes, enums and methods can be looked at. This is no conversion: the stand-ins return NULL,
no TensorRT function is called and no engine is built.

What is checked:
- every TensorRT attribute our probes use (found in their source with ast, so a new use is
  covered without editing this file) exists in the bindings of every TensorRT the matrix names
  that PyPI has bindings for (same major.minor; TensorRT 7.x and 8.0 to 8.5 have none there);
  attributes read with getattr(..., default) or tested with hasattr are optional;
- "torch2trt needs TensorRT < 11", derived from torch2trt's own source at the matrix's pinned
  commit: the TensorRT attributes its torch2trt() reaches on every conversion (and with
  fp16_mode) all exist in 10.x and not all in 11.x, and the matrix's converter table and the
  doctor's finding say the same.

Wheels are cached by sha256 in ~/.cache/jetson-env/tests/tensorrt-api/ (a warm run costs pip's
resolution only); torch2trt.py is fetched from GitHub's archive of the pinned commit, checked
against its sha256 and cached there too.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from functools import cache
from pathlib import Path

import pytest
from support.hosts import TESTS_CACHE

from jetson_env import matrix as matrix_mod
from jetson_env.checks import BY_NAME
from jetson_env.checks.context import Facts
from jetson_env.probing import ProbeResult

REPO = Path(__file__).resolve().parents[2]
STANDIN_SOURCE = REPO / "tests" / "fixtures" / "tensorrt" / "bindings_imports_standin.c"
CACHE = TESTS_CACHE / "tensorrt-api"
MATRIX = matrix_mod.load()
# Where the project calls TensorRT: the probes (run in the target's Python) and the roles'
# helper scripts.
SOURCES = sorted(
    [*(REPO / "jetson_env" / "probes").glob("*.py"),
     *(REPO / "ansible_collections").rglob("roles/*/files/*.py")]
)  # fmt: skip
# torch2trt.py at the matrix's pinned commit (4e820ae), as GitHub serves it in the commit's
# archive. Pinned so the derivation below reads exactly the code the roles install.
TORCH2TRT_SHA256 = "a9bdc8949e4e5335b986fd05fd060e709e371bb4075993c2d17458ad4fc47703"
TENSORRT_11 = "tensorrt-cu13-bindings>=11,<12"  # the newest 11.x PyPI has
# What the bindings' factory methods return (their Python docs): the receiver type of
# `builder.create_network(...)` and the like, so methods called on the result are checked too.
RETURNS = {
    "create_network": "INetworkDefinition",
    "create_builder_config": "IBuilderConfig",
    "build_serialized_network": "IHostMemory",
    "deserialize_cuda_engine": "ICudaEngine",
    "create_execution_context": "IExecutionContext",
    "get_plugin_registry": "IPluginRegistry",
}
INSPECT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import tensorrt_bindings as trt
found = {}
for path in json.loads(sys.argv[2]):
    node = trt
    for part in path.split("."):
        node = getattr(node, part, None)
        if node is None:
            break
    found[path] = node is not None
print(json.dumps({"version": trt.__version__, "found": found}))
"""


# ---------------------------------------------------------------------------------------
# PyPI's bindings, cached by sha256


def resolve(requirement: str, python: str = "") -> dict | None:
    """What pip would download for `requirement` for this Python, or for CPython `python` on
    x86_64 Linux (wheels only): {"url", "sha256", "filename", "version"}, or None where PyPI
    has none. Cached for a day."""
    key = hashlib.sha256(
        json.dumps(
            [requirement, python or sys.version_info[:2], time.strftime("%Y-%m-%d")]
        ).encode()
    ).hexdigest()[:24]
    platform = ["--python-version", python, "--platform", "manylinux_2_28_x86_64"] if python else []
    cached = CACHE / "resolve" / f"{key}.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    # One report per process: both xdist workers may resolve the same requirement at once.
    report = CACHE / "resolve" / f"{key}.{os.getpid()}.report"
    report.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
         "--only-binary=:all:", "--quiet", "--disable-pip-version-check",
         "--target", str(CACHE / "never"), "--report", str(report), *platform, requirement],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    found = None
    if proc.returncode == 0:
        (item,) = json.loads(report.read_text())["install"]
        info = item["download_info"]
        found = {
            "url": info["url"],
            "sha256": info["archive_info"]["hashes"]["sha256"],
            "filename": info["url"].rsplit("/", 1)[-1],
            "version": item["metadata"]["version"],
        }
    elif "No matching distribution" not in proc.stderr:
        pytest.fail(f"pip could not resolve {requirement}: {proc.stderr.strip()[-600:]}")
    report.unlink(missing_ok=True)
    partial = cached.with_suffix(f".{os.getpid()}.partial")
    partial.write_text(json.dumps(found))
    partial.replace(cached)
    return found


def unpacked(wheel: dict) -> Path:
    """The wheel's files, downloaded once (checked against its sha256) and unpacked once."""
    target = CACHE / wheel["sha256"]
    if (target / "tensorrt_bindings").is_dir():
        return target
    with urllib.request.urlopen(wheel["url"], timeout=300) as response:
        data = response.read()
    assert hashlib.sha256(data).hexdigest() == wheel["sha256"], wheel["url"]
    # One folder per process: both xdist workers may unpack the same wheel at once.
    partial = target.with_suffix(f".{os.getpid()}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    zipfile.ZipFile(io.BytesIO(data)).extractall(partial)
    try:
        partial.rename(target)
    except OSError:  # the other worker's copy is there: the same files
        shutil.rmtree(partial, ignore_errors=True)
    return target


def needed_sonames(module: Path) -> list[str]:
    """The TensorRT libraries tensorrt.so lists as NEEDED (readelf -d)."""
    out = subprocess.run(["readelf", "-d", str(module)], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    names = [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]
    return [name for name in names if name.startswith("libnv")]


def tensorrt_symbols(module: Path) -> set[str]:
    """What `module` imports from TensorRT's libraries: its undefined symbols without a symbol
    version (glibc's and libstdc++'s carry one), other than Python's C API and libdl's."""
    out = subprocess.run(["nm", "-D", "--undefined-only", str(module)], capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    names = {line.split()[1] for line in out.splitlines() if line.split()[:1] == ["U"]}
    return {n for n in names if "@" not in n and not n.startswith(("Py", "_Py", "dl"))}


@cache
def standin_symbols() -> set[str]:
    text = STANDIN_SOURCE.read_text()
    return {line[len("STANDIN(") : -1] for line in text.splitlines() if line.startswith("STANDIN(")}


def standin_libraries(module: Path, dest: Path) -> Path:
    """The stand-in compiled under each soname `module` needs, in `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    for soname in needed_sonames(module):
        subprocess.run(
            ["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(dest / soname),
             str(STANDIN_SOURCE)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    return dest


def inspect(wheel_dir: Path, paths: list[str], libraries: Path) -> dict:
    """Import the real bindings against the stand-ins and say which `paths` exist."""
    env = {**os.environ, "LD_LIBRARY_PATH": str(libraries)}
    proc = subprocess.run(
        [sys.executable, "-c", INSPECT, str(wheel_dir), json.dumps(sorted(paths))],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


# ---------------------------------------------------------------------------------------
# The TensorRT attributes a Python source uses


def chain(node: ast.AST) -> list[str] | None:
    """["trt", "BuilderFlag", "FP16"] for trt.BuilderFlag.FP16; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


class Uses(ast.NodeVisitor):
    """The TensorRT attributes a module uses, as paths under the module ("BuilderFlag.FP16",
    "Builder.create_network"): chains on its import name, and methods of the objects its
    classes and factory methods return (followed through local variables and the arguments of
    the module's own functions). Attributes read with getattr(x, "name", default) or tested
    with hasattr are optional: code that works without them."""

    def __init__(self, tree: ast.Module):
        self.aliases = {alias.asname or alias.name for node in ast.walk(tree)
                        if isinstance(node, ast.Import) for alias in node.names
                        if alias.name == "tensorrt"}  # fmt: skip
        self.functions = {f.name: f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}
        self.types: dict[tuple[str, str], str] = {}
        self.required: set[str] = set()
        self.optional: set[str] = set()
        self.scopes = [""]
        for _ in range(3):  # types flow into functions through their callers' arguments
            self.visit(tree)

    def type_of(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return ""
            # this function's variable, else one of the functions it is nested in (a closure)
            return next((self.types[(scope, node.id)] for scope in reversed(self.scopes)
                         if (scope, node.id) in self.types), None)  # fmt: skip
        if isinstance(node, ast.Attribute):
            owner = self.type_of(node.value)
            if owner is None:
                return None
            return f"{owner}.{node.attr}".lstrip(".")
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Attribute) and func.attr in RETURNS
                    and self.type_of(func.value) is not None):  # fmt: skip
                return RETURNS[func.attr]
            called = self.type_of(func)
            return called if called and "." not in called else None
        return None

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.scopes.append(node.name)
        self.generic_visit(node)
        self.scopes.pop()

    def visit_Assign(self, node: ast.Assign) -> None:
        kind = self.type_of(node.value)
        for target in node.targets:
            if kind and isinstance(target, ast.Name):
                self.types[(self.scopes[-1], target.id)] = kind
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("getattr", "hasattr") and len(node.args) >= 2:
            owner, name = self.type_of(node.args[0]), node.args[1]
            guarded = func.id == "hasattr" or len(node.args) == 3
            if owner is not None and isinstance(name, ast.Constant) and guarded:
                self.optional.add(f"{owner}.{name.value}".lstrip("."))
        if isinstance(func, ast.Name) and func.id in self.functions:
            params = [a.arg for a in self.functions[func.id].args.args]
            for param, arg in zip(params, node.args, strict=False):
                kind = self.type_of(arg)
                if kind is not None:
                    self.types[(func.id, param)] = kind
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        owner = self.type_of(node.value)
        if owner is not None and not node.attr.startswith("__"):
            self.required.add(f"{owner}.{node.attr}".lstrip("."))
            return  # the outermost attribute of a chain covers its inner ones
        self.generic_visit(node)


def project_uses() -> tuple[set[str], set[str]]:
    required, optional = set(), set()
    for path in SOURCES:
        uses = Uses(ast.parse(path.read_text()))
        required |= uses.required
        optional |= uses.optional
    return required - optional, optional


# ---------------------------------------------------------------------------------------
# Which bindings: every TensorRT the matrix names, where PyPI has bindings of its major.minor


def matrix_requirements() -> dict[str, str]:
    """TensorRT version the matrix names -> the bindings requirement for it on PyPI."""
    wanted = {pin.version: f"{pin.package}-bindings=={pin.version}"
              for pin in MATRIX.x86_tensorrt_pins}  # fmt: skip
    for release in MATRIX.releases.values():
        major, minor = release.tensorrt.split(".")[:2]
        name = (f"tensorrt-cu{release.cuda.split('.')[0]}-bindings" if int(major) >= 10
                else "tensorrt-bindings")  # fmt: skip
        wanted.setdefault(release.tensorrt, f"{name}=={major}.{minor}.*")
    return wanted


@pytest.fixture(scope="module")
def bindings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """requirement -> (unpacked wheel, stand-in libraries) for each that PyPI has."""
    found = {}
    for requirement in sorted({*matrix_requirements().values(), TENSORRT_11}):
        wheel = resolve(requirement)
        if wheel is None:
            continue
        where = unpacked(wheel)
        module = where / "tensorrt_bindings" / "tensorrt.so"
        missing = tensorrt_symbols(module) - standin_symbols()
        assert not missing, (
            f"{wheel['filename']} imports {sorted(missing)} from TensorRT's libraries: add them "
            f"to {STANDIN_SOURCE.name}"
        )
        libraries = standin_libraries(module, tmp_path_factory.mktemp("standin") / "lib")
        found[requirement] = (where, libraries)
    return found


def test_the_matrix_names_tensorrt_releases_pypi_has_bindings_for(bindings):
    """At least the x86 pin and the newest Jetson line's TensorRT are covered here."""
    requirements = matrix_requirements()
    assert requirements[MATRIX.x86_tensorrt.version] in bindings
    assert TENSORRT_11 in bindings


@pytest.mark.parametrize("python", ["3.10", "3.12", "3.13", "3.14"])
def test_each_x86_pin_has_bindings_wheels_for_the_pythons_it_is_pinned_for(python: str):
    """x86.tensorrt.pins against PyPI's real file lists: the pin for a Python has a wheel for
    it (10.16.1.11: cp38-cp313; 11.1.0.106 for 3.14), the 10.x pin has no cp314 wheel, and the
    newest 11.x (11.4) has one too."""
    pin = MATRIX.x86_tensorrt_for(python)
    wheel = resolve(f"{pin.package}-bindings=={pin.version}", python)
    assert wheel is not None and f"-cp{python.replace('.', '')}-" in wheel["filename"], pin
    if python == "3.14":
        assert resolve(f"tensorrt-cu13-bindings=={MATRIX.x86_tensorrt.version}", python) is None
        assert "-cp314-" in resolve(TENSORRT_11, python)["filename"]


def test_every_tensorrt_attribute_the_probes_use_exists_in_every_covered_release(bindings):
    required, optional = project_uses()
    # The extraction sees the uses it must (a regression of it would pass everything).
    assert {"NetworkDefinitionCreationFlag", "OnnxParser", "Builder.create_network",
            "ICudaEngine.get_tensor_name", "IExecutionContext.set_tensor_address",
            "Runtime.deserialize_cuda_engine"} <= required  # fmt: skip
    assert "NetworkDefinitionCreationFlag.EXPLICIT_BATCH" in optional
    missing = {}
    for requirement, (wheel_dir, libraries) in bindings.items():
        seen = inspect(wheel_dir, sorted(required), libraries)
        absent = sorted(path for path, there in seen["found"].items() if not there)
        if absent:
            missing[f"{requirement} ({seen['version']})"] = absent
    assert missing == {}


def torch2trt_source() -> str:
    """torch2trt/torch2trt.py at the matrix's pinned commit, checked against its sha256."""
    ref = MATRIX.torch2trt["ref"]
    cached = CACHE / "torch2trt" / ref / "torch2trt.py"
    if not cached.is_file():
        url = MATRIX.torch2trt["git"].removesuffix(".git") + f"/archive/{ref}.tar.gz"
        try:
            with urllib.request.urlopen(url, timeout=120) as response:
                data = response.read()
        except OSError as exc:
            pytest.skip(f"torch2trt's source at {ref[:12]} cannot be fetched ({exc}); put its "
                        f"torch2trt/torch2trt.py at {cached}")  # fmt: skip
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            member = archive.extractfile(f"torch2trt-{ref}/torch2trt/torch2trt.py")
            cached.parent.mkdir(parents=True, exist_ok=True)
            cached.write_bytes(member.read())
    text = cached.read_bytes()
    assert hashlib.sha256(text).hexdigest() == TORCH2TRT_SHA256, cached
    return text.decode()


def reached(statements: list[ast.stmt], taken: frozenset[str]) -> set[str]:
    """TensorRT chains ("BuilderFlag.FP16") every run through `statements` evaluates, where
    an `if NAME:` with NAME in `taken` is taken: an if's two branches share only what both
    reach; loops may not run."""
    found: set[str] = set()

    def chains_in(node: ast.AST) -> set[str]:
        out = set()
        for sub in ast.walk(node):
            parts = chain(sub) if isinstance(sub, ast.Attribute) else None
            if parts and parts[0] == "trt" and len(parts) > 2:
                out.add(".".join(parts[1:]))
        return out

    for statement in statements:
        if isinstance(statement, ast.If):
            found |= chains_in(statement.test)
            test = statement.test
            if isinstance(test, ast.Name) and test.id in taken:
                found |= reached(statement.body, taken)
            else:
                found |= reached(statement.body, taken) & reached(statement.orelse, taken)
        elif isinstance(statement, (ast.For, ast.While)):
            found |= chains_in(getattr(statement, "iter", None) or statement.test)
        elif isinstance(statement, (ast.With, ast.Try)):
            found |= reached(statement.body, taken)
        else:
            found |= chains_in(statement)
    return found


def test_torch2trt_needs_tensorrt_below_11_derived_from_its_source(bindings):
    tree = ast.parse(torch2trt_source())
    (function,) = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "torch2trt"]
    defaults = {".".join(c[1:]) for d in function.args.defaults
                if (c := chain(d)) and c[0] == "trt" and len(c) > 2}  # fmt: skip
    every = defaults | reached(function.body, frozenset())
    fp16 = every | reached(function.body, frozenset({"fp16_mode"}))
    absent = {}
    for wheel_dir, libraries in bindings.values():
        seen = inspect(wheel_dir, sorted(fp16), libraries)
        absent[seen["version"]] = {path for path, there in seen["found"].items() if not there}
    newest_10 = MATRIX.x86_tensorrt.version
    elevens = [version for version in absent if version.startswith("11.")]
    assert len(elevens) == 2, absent  # 3.14's pin (11.1) and PyPI's newest 11.x (11.4)
    eleven = max(elevens, key=lambda version: tuple(int(p) for p in version.split(".")))
    assert absent[newest_10] == set()
    assert "NetworkDefinitionCreationFlag.EXPLICIT_BATCH" in absent[eleven] & every
    assert "BuilderFlag.FP16" in absent[eleven] & fp16
    # The matrix says what the bindings say, for every release looked at.
    for version, missing in absent.items():
        assert MATRIX.converters.supports("torch2trt", version) == (not missing), version
    # The doctor's finding names what fails, from the same derivation.
    finding = BY_NAME["torch2trt"].run(facts_with_tensorrt(eleven))[0]
    for path in absent[eleven] & fp16:
        assert path.split(".")[-1] in finding.summary, (path, finding.summary)


def facts_with_tensorrt(version: str) -> Facts:
    platform = {"is_jetson": False, "machine": "x86_64", "python": {"executable": "python3"},
                "uid": 0, "unknown": {}}  # fmt: skip
    tensorrt = {"files": [], "loaded": {"name": "libnvinfer.so", "version": version}}
    results = {
        "platform": ProbeResult("platform", platform, None, 0.1),
        "tensorrt": ProbeResult("tensorrt", tensorrt, None, 0.1),
        "torch2trt": ProbeResult("torch2trt", {"installed": False}, None, 0.1),
    }
    described = {**platform, "compute_capability": "9.0", "l4t": None}
    return Facts(results, MATRIX, described)
