"""Issue 59, item 7: one unit for sizes. Every size jetson-env prints (a bundle's table, its
`to fetch` and `fetched` lines, an image's size) goes through sizes.size: binary units,
one decimal, never MB beside MiB."""

import pytest

from jetson_env.sizes import size


@pytest.mark.parametrize(
    ("nbytes", "said"),
    [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
     (36_200_000, "34.5 MiB"), (5 * 2**30, "5.0 GiB"), (3 * 2**40, "3.0 TiB"),
     (2**60, "1048576.0 TiB")],
)  # fmt: skip
def test_a_size_is_said_in_binary_units(nbytes, said):
    assert size(nbytes) == said
