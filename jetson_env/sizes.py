"""Sizes as every line of jetson-env says them. Stdlib only: the collection's filters (bundle
fetching) import it in a controller Python that may have ansible-core alone."""

SIZE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size(nbytes: int | float) -> str:
    """A size as every line of jetson-env says one: binary units (pip's wheels, apt's .debs and
    the limits on files all in the same), one decimal: '812 B', '4.0 MiB', '2.3 GiB'."""
    value, unit = float(nbytes), 0
    while value >= 1024 and unit < len(SIZE_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.0f} B" if unit == 0 else f"{value:.1f} {SIZE_UNITS[unit]}"
