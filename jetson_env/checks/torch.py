"""torch: version, built with CUDA, CUDA available, a kernel the device runs among its own.

"no kernel image is available for execution on the device" (CUDA error 209, 48 before
CUDA 10.1) is a torch built without a kernel the device runs: which one runs is
jetson_env.device_code's rule, the kernels check's (a JetPack 6 Orin runs sm_87, not
sm_80, of PyPI's aarch64 torch). "libcusparseLt.so.0: cannot open shared object
file" is one of NVIDIA's 24.06+ Jetson wheels on a JetPack without cuSPARSELt.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import asdict

from jetson_env import device_code, roles
from jetson_env.checks import Check
from jetson_env.checks.context import Facts
from jetson_env.checks.gpu_visibility import HIDDEN_BY_THE_SESSION, what_hides_the_gpu
from jetson_env.findings import FAIL, OK, WARN, Finding, Remedy
from jetson_env.provisioning import torch_source


def install_remedy(facts: Facts) -> str:
    """torch from where the playbook's torch role takes it (provisioning.torch_source)."""
    source = torch_source(asdict(facts.profile.torch))
    if source["kind"] == "url":
        wanted = facts.profile.python  # NVIDIA's wheels are built for JetPack's own Python
        running = ".".join(facts.raw_platform.get("python", {}).get("version", "").split(".")[:2])
        if wanted and running and wanted != running:
            return (
                f"NVIDIA's torch wheel for this L4T is for Python {wanted}, not {running}: "
                f"python{wanted} -m pip install {source['url']}"
            )
        return facts.pip_install(source["url"])
    requirement = f"torch=={source['version']}"
    if source["index"]:
        return facts.pip_install(requirement, extra=f"--index-url {source['index']}")
    return facts.pip_install(requirement)


MISSING_LIBRARY = re.compile(r"(lib[\w.+-]+?\.so[\w.]*): cannot open shared object file")


KEPT_WITHOUT_GPU = (
    "without a GPU a CPU torch works as well as any: the torch role keeps it "
    "(torch_replace_working=true replaces it)"
)


def missing_library_remedy(facts: Facts, library: str) -> str | Remedy:
    """Install what ships `library`: cuSPARSELt as the torch role does, CUDA and cuDNN
    from JetPack's packages, anything else by reinstalling torch."""
    cusparselt = facts.release.cusparselt if facts.release else None
    if library.startswith("libcusparseLt") and cusparselt:
        archive = cusparselt.url.rsplit("/", 1)[1]
        folder = shlex.quote(f"{roles.default('torch', 'cusparselt_prefix')}-{cusparselt.version}")
        conf = shlex.quote(roles.default("torch", "cusparselt_ld_conf"))
        return Remedy(" && ".join([
            f"curl -fsSLO {shlex.quote(cusparselt.url)}",
            facts.sudo(f"mkdir -p {folder}"),
            facts.sudo(f"tar -xJf {shlex.quote(archive)} -C {folder} --strip-components=1"),
            f"echo {folder}/lib | " + facts.sudo(f"tee {conf}"),
            facts.sudo("ldconfig"),
        ]), "torch")  # fmt: skip
    if facts.is_jetson and library.startswith(("libcu", "libnv")):
        return facts.jetpack_install()
    return install_remedy(facts)


def kernel_for(
    arch_list: list[str], capability: str, is_jetson: bool, jetson_cuda: str | None
) -> device_code.Verdict:
    """What a GPU of `capability` does with torch.cuda.get_arch_list(), by device_code's rule
    (the kernels check's): its sm_XY are SASS, its compute_XY PTX of an ISA the list does not
    name, so not held against the driver. jetson_cuda: the Jetson's CUDA release."""
    sass = [name for name in arch_list if name.startswith("sm_")]
    ptx = [{"arch": name} for name in arch_list if name.startswith("compute_")]
    return device_code.judge(sass, ptx, capability, is_jetson, jetson_cuda, None)


def run(facts: Facts) -> list[Finding]:
    data = facts.data("torch").get("torch", {})
    if not data.get("installed"):
        return [
            CHECK.finding(
                FAIL,
                f"torch is not installed for {facts.python}",
                remedy=CHECK.gpu_only(install_remedy(facts)),
            )
        ]
    if not data.get("importable"):
        error = data.get("error") or ""
        torch = " ".join(filter(None, ("torch", data.get("version"))))  # no blank version
        missing = MISSING_LIBRARY.search(error)
        if missing:
            return [
                CHECK.finding(
                    FAIL,
                    f"{torch} does not import: {missing.group(1)} is missing",
                    [error],
                    remedy=missing_library_remedy(facts, missing.group(1)),
                )
            ]
        return [
            CHECK.finding(
                FAIL,
                f"{torch} does not import",
                [error],
                remedy=install_remedy(facts),
            )
        ]
    version = data["version"]
    wanted = facts.profile.torch.version
    details = [data.get("file") or "", f"the matrix's torch for this platform: {wanted}"]
    has_gpu = facts.is_jetson or bool(facts.platform and facts.platform["gpus"])
    if not data.get("cuda_build"):
        return [
            CHECK.finding(
                FAIL if has_gpu else WARN,
                f"torch {version} is a CPU-only build: nothing can run on a GPU"
                + ("" if has_gpu else " (there is no GPU here either)"),
                details,
                remedy=install_remedy(facts)
                if has_gpu
                else Remedy(install_remedy(facts), why=KEPT_WITHOUT_GPU),
            )
        ]
    summary = f"torch {version}, built with CUDA {data['cuda_build']}"
    if not data.get("cuda_available"):
        hidden = what_hides_the_gpu(facts)
        remedy = (
            Remedy(hidden[1], why=HIDDEN_BY_THE_SESSION)
            if hidden
            else Remedy(
                "check the driver (`nvidia-smi`, or on Jetson that the user is in the "
                "video group: " + facts.sudo("usermod -aG video $USER") + ")",
                why="the GPU driver and the user's groups are the host's, not a role's",
                prose=True,
            )
        )
        return [
            CHECK.finding(
                FAIL if has_gpu else WARN,
                f"{summary}, but {f'{hidden[0]}: ' if hidden else ''}"
                "torch.cuda.is_available() is False",
                [*details, data.get("error") or "no CUDA device visible to torch"],
                remedy=remedy,
            )
        ]
    devices = data.get("devices") or []
    capability = devices[0]["compute_capability"] if devices else facts.compute_capability
    arch_list = data.get("arch_list") or []
    details.append("kernels: " + " ".join(arch_list))
    if not capability:
        return [CHECK.finding(OK, summary, details)]
    jetson_cuda = facts.release.cuda if facts.release else None
    verdict = kernel_for(arch_list, capability, facts.is_jetson, jetson_cuda)
    device = devices[0]["name"] if devices else "the GPU"
    if verdict.state == device_code.RUNS:
        return [CHECK.finding(OK, f"{summary}, runs on {device} ({verdict.image})", details)]
    if verdict.state == device_code.JIT:
        status = WARN
        said = (
            f"runs on {device} only after the driver compiles its PTX ({verdict.image}, first load)"
        )
    else:
        status = FAIL
        said = (
            f"but it has no kernel for compute capability {capability}: "
            f'"{device_code.NO_KERNEL_ERROR}"'
        )
    return [
        CHECK.finding(
            status, f"{summary}, {said}", [*details, verdict.why], remedy=install_remedy(facts)
        )
    ]


CHECK = Check(
    name="torch",
    area="pytorch",
    summary="torch imports, built with CUDA, CUDA available, kernels for this GPU",
    run=run,
)
