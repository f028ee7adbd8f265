"""pycuda: importable; where a GPU exists, a context and a float32 host <-> device round trip.

"explicit_context_dependent failed: invalid device context" means
no context is current (`import pycuda.autoinit`, or push one); "cuMemcpyHtoDAsync
failed: invalid argument" means a host array of the wrong dtype or size.
"""

from __future__ import annotations

from jetson_env.checks import Check
from jetson_env.checks.context import Facts, shell_word
from jetson_env.checks.gpu_visibility import HIDDEN_BY_THE_SESSION, what_hides_the_gpu
from jetson_env.findings import FAIL, OK, SKIP, WARN, Finding, Remedy

CONTEXT_HINT = (
    "pycuda needs a current context before allocating: `import pycuda.autoinit` "
    "(or `ctx = pycuda.driver.Device(0).make_context()` ... `ctx.pop()`)"
)


def remedy(facts: Facts) -> Remedy:
    """The pycuda role builds it where there is a CUDA toolkit to build against."""
    if facts.cuda_version is None:
        return Remedy(install_remedy(facts), why="pycuda builds against a CUDA toolkit, and "
                      "this host has none (see the cuda check)")  # fmt: skip
    return Remedy(install_remedy(facts), CHECK.role)


def install_remedy(facts: Facts) -> str:
    cuda = facts.data("cuda")
    root = facts.cuda_root
    python = facts.raw_platform.get("python", {}).get("version", "")
    version = f"pycuda=={facts.matrix.pycuda_for(python)}"
    env = []
    if not cuda.get("nvcc_on_path"):
        env.append(f"PATH={shell_word(root + '/bin')}:$PATH")
    if cuda.get("cuda_h_reachable") is False:
        env.append(f"CPATH={shell_word(root + '/include')}")
    return facts.pip_install(version, env=tuple(env))


def run(facts: Facts) -> list[Finding]:
    data = facts.data("pycuda")
    if not data.get("installed"):
        return [
            CHECK.finding(
                WARN,
                f"pycuda is not installed for {facts.python} (needed to run engines without torch)",
                remedy=CHECK.gpu_only(remedy(facts)),
            )
        ]
    if not data.get("importable"):
        return [
            CHECK.finding(FAIL, "pycuda does not import", [data.get("error") or ""],
                          remedy=remedy(facts))
        ]  # fmt: skip
    version = data.get("version") or "?"
    if data.get("device_count") is None:
        hidden = what_hides_the_gpu(facts)  # named before the driver is blamed, as torch's
        if hidden:
            return [
                CHECK.finding(
                    FAIL
                    if facts.is_jetson or (facts.platform and facts.platform["gpus"])
                    else WARN,
                    f"pycuda {version} imports, but {hidden[0]}: the CUDA driver sees no device",
                    [data.get("error") or ""],
                    remedy=Remedy(hidden[1], why=HIDDEN_BY_THE_SESSION),
                )
            ]
        return [
            CHECK.finding(
                FAIL if facts.is_jetson else WARN,
                f"pycuda {version} imports but the CUDA driver does not initialise",
                [data.get("error") or ""],
            )
        ]
    if not data["device_count"]:
        return [CHECK.finding(SKIP, f"pycuda {version} imports; no CUDA device to test on")]
    if data.get("gpu_work") is False:
        return [
            CHECK.finding(
                OK,
                f"pycuda {version} imports and sees {data['device_count']} device(s); "
                "its context and round trip run with the smoke",
            )
        ]
    without = data.get("without_context") or ""
    details = [f"without a context: {without}"]
    if "explicit_context_dependent" in without or "invalid device context" in without:
        details.append(
            'that is the "explicit_context_dependent failed: invalid device context" error: '
            + CONTEXT_HINT
        )
    if data.get("round_trip") is True:
        return [
            CHECK.finding(
                OK, f"pycuda {version}: context and float32 host<->device round trip", details
            )
        ]
    return [
        CHECK.finding(
            FAIL,
            f"pycuda {version}: context or round trip failed",
            [*details, data.get("error") or "the data came back different"],
            remedy=Remedy(CONTEXT_HINT, why="a change to the user's code", prose=True),
        )
    ]


CHECK = Check(
    name="pycuda",
    area="cuda",
    summary="pycuda imports; a context and a float32 host<->device round trip on the GPU",
    run=run,
)
