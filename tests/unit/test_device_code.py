"""The kernels probe and the kernels and libraries checks on real device code: shared objects
nvcc compiles here (one per -gencode choice), NVIDIA's nvjpeg wheel, and libraries the loader
finds through $ORIGIN, through LD_LIBRARY_PATH, or nowhere; cuobjdump (NVIDIA's wheel) and
the loader itself (ctypes.CDLL) are the oracles."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from support import device_code
from support.pythons import pyenv_version, required

from jetson_env.checks import BY_NAME
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, SKIP, WARN
from jetson_env.matrix import load
from jetson_env.plan import judgement
from jetson_env.probes._prelude import LISTING_LIMIT
from jetson_env.probing import ProbeResult, run_probes
from jetson_env.targets import LocalTarget

MATRIX = load()
PYTHON36 = pyenv_version("3.6.15") / "bin" / "python3.6"
DOCS = Path(__file__).parents[2] / "docs"


@pytest.fixture(scope="session")
def objects(tmp_path_factory) -> dict:
    """The test objects, built once: {"kernels": {name: path}, "loader": {case: path},
    "side": the folder only LD_LIBRARY_PATH names, "root": where they are}."""
    root = tmp_path_factory.mktemp("device-code")
    return {
        "kernels": device_code.build_kernels(root / "kernels"),
        "loader": device_code.build_loader_cases(root / "loader", root / "side"),
        "side": root / "side",
        "nvjpeg": device_code.wheel("nvjpeg"),
        "root": root,
    }


@pytest.fixture(scope="module", params=[sys.executable, str(PYTHON36)], ids=["this", "py3.6"])
def venv(request, objects, tmp_path_factory) -> Path:
    if request.param == str(PYTHON36):
        required("3.6.15")
    return device_code.make_venv(
        Path(request.param), tmp_path_factory.mktemp("venv") / "v", objects
    )


def probe(python: Path, env: dict | None = None) -> dict:
    target = LocalTarget(str(python), env={**os.environ, **(env or {})})
    result = run_probes(target, ["kernels"], {"kernels": 120})["kernels"]
    assert result.ok, (result.error, result.stderr)
    return result.data


def by_package(data: dict) -> dict:
    return {package["name"]: package for package in data["packages"]}


def test_the_probe_reads_what_cuobjdump_lists(venv):
    """Each nvcc-built object and NVIDIA's nvjpeg: the SASS and PTX architectures equal
    cuobjdump's listing of the same file, and the PTX version equals the `.version` line
    of the PTX itself (cuobjdump -ptx)."""
    packages = by_package(probe(venv))
    files = [
        entry
        for name, package in packages.items()
        if name.startswith(("cudakernels-", "nvidia-nvjpeg"))
        for entry in package["files"]
    ]
    assert len(files) == len(device_code.KERNEL_OBJECTS) + 1
    for entry in files:
        assert entry["fatbin_unread"] == 0  # every container walked, to the section's end
        sass, ptx = device_code.oracle(Path(entry["path"]))
        assert (entry["sass"], [p["arch"] for p in entry["ptx"]]) == (sass, ptx), entry["path"]
        if ptx:
            listing = subprocess.run(
                [str(device_code.cuobjdump()), "-ptx", entry["path"]],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            versions = {
                line.split()[1] for line in listing.splitlines() if line.startswith(".version")
            }
            assert {p["version"] for p in entry["ptx"]} == versions
    nvjpeg = packages["nvidia-nvjpeg-cu12"]["files"][0]
    assert "sm_87" not in nvjpeg["sass"] and "sm_86" in nvjpeg["sass"]  # what Orin meets


def loads(path: Path, env: dict | None = None) -> str:
    """What the real loader says of dlopen(path): 'ok' or its error."""
    code = (
        "import ctypes, sys\n"
        "try:\n ctypes.CDLL(sys.argv[1]); print('ok')\n"
        "except OSError as e:\n print(e)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=True,
    )
    return done.stdout.strip()


CASES = {
    "missing": "libjetsonenv_gone.so",
    "origin": "libjetsonenv_origin.so",
    "ldpath": "libjetsonenv_ldpath.so",
    "far": "libjetsonenv_gone.so",  # its name half a MB into .dynstr
}


@pytest.mark.parametrize("ld_library_path", [False, True], ids=["plain", "LD_LIBRARY_PATH"])
def test_the_loader_verdict_is_what_the_loader_does(venv, objects, ld_library_path):
    """Each need the probe finds or not, as dlopen() of the same file finds it or not (and
    says it: "LIB: cannot open shared object file: No such file or directory")."""
    env = {"LD_LIBRARY_PATH": str(objects["side"]) if ld_library_path else ""}
    demo = by_package(probe(venv, env))["loaderdemo"]
    found = {Path(e["path"]).name: e["needs"] for e in demo["files"]}
    hows = {}
    for case, library in CASES.items():
        where = found[f"libneeds_{case}.so"][library]
        said = loads(Path(demo["location"]) / "loaderdemo" / f"libneeds_{case}.so", env)
        if said == "ok":
            assert where["path"] and Path(where["path"]).name == library
        else:
            assert said == f"{library}: cannot open shared object file: No such file or directory"
            assert where == {"path": None, "how": None}
        hows[case] = where["how"]
    assert hows == {
        "missing": None,
        "origin": "runpath",
        "ldpath": "LD_LIBRARY_PATH" if ld_library_path else None,
        "far": None,
    }
    assert set(found["libneeds_far.so"]) == {"libjetsonenv_gone.so"}


@pytest.fixture(scope="module")
def probed(objects, tmp_path_factory) -> dict:
    """The probe's facts of a venv of this Python holding every test object."""
    return probe(
        device_code.make_venv(Path(sys.executable), tmp_path_factory.mktemp("venv") / "v", objects)
    )


def platform(capability: str, l4t: str | None = None) -> dict:
    gpus = [] if l4t else [{"name": "a GPU", "compute_capability": capability}]
    return {
        "is_jetson": bool(l4t),
        "machine": "aarch64" if l4t else "x86_64",
        "l4t": l4t,
        "l4t_source": None,
        "board": None,
        "model": None,
        "soc": None,
        "gpus": gpus,
        "os": {"id": "ubuntu"},
        "python": {"version": "3.12.3", "executable": "/v/bin/python"},
        "uid": 0,
        "unknown": {},
        "compute_capability": capability,
    }


def facts_for(probed: dict, capability: str, l4t: str | None, driver: str | None) -> Facts:
    data = platform(capability, l4t)
    results = {
        "platform": ProbeResult("platform", data, None, 0.1),
        "kernels": ProbeResult("kernels", {**probed, "driver": driver}, None, 0.1),
    }
    return Facts(results, MATRIX, data)


def statuses(findings) -> dict:
    """package -> status: the ok ones are listed in the first finding's details."""
    found = {}
    for finding in findings:
        if finding.status == OK:
            found.update({label.split()[0]: OK for label in finding.details})
        else:
            found[finding.summary.split()[0].rstrip("'s")] = finding.status
    return found


R = OK
J = WARN  # runs after a JIT
N = FAIL  # no kernel (or PTX newer than the driver)
OBJECTS = ("sm87", "sm80", "ptx80", "sm87_ptx87", "sm110", "sm90a", "sm80_sm90", "nvjpeg")
# GPU: (capability, L4T, the driver's CUDA) -> what each object does there
VERDICTS = {
    # JetPack 6 Orin: SASS of 8.7 only (no minor compatibility on Tegra, jax-ml/jax #40492);
    # PTX ISA 9.0 (nvcc 13.0's) needs CUDA 13.0's driver: CUDA 12.6's cannot JIT it
    "orin-jetpack6": (("8.7", "36.4.3", None), (R, N, N, R, N, N, N, N)),
    # JetPack 7.2 Orin (CUDA 13.2): SBSA binaries run (pytorch/pytorch #186285): sm_80, sm_86
    "orin-jetpack7.2": (("8.7", "39.2.0", None), (R, R, J, R, N, N, R, R)),
    # H100, driver 13.0: sm_90a and sm_90 run; 8.x PTX JITs; 8.x SASS does not (another major)
    "h100": (("9.0", None, "13.0"), (N, N, J, J, N, R, R, R)),
    # RTX 3090 (8.6) on a CUDA 12.6 driver: sm_80 runs (minor compatibility), PTX 9.0 cannot
    "rtx3090-driver12.6": (("8.6", None, "12.6"), (N, R, N, N, N, N, R, R)),
    # Thor (11.0, JetPack 7.0, CUDA 13.0): sm_110; nvjpeg's cu12 wheel has sm_101, not sm_110
    "thor": (("11.0", "38.2.0", None), (N, N, J, J, R, N, N, N)),
}


@pytest.mark.parametrize("gpu", sorted(VERDICTS))
def test_each_package_is_judged_for_the_gpu(probed, gpu):
    (capability, l4t, driver), expected = VERDICTS[gpu]
    findings = BY_NAME["kernels"].run(facts_for(probed, capability, l4t, driver))
    got = statuses(findings)
    names = {f"cudakernels-{name.replace('_', '-')}": name for name in OBJECTS}
    names["nvidia-nvjpeg-cu12"] = "nvjpeg"
    assert {names[k]: v for k, v in got.items() if k in names} == dict(
        zip(OBJECTS, expected, strict=True)
    )
    for finding in findings:
        if finding.status == FAIL:
            assert finding.remedy is not None
            assert any(
                "no kernel image is available" in d or "unsupported toolchain" in d
                for d in finding.details
            )


def test_a_jetpack6_orin_is_told_why_sm80_does_not_run(probed):
    findings = BY_NAME["kernels"].run(facts_for(probed, "8.7", "36.4.3", None))
    (sm80,) = [f for f in findings if f.summary.startswith("cudakernels-sm80 ")]
    assert sm80.summary == "cudakernels-sm80 1.0 has no kernel for compute capability 8.7"
    assert "a Jetson runs only SASS of its exact compute capability" in sm80.details[0]
    assert "sm_87" in sm80.remedy.shell and "JetPack 6.2" in sm80.remedy.shell


def test_without_a_gpu_the_kernels_check_skips(probed):
    data = {**platform("8.7"), "compute_capability": None, "gpus": []}
    results = {
        "platform": ProbeResult("platform", data, None, 0.1),
        "kernels": ProbeResult("kernels", probed, None, 0.1),
    }
    (finding,) = BY_NAME["kernels"].run(Facts(results, MATRIX, data))
    assert finding.status == SKIP


def test_doctor_libraries_names_the_missing_library_and_its_package(objects, tmp_path):
    """As a user runs it: `jetson-env doctor --python VENV/bin/python --check libraries
    --json` from another folder; the report valid against docs/doctor-report.schema.json."""
    python = device_code.make_venv(Path(sys.executable), tmp_path / "v", objects)
    env = {**os.environ, "LD_LIBRARY_PATH": ""}
    argv = [sys.executable, "-m", "jetson_env.cli", "doctor", "--python", str(python),
            "--check", "libraries", "--json"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env)
    report = json.loads(done.stdout)
    jsonschema.validate(report, json.loads((DOCS / "doctor-report.schema.json").read_text()))
    assert done.returncode == 1, done.stderr
    failing = {f["summary"] for f in report["findings"] if f["status"] == "fail"}
    assert failing == {
        "loaderdemo 1.0: libjetsonenv_gone.so is not found by the loader",
        "loaderdemo 1.0: libjetsonenv_ldpath.so is not found by the loader",
    }
    env["LD_LIBRARY_PATH"] = str(objects["side"])
    again = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env)
    failing = {f["summary"] for f in json.loads(again.stdout)["findings"] if f["status"] == "fail"}
    assert failing == {"loaderdemo 1.0: libjetsonenv_gone.so is not found by the loader"}


ORIN_R36 = {
    **platform("8.7", "36.4.3"), "machine": "aarch64", "board": "t234ref", "soc": "tegra234",
    "model": "NVIDIA Jetson AGX Orin Developer Kit",
    "os": {"id": "ubuntu", "version_id": "22.04", "version_codename": "jammy",
           "pretty_name": "Ubuntu 22.04.5 LTS"},
    "python": {"version": "3.10.12", "executable": "/usr/bin/python3"},
}  # fmt: skip


@pytest.mark.parametrize(
    "to, expected",
    [
        # JetPack 7.2's CUDA 13.2: sm_80 and nvjpeg's sm_86 run on the Orin, PTX 9.0 JITs
        ("R39.2.0", {"sm87": ("runs", "runs", "survives"),
                     "sm80": ("no-kernel", "runs", "survives"),
                     "ptx80": ("ptx-too-new", "jit", "survives"),
                     "sm110": ("no-kernel", "no-kernel", "rebuild"),
                     "nvjpeg": ("no-kernel", "runs", "survives")}),
        # within JetPack 6: still only sm_87 (no minor compatibility on Tegra before 13.2)
        ("R36.5.0", {"sm87": ("runs", "runs", "survives"),
                     "sm80": ("no-kernel", "no-kernel", "rebuild"),
                     "ptx80": ("ptx-too-new", "ptx-too-new", "rebuild"),
                     "sm110": ("no-kernel", "no-kernel", "rebuild"),
                     "nvjpeg": ("no-kernel", "no-kernel", "rebuild")}),
    ],
)  # fmt: skip
def test_the_plan_says_which_packages_keep_lose_or_gain_kernels(probed, to, expected):
    """`plan --to`'s judgement with the kernels probe's facts of a JetPack 6 Orin."""
    target = judgement.target_release(MATRIX, to)
    current, kind = judgement.move(MATRIX, ORIN_R36, target)
    facts = {"kernels": {**probed, "driver": None}}
    parts = judgement.judge(MATRIX, ORIN_R36, facts, current, target, kind)
    found = {}
    for part in parts:
        if part.kind == "kernels":
            short = part.name.removeprefix("cudakernels-")
            short = "nvjpeg" if short == "nvidia-nvjpeg-cu12" else short
            found[short] = (part.now.split(": ")[1], part.after, part.verdict)
    assert {name: found[name] for name in expected} == expected


TORCH_RECORD_BYTES = 1_468_285  # torch 2.13.0+cpu's installed RECORD: 14,623 files


@pytest.mark.parametrize("python", [sys.executable, str(PYTHON36)], ids=["this", "py3.6"])
def test_a_record_the_size_of_torchs_is_read(objects, tmp_path, python):
    """A distribution whose RECORD is as long as torch's (past 1 MiB, the compiled probe's
    former bound): both probes read its shared object (libneeds_missing.so: sm_87, and a
    library that is nowhere), as `plan` (compiled) and the kernels check need it; one of 4 GiB
    (sparse) is named as not read by both."""
    if python == str(PYTHON36):
        required("3.6.15")
    site = tmp_path / "site"
    folder = site / "bigrecord"
    folder.mkdir(parents=True)
    shutil.copy2(objects["loader"]["missing"], folder / "libneeds_missing.so")
    device_code.add_distribution(site, "bigrecord", "2.13.0", [folder / "libneeds_missing.so"])
    record = next(site.glob("bigrecord-*.dist-info")) / "RECORD"
    header = "bigrecord/include/ATen/ops/_op_{:05d}_native.h,sha256=" + "x" * 43 + ",1234\n"
    lines = [header.format(i) for i in range(TORCH_RECORD_BYTES // len(header.format(0)) + 1)]
    with record.open("a") as handle:
        handle.writelines(lines)
    assert record.stat().st_size > TORCH_RECORD_BYTES > 1 << 20
    past = site / "pastbounds-1.0.dist-info"  # and one past the bounds: named, not read
    past.mkdir()
    with open(past / "RECORD", "wb") as handle:
        handle.truncate(4 << 30)
    target = LocalTarget(python, env={**os.environ, "PYTHONPATH": str(site)})
    results = run_probes(target, ["compiled", "kernels"], {"compiled": 60, "kernels": 60})
    assert results["compiled"].ok and results["kernels"].ok, results
    native = {d["name"]: d for d in results["compiled"].data["distributions"]}
    assert native["bigrecord"]["needs"] == sorted(native["bigrecord"]["needs"])
    assert "libjetsonenv_gone.so" in native["bigrecord"]["needs"]
    assert not [p for p in results["compiled"].data["problems"] if "bigrecord" in p]
    too_large = f"[Errno 27] larger than {LISTING_LIMIT} bytes (not read)"
    assert results["compiled"].data["unread"] == [{"path": str(past), "error": too_large}]
    assert results["kernels"].data["unread"] == [f"{past}: {too_large}"]
    (entry,) = by_package(results["kernels"].data)["bigrecord"]["files"]
    assert entry["sass"] == ["sm_87"]
    assert entry["needs"]["libjetsonenv_gone.so"] == {"path": None, "how": None}


def test_a_package_torch_requires_without_a_kernel_warns_as_the_bundle_ships_it(
    objects, tmp_path_factory
):
    """On a Thor, PyPI's aarch64 torch 2.14.1 runs (sm_110) while nvidia-nvshmem-cu13 3.4.5,
    which it requires, carries no sm_110: the bundle ships it with that verdict
    (bundle/judging.py), and the doctor warns: only what launches its kernels fails. A package
    torch requires only under an extra, or not at all, still fails."""
    python = device_code.make_venv(
        Path(sys.executable), tmp_path_factory.mktemp("venv") / "v", objects
    )
    site = python.parent.parent / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = site / "site-packages"
    folder = site / "torch"
    folder.mkdir()
    shutil.copy2(objects["kernels"]["sm110"], folder / "libtorch_cuda.so")
    requires = (
        "nvidia-nvjpeg-cu12==12.9.1",
        "cudakernels_sm80>=1",
        'cudakernels-sm90a; extra == "x"',
    )
    device_code.add_distribution(site, "torch", "2.14.1", [folder / "libtorch_cuda.so"], requires)
    findings = BY_NAME["kernels"].run(facts_for(probe(python), "11.0", "38.2.0", None))
    got = statuses(findings)
    assert got["torch"] == OK
    assert (got["nvidia-nvjpeg-cu12"], got["cudakernels-sm80"]) == (WARN, WARN)
    assert got["cudakernels-sm90a"] == got["cudakernels-sm87"] == FAIL
    (nvjpeg,) = [f for f in findings if f.summary.startswith("nvidia-nvjpeg-cu12 ")]
    assert nvjpeg.summary.endswith(
        "has no kernel for compute capability 11.0: torch requires it, and only what launches "
        "its kernels fails"
    )
