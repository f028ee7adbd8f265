"""Platform: model, L4T, JetPack, compute capability; an unknown L4T names the supported ones."""

from __future__ import annotations

from jetson_env import installed
from jetson_env.checks import Check
from jetson_env.checks.context import Facts
from jetson_env.findings import FAIL, OK, WARN, Finding, Remedy
from jetson_env.matrix import UnknownRelease
from jetson_env.provisioning import ALLOW_NEWER_POINT_RELEASE

MANUAL = (
    "the GPU driver, the board's L4T release (flashed with NVIDIA's SDK Manager) and "
    "jetson-env itself are not the playbook's to change"
)


def run(facts: Facts) -> list[Finding]:
    p = facts.platform
    if p is None:
        return [CHECK.finding(FAIL, "the platform probe returned nothing")]
    unknown = p["unknown"]
    python = f"Python {p['python']['version']} ({p['python']['executable']})"
    os_name = p["os"]["pretty_name"] or "unknown OS"
    if not p["is_jetson"]:
        gpus = ", ".join(f"{g['name']} (sm {g['compute_capability']})" for g in p["gpus"])
        details = [f"{p['machine']}, {os_name}", python]
        if not facts.without_gpu:
            return [CHECK.finding(OK, f"x86 host with {gpus}", details)]
        details.append(f"nvidia-smi: {unknown.get('gpus', 'no GPU listed')}")
        return [
            CHECK.finding(
                WARN,
                f"{p['machine']} host without an NVIDIA GPU: TensorRT cannot build engines here",
                details,
                remedy=Remedy(
                    "install the NVIDIA driver so that `nvidia-smi` lists the GPU "
                    "(https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/)",
                    why=MANUAL,
                    prose=True,
                ),
            )
        ]
    model = p["model"] or f"unknown model ({unknown.get('model', 'n/a')})"
    details = [
        f"SoC {p['soc'] or 'unknown'}, compute capability {p['compute_capability'] or 'unknown'}",
        f"{os_name}, {python}",
    ]
    if p["l4t"] is None:
        return [
            CHECK.finding(
                FAIL,
                f"{model}: L4T release unknown",
                [*details, unknown.get("l4t", "")],
                remedy=Remedy(
                    facts.sudo("apt-get install --reinstall -y nvidia-l4t-core"),
                    why=MANUAL,
                    note="restores /etc/nv_tegra_release from the L4T package",
                ),
            )
        ]
    try:
        resolution = facts.matrix.resolve(p["l4t"])
    except UnknownRelease as exc:
        return [
            CHECK.finding(
                FAIL,
                f"{model}: L4T R{p['l4t']} is not supported",
                [*details, str(exc)],
                remedy=Remedy(
                    f"flash a supported JetPack (`{installed.command('jetson-env matrix')}` "
                    "lists them) with NVIDIA SDK Manager",
                    why=MANUAL,
                    prose=True,
                ),
            )
        ]
    release = resolution.release
    if resolution.assumed:
        return [
            CHECK.finding(
                WARN,
                f"{model}: L4T R{p['l4t']} has no row in the matrix; checked against "
                f"R{release.l4t}'s (JetPack {release.jetpack}), the newest of its line",
                [
                    *details,
                    f"JetPack {release.jetpack} ships CUDA {release.cuda}, cuDNN {release.cudnn}, "
                    f"TensorRT {release.tensorrt}, Python {release.python}",
                ],
                remedy=Remedy(
                    installed.install_line("--upgrade", installed.requirement(None)),
                    why=MANUAL,
                    note="a newer matrix may list this release; the playbook "
                    f"provisions it with R{release.l4t}'s row only with "
                    f"-e {ALLOW_NEWER_POINT_RELEASE}=true",
                ),
            )
        ]
    summary = (
        f"{model}, L4T R{p['l4t']} (JetPack {release.jetpack}), "
        f"compute capability {p['compute_capability'] or 'unknown'}"
    )
    details.append(
        f"JetPack {release.jetpack} ships CUDA {release.cuda}, cuDNN {release.cudnn}, "
        f"TensorRT {release.tensorrt}, Python {release.python}"
    )
    if p["compute_capability"] is None:
        return [CHECK.finding(WARN, summary, [*details, unknown.get("compute_capability", "")])]
    return [CHECK.finding(OK, summary, details)]


CHECK = Check(
    name="platform",
    area="platform",
    summary="model, L4T, JetPack, compute capability; the L4T release is in the matrix",
    run=run,
    manual=MANUAL,
)
