"""`jetson-env images`: the container images: list, the tag for this host, build one."""

from __future__ import annotations

import argparse
from pathlib import Path

from jetson_env import images as images_mod
from jetson_env import installed, target_python
from jetson_env.commands.info import gather
from jetson_env.commands.options import json_output, python_option
from jetson_env.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from jetson_env.matrix import Matrix, UnknownRelease, normalize_l4t
from jetson_env.sizes import size
from jetson_env.targets import LocalTarget
from jetson_env.terminal import Terminal


def run(args: argparse.Namespace, term: Terminal, matrix: Matrix) -> int:
    repo = args.repository
    if args.images_command == "list":
        rows = [images_mod.describe(image, matrix, repo) for image in matrix.images]
        if args.json:
            term.json({"schema": 1, "images": rows})
        else:
            term.table(
                ("Tag", "Runs on host L4T", "Base", "CUDA", "TensorRT", "Python", "torch",
                 "torchvision", "Builds"),
                [(r["tag"], r["hosts"], r["base"], r["cuda"] or "base's", r["tensorrt"] or "base's",
                  r["python"] or "base's", r["torch"], r["torchvision"],
                  "no" if r["cannot_build"] else "yes") for r in rows],
                title=f"Images ({installed.command('jetson-env images build NAME')})",
            )  # fmt: skip
            for row in rows:
                if row["cannot_build"]:
                    term.note(row["cannot_build"])
        return EXIT_OK
    if args.images_command == "tag":
        if args.l4t:
            host = images_mod.HostPlatform(True, "aarch64", args.l4t)
        else:
            facts = gather(LocalTarget(args.python), matrix)
            if facts["errors"]:
                for error in facts["errors"].values():
                    term.error(error)
                return EXIT_FAILED
            p = facts["platform"]
            host = images_mod.HostPlatform(p["is_jetson"], p["machine"], p["l4t"])
        try:
            image = images_mod.image_for(host, matrix)
        except images_mod.NoImage as exc:
            listing = installed.command("jetson-env images list")
            term.error(str(exc), hint=f"`{listing}` shows which host runs which image")
            return EXIT_FAILED
        if host.l4t and matrix.resolve(host.l4t).assumed:
            term.note(
                f"L4T R{normalize_l4t(host.l4t)} has no row of its own: R"
                f"{matrix.resolve(host.l4t).assumed_from}'s, the newest of its line, applies"
            )
        if args.json:
            term.json({"schema": 1, "image": images_mod.describe(image, matrix, repo)})
        else:
            term.line(images_mod.tag(image, repo))
            if images_mod.cannot_build(image):
                term.note(images_mod.cannot_build(image))
        return EXIT_OK
    try:
        image = images_mod.find(args.name, matrix)
    except UnknownRelease as exc:
        term.error(
            str(exc), hint=f"`{installed.command('jetson-env images list')}` lists the images"
        )
        return EXIT_USAGE
    if images_mod.cannot_build(image) and not args.base:
        term.error(images_mod.cannot_build(image), hint=images_mod.build_hint(image))
        return EXIT_USAGE
    from jetson_env import collection

    try:
        playbook_vars = collection.playbook_vars(args.playbook_vars) or None
    except collection.BadVariables as exc:
        term.error(str(exc))
        return EXIT_USAGE
    log = Path(args.log or f".cache/images/{image.name}.log")
    with term.status(f"building {images_mod.tag(image, repo)}") as status:
        try:
            built = images_mod.build(
                image, matrix, repository=repo, log_path=log, base=args.base,
                playbook_vars=playbook_vars, no_cache=args.no_cache,
                on_line=lambda line: status.update(f"{image.name}: {line[:100]}"),
            )  # fmt: skip
        except (images_mod.BuildFailed, images_mod.DockerUnavailable) as exc:
            term.error(str(exc), hint=f"the whole build log is in {log}")
            return EXIT_FAILED
    if args.json:
        term.json({"schema": 1, "image": images_mod.describe(image, matrix, repo), **built})
    else:
        term.line(f"built {built['tag']} ({built['id'][:19]})")
        term.line(f"size {size(built['size_bytes'])}, largest layer "
                  f"{size(built['largest_layer_bytes'])}; log: {log}")  # fmt: skip
    return EXIT_OK


def register(sub) -> None:
    """The `images` command's arguments, on the command line's subparsers."""
    images = sub.add_parser("images", help="container images: list, build, the tag for this host")
    images.add_argument(
        "--repository", default=images_mod.DEFAULT_REPOSITORY, help="image repository (name)"
    )
    images_sub = images.add_subparsers(dest="images_command", required=True, metavar="ACTION")
    listing = images_sub.add_parser("list", help="every image with its versions")
    json_output(listing)
    tag = images_sub.add_parser("tag", help="the image that runs on this host (its L4T)")
    tag.add_argument("--l4t", metavar="RELEASE", help="for a Jetson of this L4T instead")
    python_option(tag, "interpreter for the probes", default=target_python.DEFAULT)
    json_output(tag)
    build = images_sub.add_parser("build", help="build one image (docker engine needed)")
    build.add_argument("name", help="image name from `images list`, e.g. r36.4.0 or x86_64")
    build.add_argument("--base", help="FROM image instead of the matrix's (e.g. a local mirror)")
    build.add_argument(
        "--playbook-vars",
        metavar="JSON",
        help="more variables for the playbook in the build, e.g. files staged in images/inputs/",
    )
    build.add_argument(
        "--no-cache",
        action="store_true",
        help="run every step again, none from Docker's cache (a cached step keeps what pip "
        "resolved when it first ran)",
    )
    build.add_argument("--log", help="build log path (default .cache/images/NAME.log)")
    json_output(build)
    images.set_defaults(func=run)
