# shellcheck shell=bash
# For the scripts/gpu-* checks on the air-gapped GPU machine: jetson-env as a user installs it,
# in a venv of its own made by PYTHON, built from this checkout with pip pointed only at the
# carried wheel folder (PIP_NO_INDEX, PIP_FIND_LINKS: exported, so a remedy run later uses it).
#
#   source scripts/lib/gpu-tool.sh && gpu_tool WHEEL_DIR PYTHON   # sets $tool

gpu_tool() {
    export PIP_NO_INDEX=1 PIP_FIND_LINKS=$1
    tool=$(mktemp -d)/jetson-env
    "$2" -m venv "$tool"
    "$tool/bin/pip" install -q setuptools
    "$tool/bin/pip" install -q --no-build-isolation .
}
