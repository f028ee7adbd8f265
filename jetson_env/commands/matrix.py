"""`jetson-env matrix`: the supported releases, one row with everything the playbook
installs for it (`--l4t`), or the releases left out (`--unsupported`).
"""

from __future__ import annotations

import argparse

from jetson_env import installed
from jetson_env.commands.options import json_output
from jetson_env.exit_codes import EXIT_OK, EXIT_USAGE
from jetson_env.matrix import Matrix, Release, normalize_l4t
from jetson_env.terminal import Terminal


def release_as_dict(release: Release, matrix: Matrix, assumed_from: str | None = None) -> dict:
    """A row and every artifact the playbook installs for it (docs/json.md)."""
    torch = release.torch
    family = matrix.raw["families"].get(release.family) or matrix.raw["x86"]
    cusparselt = release.cusparselt
    return {
        "l4t": release.l4t or None,
        "jetpack": release.jetpack or None,
        "family": release.family,
        "ubuntu": release.ubuntu or None,
        "cuda": release.cuda or None,
        "cudnn": release.cudnn or None,
        "tensorrt": release.tensorrt or None,
        "python": release.python or None,
        "torch": {
            "version": torch.version,
            "url": torch.url,
            "index": torch.index,
            "sha256": torch.sha256,
            "filename": torch.filename,
            "cuda": torch.cuda,
        },
        "torchvision": release.torchvision,
        "cusparselt": (
            {"version": cusparselt.version, "url": cusparselt.url, "sha256": cusparselt.sha256}
            if cusparselt
            else None
        ),
        "jetpack_packages": (
            {kind: list(names) for kind, names in release.jetpack_packages.items()}
            if release.jetpack_packages
            else None
        ),
        "prerequisites": {
            "apt": list(family["apt_prerequisites"]),
            "pip": list(family["pip_prerequisites"]),
            "numpy": family["numpy"],
        },
        "torch_cuda_arch_list": family.get("torch_cuda_arch_list"),
        "compute_capabilities": (
            {soc: matrix.socs[soc] for soc in family["socs"]} if "socs" in family else None
        ),
        "pycuda": matrix.pycuda_for(release.python),
        "torch2trt": dict(matrix.torch2trt),
        # The converters that work with its TensorRT and torch (x86: the default pip pin's), and
        # every TensorRT it can have with theirs (x86: per target Python).
        "converters": list(
            matrix.converters.for_host(
                release.tensorrt or matrix.x86_tensorrt.version,
                release.torch.version,
                jetson=bool(release.l4t),
                l4t=release.l4t or None,
            )
        ),
        # NVIDIA's way to Torch-TensorRT on this JetPack line with the row's torch (JetPack 6).
        "torch_tensorrt": torch_tensorrt_as_dict(matrix, release.l4t),
        # What torch.onnx.export needs for the ONNX converter (the tensorrt role installs it).
        "onnx_export_packages": list(family["onnx_export_packages"]),
        "tensorrt_options": (
            matrix.tensorrt_options(release) if release.l4t else matrix.x86_tensorrt_options()
        ),
        "tensorrt_pip": None if release.l4t else tensorrt_pip_as_dict(matrix),
        "assumed_from": assumed_from,
        "sources": [matrix.source_url(name) for name in release.sources],
    }


def torch_tensorrt_as_dict(matrix: Matrix, l4t: str) -> dict | None:
    build = matrix.converters.jetson_build(l4t) if l4t else None
    if build is None:
        return None
    return {"version": build.version, "obtained": build.obtained, "git": build.git,
            "branch": build.branch, "nvidia_newest": build.nvidia_newest,
            "sources": [matrix.source_url(name) for name in build.sources]}  # fmt: skip


def tensorrt_pip_as_dict(matrix: Matrix) -> dict:
    pinned = matrix.x86_tensorrt
    return {"package": pinned.package, "version": pinned.version,
            "supported": str(pinned.supported)}  # fmt: skip


def run(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
    if args.l4t is not None and not args.l4t.strip():
        term.error(
            "--l4t needs a release, e.g. R36.4.3",
            hint=f"`{installed.command('jetson-env matrix')}` lists them",
        )
        return EXIT_USAGE
    if args.unsupported:
        return show_unsupported(args, term, matrix)
    resolution = matrix.resolve(args.l4t) if args.l4t else None
    releases = [resolution.release] if resolution else list(matrix.releases.values())
    assumed_from = resolution.assumed_from if resolution else None
    if args.json:
        data = {
            "schema": 1,
            "releases": [release_as_dict(r, matrix, assumed_from) for r in releases],
        }
        if not args.l4t:
            data["x86"] = release_as_dict(matrix.x86, matrix)
            data["unsupported"] = matrix.unsupported_entries()
        term.json(data)
        return EXIT_OK
    rows = [
        (
            f"R{r.l4t}",
            r.jetpack,
            r.ubuntu,
            r.cuda,
            r.cudnn,
            r.tensorrt,
            r.python,
            r.torch.version,
            r.torchvision,
        )
        for r in releases
    ]
    if not args.l4t:
        x86 = matrix.x86
        rows.append(
            (
                "x86_64",
                "-",
                "-",
                "host",
                "host",
                f"{matrix.x86_tensorrt.version} (pip)",
                "host",
                x86.torch.version,
                x86.torchvision,
            )
        )
    term.table(
        ("L4T", "JetPack", "Ubuntu", "CUDA", "cuDNN", "TensorRT", "Python", "torch", "torchvision"),
        rows,
        title="Supported releases",
    )
    if args.l4t:
        release = releases[0]
        if assumed_from:
            term.line(
                f"R{normalize_l4t(args.l4t)} has no row of its own: R{assumed_from}'s, the"
                " newest of its line, applies"
            )
        data = release_as_dict(release, matrix)
        torch = release.torch
        term.line(f"torch source: {torch.url or torch.index or 'pip index'} (CUDA {torch.cuda})")
        term.line(f"sha256: {torch.sha256 or 'recorded on first download (lock file)'}")
        if release.cusparselt:
            term.line(f"cuSPARSELt {release.cusparselt.version}: {release.cusparselt.url}")
        for kind, names in (data["jetpack_packages"] or {}).items():
            term.line(f"JetPack apt packages ({kind}): {' '.join(names)}")
        prerequisites = data["prerequisites"]
        term.line(
            "prerequisites: apt " + (" ".join(prerequisites["apt"]) or "-")
            + ", pip " + (" ".join([*prerequisites["pip"], prerequisites["numpy"]]))
        )  # fmt: skip
        if data["onnx_export_packages"] and "onnx" in data["converters"]:
            term.line(
                "ONNX export (the tensorrt role's, for the ONNX converter): pip "
                + " ".join(data["onnx_export_packages"])
            )
        term.line(
            f"built from source: torchvision {release.torchvision}, pycuda {data['pycuda']},"
            f" torch2trt {data['torch2trt']['ref'][:12]}, for CUDA archs"
            f" {data['torch_cuda_arch_list']}"
        )
        term.line("sources: " + ", ".join(matrix.source_url(s) for s in release.sources))
    return EXIT_OK


def show_unsupported(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
    entries = matrix.unsupported_entries()
    if args.json:
        term.json({"schema": 1, "unsupported": entries})
        return EXIT_OK
    term.table(
        ("L4T", "JetPack", "Why it is not supported"),
        [(f"R{e['l4t']}", e["jetpack"] or "-", e["reason"]) for e in entries],
        title="Releases left out on purpose",
    )
    return EXIT_OK


def register(sub) -> None:
    """The `matrix` command's arguments, on the command line's subparsers."""
    matrix = sub.add_parser("matrix", help="the supported L4T releases and their versions")
    matrix.add_argument("--l4t", metavar="RELEASE", help="one release, e.g. R36.4.3")
    json_output(matrix)
    matrix.add_argument(
        "--unsupported", action="store_true", help="the releases left out on purpose, and why"
    )
    matrix.set_defaults(func=run)
