#!/bin/sh
# Runs the playbook jetson_env.jetson.provision inside an image build (images/Dockerfile),
# from the collection the jetson-env wheel carries (installed with Ansible below):
#   provision.sh build    stage `build`: provision with compilers, keep the built wheels
#   provision.sh install  final stage: the same roles install those wheels, nothing is
#                         compiled; then jetson-env itself; then Ansible, the wheels and
#                         every cache are deleted in this same RUN (one layer).
# Reads the build arguments L4T, TORCH_CUDA_ARCH_LIST, TORCH_VERSION, CUDA_FROM,
# PLAYBOOK_VARS.
set -eu

mode=${1:?usage: provision.sh build|install}
top=/opt/jetson-env-build
src=$top/src
out=$top/out
ansible_venv=/opt/jetson-env-ansible
python=/usr/bin/python3

say() { printf '[jetson-env image %s] %s\n' "$mode" "$*"; }

# pip before 19 (JetPack 4's Python 3.6 has 9 to 18) fails on the final stage's
# PIP_NO_CACHE_DIR=1 ("TypeError: expected str, bytes or os.PathLike object, not int"): the
# roles' pip caches into /root/.cache instead, which this same RUN deletes.
unset PIP_NO_CACHE_DIR

# Python and venv for Ansible; bases such as ubuntu:22.04 have no Python at all.
if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
    say "installing python3 and python3-venv from the base's apt sources"
    apt-get update
    # hadolint-style pins do not apply: the versions are the base release's.
    apt-get install -y --no-install-recommends python3 python3-venv python3-pip ca-certificates
fi

# Ansible's controller side (jetson-env[provision]) runs in a Python jetson-env supports
# (3.10+): the base's own where it is one, else another python3.1x of the base, else one uv
# installs (a download from GitHub; uv itself installs on Python 3.8+). The roles, and
# Ansible's modules, run in the base's own Python either way: JetPack 5's 3.8 on r35.
controller=""
for candidate in "$python" python3.13 python3.12 python3.11 python3.10; do
    found=$(command -v "$candidate" || true)
    if [ -n "$found" ] && "$found" -c 'import sys, venv, ensurepip
sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
        controller=$found
        break
    fi
done
make_venv() {  # a venv of the controller's Python at $1
    if [ -n "$controller" ]; then
        "$controller" -m venv "$1"
        return
    fi
    if [ ! -x /opt/jetson-env-uv/bin/uv ]; then
        "$python" -m venv /opt/jetson-env-uv
        /opt/jetson-env-uv/bin/pip install --quiet --no-cache-dir uv
    fi
    UV_PYTHON_INSTALL_DIR=/opt/jetson-env-python /opt/jetson-env-uv/bin/uv venv --seed --python 3.12 "$1"
}
base_python=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

say "ansible-core in a throwaway venv ($ansible_venv, Python ${controller:-3.12 from uv}): the README's provisioning install"
make_venv "$ansible_venv"
# jetson-env's wheel is built once, here in stage `build`; both stages install it. Nothing
# in this venv is kept, so nothing in it is byte-compiled ahead (--no-compile).
if [ "$mode" = build ]; then
    mkdir -p "$out/wheels" "$top/inputs"
    "$ansible_venv/bin/pip" wheel --quiet --no-deps --no-cache-dir --wheel-dir "$out/wheels" "$src"
fi
wheel=$(ls "$out"/wheels/jetson_env-*.whl)
"$ansible_venv/bin/pip" install --quiet --no-cache-dir --no-compile "${wheel}[provision]"
# The ansible-core that manages the base's Python (the matrix's ansible_core table).
core=$("$ansible_venv/bin/python" -c 'import sys
from jetson_env import matrix
print(matrix.load().ansible_core.requirement([sys.argv[1]]) or "")' "$base_python")
if [ -n "$core" ]; then
    "$ansible_venv/bin/pip" install --quiet --no-cache-dir --no-compile "$core"
fi
say "ansible-core $("$ansible_venv/bin/python" -c 'import ansible.release as r; print(r.__version__)') runs the roles in the base's Python $base_python"

# Stage-specific variables: where the wheels are kept (build) or found (install).
if [ "$mode" = build ]; then
    # Only this image's controller files go on to the final stage.
    if [ -n "${JETSON_ENV_IMAGE:-}" ] && [ -d "$src/images/inputs/$JETSON_ENV_IMAGE" ]; then
        cp -a "$src/images/inputs/$JETSON_ENV_IMAGE/." "$top/inputs/"
    fi
    rm -rf "$src/images/inputs"
    # What this stage installs is thrown away (the final stage installs it again from the
    # wheels), so pip does not byte-compile it.
    stage_vars='{"pip_packages_args": ["--no-compile"]}'
else
    # The final stage gets JetPack's CUDA/cuDNN libraries, not the toolkit (no nvcc).
    stage_vars="{\"jetpack_apt_set\": \"runtime\", \"pycuda_pip_args\": [\"--find-links\", \"$out/wheels\"]}"
fi
# CUDA, cuDNN and TensorRT from NVIDIA's Jetson apt repository only where the base lacks
# them (cuda_from: apt); l4t-base gets them mounted from the host, l4t-jetpack has them.
if [ "${CUDA_FROM:-}" = apt ]; then from_apt=true; else from_apt=false; fi
arch_list=${TORCH_CUDA_ARCH_LIST:-}
playbook_vars=${PLAYBOOK_VARS:-}
[ -n "$playbook_vars" ] || playbook_vars='{}'
cmake_archs=$(printf '%s' "$arch_list" | tr -d . | tr ';' ' ')

# `jetson-env provision --python`: the one rule for the Python provisioned (and the one
# Ansible runs its modules with), as on any machine (jetson_env/target_python.py).
say "jetson-env provision --python $python (L4T ${L4T:-none: x86_64})"
cd "$src"
ANSIBLE_FORCE_COLOR=0 \
    "$ansible_venv/bin/jetson-env" provision --python "$python" \
    -e @images/container-build.yml \
    -e "{\"jetson_facts_l4t\": \"${L4T:-}\", \"torchvision_cuda_arch_list\": \"$arch_list\", \"torch2trt_cuda_architectures\": \"$cmake_archs\", \"jetpack_apt_enabled\": $from_apt, \"tensorrt_from_apt\": $from_apt}" \
    -e "$stage_vars" \
    -e "$playbook_vars"

# The matrix's torch, unless the build was given another one (PLAYBOOK_VARS naming a torch
# source or version: a controller wheel where the matrix's cannot be had, as in the tests).
torch_overridden=$(printf '%s' "$playbook_vars" | "$python" -c 'import json, sys
given = json.load(sys.stdin)
keys = ("torch_wheel_file", "torch_wheel_url", "torch_pip_index", "torch_version")
print("yes" if any(given.get(key) for key in keys) else "no")')
if [ "$torch_overridden" = yes ]; then
    say "torch comes from PLAYBOOK_VARS, not the matrix's ${TORCH_VERSION:-}"
elif [ -n "${TORCH_VERSION:-}" ] && "$python" -c 'import torch' 2>/dev/null; then
    installed=$("$python" -c 'import torch; print(torch.__version__.split("+")[0])')
    if [ "$installed" != "$TORCH_VERSION" ]; then
        say "torch $installed is installed but the matrix pairs this image with $TORCH_VERSION" >&2
        exit 1
    fi
fi

if [ "$mode" = build ]; then
    # pycuda is built by pip from its sdist; pip keeps that wheel in its cache.
    find /root/.cache/pip -name 'pycuda-*.whl' -exec cp {} "$out/wheels/" \; 2>/dev/null || true
    say "kept for the final stage: $(cd "$out" && find . -type f | sort | tr '\n' ' ')"
    # The final stage copies only $top: what pip and Ansible added elsewhere would only
    # make the layer Docker commits for this stage larger (torch alone is a GB).
    site=$("$python" -c 'import site; print(site.getsitepackages()[0])')
    rm -rf "$ansible_venv" /opt/jetson-env-uv /opt/jetson-env-python "$site" /root/.ansible \
        /root/.cache /var/cache/jetson-env /var/lib/apt/lists/*
    exit 0
fi

# jetson-env itself in its own venv, of the controller's Python (3.10+; on JetPack 4/5 the
# stack's Python is older).
say "jetson-env in /opt/jetson-env"
make_venv /opt/jetson-env
/opt/jetson-env/bin/pip install --quiet --no-cache-dir "$out"/wheels/jetson_env-*.whl
ln -sf /opt/jetson-env/bin/jetson-env /usr/local/bin/jetson-env

say "removing Ansible, the wheels and the caches"
rm -rf "$ansible_venv" /opt/jetson-env-uv "$top" /root/.ansible /root/.cache /var/cache/jetson-env /tmp/*
apt-get clean
rm -rf /var/lib/apt/lists/*
