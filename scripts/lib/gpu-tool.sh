# shellcheck shell=bash
# For the scripts/gpu-* checks on the air-gapped GPU machine: jetson-env as a user installs it,
# in a venv of its own made by PYTHON, built from this checkout with pip pointed only at the
# carried wheel folders (PIP_NO_INDEX, PIP_FIND_LINKS: exported, so a remedy run later uses it),
# with EXTRA's requirements where one is named (provision: ansible-core).
#
#   source scripts/lib/gpu-tool.sh && gpu_tool 'WHEEL_DIR [WHEEL_DIR...]' PYTHON [EXTRA]   # sets $tool

gpu_tool() {
    export PIP_NO_INDEX=1 PIP_FIND_LINKS=$1
    tool=$(mktemp -d)/jetson-env
    "$2" -m venv "$tool"
    "$tool/bin/pip" install -q setuptools
    "$tool/bin/pip" install -q --no-build-isolation ".${3:+[$3]}"
}
