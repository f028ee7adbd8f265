# shellcheck shell=bash
# The machine-level part of the test environment: Debian packages, a running
# Docker engine and aarch64 emulation. Sourced by scripts/test (and by any later
# script that needs the test hosts); every step is a no-op when already done.

# gcc-aarch64-linux-gnu: stand-ins of NVIDIA's shared libraries for the emulated Jetsons;
# chromium: the report pages (doctor -i, plan) opened in headless Chromium by
# tests/support/browser.py (no chromedriver: --dump-dom and --screenshot do); strace: counting the probe
# processes a doctor run starts (tests/unit/test_probing.py).
TEST_ENV_PACKAGES=(docker.io debootstrap qemu-user-static binfmt-support shellcheck gnupg gcc-aarch64-linux-gnu
    chromium strace)
TEST_ENV_DOCKER_TIMEOUT_S=60

test_env_install_packages() {
    local missing=() package
    for package in "${TEST_ENV_PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'ok installed'; then
            missing+=("$package")
        fi
    done
    if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
        missing+=(python3-venv)
    fi
    if ((${#missing[@]} == 0)); then
        return 0
    fi
    echo "test-env: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
}

# Start dockerd by hand: CI machines have no init system running it. Without
# iptables the default bridge has no NAT, which is why test hosts use --network host.
test_env_start_docker() {
    local log_dir=$1
    if docker info >/dev/null 2>&1; then
        return 0
    fi
    mkdir -p "$log_dir"
    local log="$log_dir/dockerd.log"
    echo "test-env: starting dockerd (log: $log)" >&2
    setsid dockerd --iptables=false >"$log" 2>&1 </dev/null &
    local deadline=$((SECONDS + TEST_ENV_DOCKER_TIMEOUT_S))
    until [[ -S /var/run/docker.sock ]] && docker info >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            echo "test-env: dockerd did not answer within ${TEST_ENV_DOCKER_TIMEOUT_S}s; last lines of $log:" >&2
            tail -n 20 "$log" >&2
            return 1
        fi
        sleep 1
    done
}

# Register qemu-user-static for aarch64 binaries, so arm64 root file systems
# (the stand-ins for Jetsons) can be bootstrapped and run on x86_64.
test_env_enable_aarch64_emulation() {
    local binfmt=/proc/sys/fs/binfmt_misc
    if ! mountpoint -q "$binfmt"; then
        mount -t binfmt_misc binfmt_misc "$binfmt"
    fi
    if [[ ! -e $binfmt/qemu-aarch64 ]]; then
        update-binfmts --enable qemu-aarch64
    fi
    if [[ ! -e $binfmt/qemu-aarch64 ]]; then
        echo "test-env: $binfmt/qemu-aarch64 is missing after 'update-binfmts --enable qemu-aarch64'" >&2
        return 1
    fi
}

test_env_setup() {
    local log_dir=$1
    test_env_install_packages
    test_env_start_docker "$log_dir"
    test_env_enable_aarch64_emulation
}
