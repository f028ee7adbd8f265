"""pycuda's probe runs after torch's in the shared process (torch's import first: the longest
wait). With the smoke torch's probe leaves the GPU's primary context current in the process's
thread; pycuda's allocation "without a context" must still meet none, as it did when it ran
first. It runs in a thread of its own: a CUDA context is current per thread, and a new thread
has none. A stand-in pycuda (and the little of numpy its round trip uses) keeps the driver's
rule: an allocation needs a context current in the calling thread."""

import sys

import pytest

from jetson_env import probing
from jetson_env.probes import _prelude

STANDIN_DRIVER = '''"""A stand-in for pycuda.driver (tests/unit/test_pycuda_probe_order.py):
contexts are current per thread, as the CUDA driver's are."""
import threading

_current = threading.local()
VERSION_TEXT = "2025.1 (stand-in)"


def _stack():
    if not hasattr(_current, "stack"):
        _current.stack = []
    return _current.stack


def init(flags=0):
    pass


def get_driver_version():
    return 13000


class Allocation:
    def __init__(self, size):
        self.data = None

    def free(self):
        pass


def mem_alloc(size):
    if not _stack():
        raise RuntimeError("cuMemAlloc failed: invalid device context")
    return Allocation(size)


def memcpy_htod(device, host):
    device.data = list(host)


def memcpy_dtoh(host, device):
    host[:] = device.data


class Context:
    def push(self):
        _stack().append(self)

    def pop(self):
        _stack().pop()

    def detach(self):
        pass


class Device:
    def __init__(self, index):
        self.index = index

    @staticmethod
    def count():
        return 1

    def retain_primary_context(self):
        return Context()
'''
STANDIN_NUMPY = '''"""A stand-in for the little of numpy pycuda's round trip uses."""
float32 = "float32"


class Array(list):
    @property
    def nbytes(self):
        return 4 * len(self)

    def __eq__(self, other):
        return Same(list(self) == list(other))


class Same:
    def __init__(self, value):
        self.value = value

    def all(self):
        return self.value


def arange(count, dtype=None):
    return Array(float(i) for i in range(count))


def empty_like(array):
    return Array([0.0] * len(array))
'''


@pytest.fixture
def standins(tmp_path, monkeypatch):
    (tmp_path / "pycuda").mkdir()
    (tmp_path / "pycuda" / "__init__.py").write_text('VERSION_TEXT = "2025.1 (stand-in)"\n')
    (tmp_path / "pycuda" / "driver.py").write_text(STANDIN_DRIVER)
    (tmp_path / "numpy.py").write_text(STANDIN_NUMPY)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("pycuda", "pycuda.driver", "numpy"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield
    for name in ("pycuda", "pycuda.driver", "numpy"):
        sys.modules.pop(name, None)


def pycuda_probe(gpu_work: bool) -> dict:
    namespace = {"describe": _prelude.describe, "find_spec": _prelude.find_spec,
                 "gpu_work": gpu_work}  # fmt: skip
    exec(compile(probing.source("pycuda"), "pycuda.py", "exec"), namespace)
    return namespace["collect"]()


def test_torch_runs_first_in_the_shared_process_with_the_smoke_too():
    framework = probing.plan(["smoke", "pycuda", "torch", "cuda_python"])[2]
    assert framework[0] == "torch"


def test_the_allocation_without_a_context_meets_none_after_torchs_context(standins):
    import pycuda.driver as cuda

    torchs = cuda.Device(0).retain_primary_context()
    torchs.push()  # what torch's probe leaves current with the smoke
    try:
        facts = pycuda_probe(gpu_work=True)
    finally:
        torchs.pop()
    assert facts["without_context"] == "RuntimeError: cuMemAlloc failed: invalid device context"
    assert facts["context"] == "created"
    assert facts["round_trip"] is True
    assert facts["error"] is None


def test_no_allocation_and_no_context_without_the_smoke(standins):
    facts = pycuda_probe(gpu_work=False)
    assert facts["device_count"] == 1
    assert (facts["without_context"], facts["context"], facts["round_trip"]) == (None, None, None)
