"""What a fix may move: the matrix's exact pins against a user's installed release
(jetson_env.pins, the roles' pip_requirement filter)."""

import pytest

from jetson_env.pins import requirement_for


@pytest.mark.parametrize(
    ("requirement", "installed", "move", "given"),
    [
        ("numpy==1.26.1", None, False, "numpy==1.26.1"),  # none installed: the pin
        ("numpy==1.26.1", "1.26.4", False, ""),  # the user's 1.x is kept
        ("numpy==1.26.1", "1.24.0", False, ""),
        ("numpy==1.26.1", "2.1.3", False, "numpy==1.26.1"),  # another major: moved
        ("numpy==1.26.1", "1.26.4", True, "numpy==1.26.1"),  # the finding is about numpy
        ("numpy>=1.26,<3", "2.1.3", False, "numpy>=1.26,<3"),  # a range: pip decides
        ("numpy<1.20", "1.19.5", False, "numpy<1.20"),
        ("numpy==1.26.*", "1.24.0", False, "numpy==1.26.*"),  # a wildcard is a range
        ("onnx", "1.16.0", False, "onnx"),
    ],
)  # fmt: skip
def test_an_exact_pin_keeps_an_installed_release_of_its_major(requirement, installed, move,
                                                               given):  # fmt: skip
    assert requirement_for(requirement, installed, move) == given
