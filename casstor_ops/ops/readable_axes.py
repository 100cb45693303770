"""Axes people can read at a glance: byte and count ticks in words, log scale when values span decades, short labels.

* :func:`byte_axis`: ticks at round multiples of one binary unit, the
  largest value's (``0 GiB``, ``0.5 GiB``, ``1 GiB``) on a linear axis, or at powers of two
  (``1 KiB``, ``32 KiB``, ``1 MiB``) on a log axis;
* :func:`count_axis`: ``1``, ``10``, ``1k``, ``1M`` on a log axis;
* :func:`spans_decades`: whether values need a log axis (positive ones
  spanning a factor of :data:`DECADES_FOR_LOG` or more);
* :func:`shorten`: a label cut in the middle with an ellipsis, so its
  start and its distinguishing end both stay visible.

Example::

    >>> shorten("projects/2024/customer-data/exports/daily", 24)
    'projects/20…xports/daily'
    >>> byte_label(3 << 20), count_label(25_000)
    ('3 MiB', '25k')

Pure functions over matplotlib axes; nothing raises for finite numbers.
"""

from __future__ import annotations

from collections.abc import Iterable

from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.ticker import Formatter, FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from casstor_ops.ops.units import byte_unit

DECADES_FOR_LOG = 100  # max / min of the positive values at which a log axis reads better


class _BinaryUnitLocator(MaxNLocator):
    """Linear ticks at round multiples of the binary unit of the axis' largest value."""

    def tick_values(self, vmin: float, vmax: float):
        _, size = byte_unit(max(abs(vmin), abs(vmax)))
        return super().tick_values(vmin / size, vmax / size) * size


class _BinaryUnitFormatter(Formatter):
    """Linear tick labels in the one unit of the axis' largest value (``0.2 GiB``, not ``205 MiB``)."""

    def __call__(self, value: float, pos: int | None = None) -> str:
        unit, size = byte_unit(max(abs(v) for v in self.axis.get_view_interval()))
        return f"{value / size:.3g} {unit}"


def byte_label(value: float) -> str:
    """``value`` bytes as ``3 MiB``, ``1.5 GiB``, ``512 B`` (three significant digits)."""
    unit, size = byte_unit(abs(value))
    return f"{value / size:.3g} {unit}"


def count_label(value: float) -> str:
    """``value`` as ``950``, ``25k``, ``1.2M``, ``3bn`` (three significant digits)."""
    for scale, suffix in ((1e9, "bn"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def spans_decades(values: Iterable[float]) -> bool:
    """Whether the positive ``values`` span a factor of :data:`DECADES_FOR_LOG` or more."""
    positive = [v for v in values if v > 0]
    return bool(positive) and max(positive) >= DECADES_FOR_LOG * min(positive)


def _axis(ax: Axes, which: str, log: bool, **scale) -> Axis:
    if log:
        getattr(ax, f"set_{which}scale")("log", **scale)
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_minor_formatter(NullFormatter())
    return axis


def byte_axis(ax: Axes, which: str = "y", log: bool = False) -> None:
    """Byte ticks on ``ax``'s ``which`` (``"x"``/``"y"``) axis, log base 2 when ``log``."""
    axis = _axis(ax, which, log, base=2)
    if log:
        axis.set_major_locator(LogLocator(base=2, numticks=8))
        axis.set_major_formatter(FuncFormatter(lambda value, _: byte_label(value)))
    else:
        axis.set_major_locator(_BinaryUnitLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
        axis.set_major_formatter(_BinaryUnitFormatter())


def count_axis(ax: Axes, which: str = "y", log: bool = False) -> None:
    """Count ticks on ``ax``'s ``which`` axis (log base 10 when ``log``), integers only on a linear one."""
    axis = _axis(ax, which, log)
    if not log:
        axis.set_major_locator(MaxNLocator(integer=True))
    axis.set_major_formatter(FuncFormatter(lambda value, _: count_label(value)))


def shorten(label: str, width: int = 40) -> str:
    """``label`` if it fits in ``width`` characters, else its start and end around an ellipsis."""
    if len(label) <= width:
        return label
    head = (width - 1) // 2
    return label[:head] + "…" + label[len(label) - (width - 1 - head):]
