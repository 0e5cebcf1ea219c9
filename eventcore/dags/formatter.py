"""Names of the real DAGMan nodes a layer stands for, and the way back.

A layer ``L`` of N nodes becomes nodes ``L:0`` ... ``L:N-1`` in the DAG file
(with the default ``SimpleFormatter``); rescue files name nodes that way,
so a formatter must be able to parse what it generates.
"""

from __future__ import annotations

import abc

from jobledger.eventcore.errors import CannotInvertFormat, LayerNameContainsSeparator

DEFAULT_SEPARATOR = ":"


class NodeNameFormatter(abc.ABC):
    """Turns (layer name, index) into a node name and back."""

    @abc.abstractmethod
    def generate(self, layer_name: str, node_index: int) -> str:
        """The node name of underlying node ``node_index`` of ``layer_name``."""

    @abc.abstractmethod
    def parse(self, node_name: str) -> tuple[str, int]:
        """``(layer_name, node_index)`` for a name ``generate`` made."""


class SimpleFormatter(NodeNameFormatter):
    """``<layer><separator><index_format of index + offset>``, e.g. ``work:5``."""

    def __init__(self, separator: str = DEFAULT_SEPARATOR, index_format: str = "{:d}", offset: int = 0):
        if not separator:
            raise ValueError("SimpleFormatter: the separator must not be empty")
        self.separator = separator
        self.index_format = index_format
        self.offset = offset

    def __repr__(self) -> str:
        return (f"SimpleFormatter(separator={self.separator!r}, index_format={self.index_format!r}, "
                f"offset={self.offset})")

    def generate(self, layer_name: str, node_index: int) -> str:
        if self.separator in layer_name:
            raise LayerNameContainsSeparator(
                f"layer name {layer_name!r} contains the node name separator {self.separator!r}")
        name = f"{layer_name}{self.separator}{self.index_format.format(node_index + self.offset)}"
        if self._parse(name) != (layer_name, node_index):
            raise CannotInvertFormat(
                f"node name {name!r} does not parse back to layer {layer_name!r} index {node_index} "
                f"(index_format {self.index_format!r} is not invertible)")
        return name

    def parse(self, node_name: str) -> tuple[str, int]:
        parsed = self._parse(node_name)
        if parsed is None:
            raise CannotInvertFormat(
                f"node name {node_name!r} is not <layer>{self.separator}<index> "
                f"(index_format {self.index_format!r})")
        return parsed

    def _parse(self, node_name: str) -> tuple[str, int] | None:
        parts = node_name.split(self.separator)
        if len(parts) != 2:
            return None
        layer, index = parts
        if not index.isascii() or not index.lstrip("-").isdigit():
            return None
        return layer, int(index) - self.offset
