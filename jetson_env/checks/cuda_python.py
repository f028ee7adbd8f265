"""cuda-python: `cuda.bindings` imports; the driver's and the runtime's CUDA versions; where a GPU
exists and the smoke runs, a context and a host<->device round trip; and which of cuda-python
and pycuda this host's TensorRT Python samples import.

NVIDIA's TensorRT samples use cuda-python from 10.14 on (NVIDIA/TensorRT's CHANGELOG: "Replace
all pycuda usages with cuda-python APIs"); cuda-python needs Python 3.9 or newer, so JetPack 4
and 5 (Python 3.6, 3.8) stay on pycuda.
"""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from jetson_env.checks import Check
from jetson_env.checks.context import Facts
from jetson_env.checks.gpu_visibility import HIDDEN_BY_THE_SESSION, what_hides_the_gpu
from jetson_env.findings import FAIL, OK, SKIP, WARN, Finding, Remedy


def cuda_version(encoded: int | None) -> str | None:
    """13000 -> "13.0" (CUDA's MAJOR*1000 + MINOR*10)."""
    return None if encoded is None else f"{encoded // 1000}.{encoded % 1000 // 10}"


def requirement(facts: Facts) -> str | None:
    """cuda-python for this host's CUDA major (the matrix's rule, the pycuda role's too)."""
    return facts.matrix.cuda_python_for(facts.python_version, facts.cuda_version)


def python_allows(facts: Facts) -> bool:
    floor = SpecifierSet(facts.matrix.raw["packages"]["cuda_python"]["requires_python"])
    try:
        return Version(facts.python_version or "0") in floor
    except InvalidVersion:
        return False


def samples_need(data: dict) -> list[str]:
    """What the host's TensorRT samples import, one line each."""
    if not data.get("samples"):
        return ["no TensorRT Python samples on this host (/usr/src/tensorrt, a tarball's)"]
    lines = []
    for sample in data.get("samples") or []:
        uses = sample.get("uses")
        if uses is None:
            lines.append(f"{sample['path']}: not read ({sample.get('error')})")
        else:
            lines.append(
                f"this host's TensorRT samples need {' and '.join(uses) or 'neither'}"
                f" ({sample['path']})"
            )
    return lines


def remedy(facts: Facts) -> Remedy | None:
    """The pycuda role installs the cuda-python of the host's CUDA major; none without a CUDA
    (the cuda check's finding comes first)."""
    wanted = requirement(facts)
    return Remedy(facts.pip_install(wanted), CHECK.role) if wanted else None


def run(facts: Facts) -> list[Finding]:
    data = facts.data("cuda_python")
    need = samples_need(data)
    if not python_allows(facts):
        floor = facts.matrix.raw["packages"]["cuda_python"]["requires_python"]
        return [
            CHECK.finding(
                SKIP,
                f"cuda-python needs Python {floor}; {facts.python} is {facts.python_version}:"
                " pycuda runs engines here",
                need,
            )
        ]
    if not data.get("installed"):
        return [
            CHECK.finding(
                WARN,
                f"cuda-python is not installed for {facts.python} (NVIDIA's TensorRT samples"
                " use it from TensorRT 10.14 on)",
                need,
                remedy=CHECK.gpu_only(remedy(facts)),
            )
        ]
    version = data.get("version") or data.get("cuda_python") or "?"
    if not data.get("bindings"):
        return [
            CHECK.finding(
                FAIL,
                f"cuda-python {version} has no cuda.bindings (before 12.6 it was `from cuda"
                " import cuda, cudart`): TensorRT's samples import cuda.bindings",
                need,
                remedy=remedy(facts),
            )
        ]
    if not data.get("importable"):
        return [
            CHECK.finding(
                FAIL, "cuda.bindings does not import", [data.get("error") or "", *need],
                remedy=remedy(facts),
            )
        ]  # fmt: skip
    versions = (
        f"driver CUDA {cuda_version(data.get('driver_version'))}, "
        f"runtime CUDA {cuda_version(data.get('runtime_version'))}"
    )
    hidden = what_hides_the_gpu(facts) if not data.get("device_count") else None
    if hidden:
        what, show = hidden
        return [
            CHECK.finding(
                FAIL if facts.is_jetson or (facts.platform and facts.platform["gpus"]) else WARN,
                f"cuda.bindings {version} imports, but {what}: the CUDA driver sees no device",
                [data.get("error") or "", *need],
                remedy=Remedy(show, why=HIDDEN_BY_THE_SESSION),
            )
        ]
    if data.get("device_count") is None:
        return [
            CHECK.finding(
                FAIL if facts.is_jetson else WARN,
                f"cuda.bindings {version} imports but the CUDA driver does not initialise",
                [data.get("error") or "", *need],
            )
        ]
    if not data["device_count"]:
        return [CHECK.finding(SKIP, f"cuda.bindings {version} ({versions}); no CUDA device",
                              need)]  # fmt: skip
    if data.get("gpu_work") is False:
        return [
            CHECK.finding(
                OK,
                f"cuda.bindings {version} ({versions}) sees {data['device_count']} device(s);"
                " its context and round trip run with the smoke",
                need,
            )
        ]
    if data.get("round_trip") is True:
        return [
            CHECK.finding(
                OK,
                f"cuda.bindings {version} ({versions}): context and float32 host<->device"
                " round trip",
                need,
            )
        ]
    return [
        CHECK.finding(
            FAIL,
            f"cuda.bindings {version} ({versions}): context or round trip failed",
            [data.get("error") or "the data came back different", *need],
        )
    ]


CHECK = Check(
    name="cuda-python",
    area="cuda",
    summary="cuda.bindings imports, driver and runtime versions, a context and a float32 "
    "host<->device round trip; which of cuda-python and pycuda the TensorRT samples need",
    run=run,
)
