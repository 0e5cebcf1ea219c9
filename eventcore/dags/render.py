"""A DAG as DAGMan's description language, and the files that go with it.

``DAGRenderer(dag, formatter, cwd).files()`` is everything ``write_dag``
puts in the DAG directory, as {file name: text}, in the order to write it
(the DAG file last); nothing here touches the disk.  The text is what
htcondor.dags writes for the same DAG, line for line, but for one fix:
category throttles are ``MAXJOBS category N`` (DAGMan reads ``CATEGORY``
as "put node X in category Y").
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import PurePath

from jobledger.eventcore.errors import InvalidDAG
from jobledger.eventcore.submit.description import Submit

from . import nodes as _nodes
from .edges import JoinFactory, JoinNode
from .formatter import NodeNameFormatter, SimpleFormatter
from .walk_order import WalkOrder

DEFAULT_DAG_FILE_NAME = "dagfile.dag"
CONFIG_FILE_NAME = "dagman.config"
JOIN_LAYER_NAME = "__JOIN__"
NOOP_SUBMIT_FILE_NAME = f"{JOIN_LAYER_NAME}.sub"


_MACRO_NAME = re.compile(r"[+]?[A-Za-z_][A-Za-z0-9_.]*")
_ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
RESERVED_NODE_NAMES = frozenset({"PARENT", "CHILD", "ALL_NODES"})


def _integer(value, what: str, low: int | None = None, high: int | None = None) -> int:
    """``value`` if it is an int within [low, high]; else InvalidDAG naming ``what``."""
    if not isinstance(value, int) or isinstance(value, bool) or (low is not None and value < low) \
            or (high is not None and value > high):
        bounds = f" from {low}" if low is not None else ""
        bounds += f" to {high}" if high is not None else ""
        raise InvalidDAG(f"{what} must be an integer{bounds}, not {value!r}")
    return value


_BAD_GENERATED = re.compile(r'[\s"/\x00+]')


def _no_newline(text: str, what: str) -> str:
    if "\n" in text or "\r" in text:
        raise InvalidDAG(f"{what} {text!r} has a line break; a DAG file command is one line")
    return text


class DAGRenderer:
    """Renders one DAG; ``cwd`` makes submit-file paths absolute."""

    def __init__(self, dag, node_name_formatter: NodeNameFormatter | None = None, cwd=PurePath("/")):
        self.dag = dag
        self.node_name_formatter = node_name_formatter or SimpleFormatter()
        self.cwd = PurePath(cwd)
        self.join_factory = JoinFactory()
        self._names: dict = {}

    # -- the files ----------------------------------------------------------------
    def files(self, dag_file_name: str = DEFAULT_DAG_FILE_NAME) -> dict[str, str]:
        """{name in the DAG directory: text}, the DAG file last."""
        dag_text = "".join(line + "\n" for line in self.yield_dag_file_lines())
        files = {}
        for node in self._described_nodes():
            if isinstance(node.submit_description, Submit):
                files[f"{node.name}.sub"] = str(node.submit_description)
        if self.join_factory.joins:
            files[NOOP_SUBMIT_FILE_NAME] = ""
        if self.dag.dagman_config:
            files[CONFIG_FILE_NAME] = "\n".join(_no_newline(f"{k} = {v}", "the DAGMan configuration line")
                                                for k, v in self.dag.dagman_config.items())
        if dag_file_name in files:
            raise InvalidDAG(f"the DAG file name {dag_file_name!r} is also the name of a file the DAG needs")
        files[dag_file_name] = dag_text
        return files

    def _described_nodes(self) -> Iterator[_nodes.BaseNode]:
        yield from (n for n in self.dag._nodes.values() if isinstance(n, _nodes.NodeLayer))
        if self.dag._final_node is not None:
            yield self.dag._final_node

    # -- the DAG file -------------------------------------------------------------
    def yield_dag_file_lines(self) -> Iterator[str]:
        """The DAG description, one line at a time (join nodes numbered from 0)."""
        self.join_factory = JoinFactory()
        self._names = {}
        cycle = self.dag.cycle()
        if cycle:
            names = " -> ".join(n.name for n in cycle + cycle[:1])
            raise InvalidDAG(f"the DAG has a cycle: {names}")
        yield "# BEGIN META"
        yield from self.yield_dag_meta_lines()
        yield "# END META"
        yield "# BEGIN NODES AND EDGES"
        for node in self.dag.walk(WalkOrder.BREADTH_FIRST):
            yield from self.yield_node_lines(node)
            yield from self.yield_edge_lines(node)
        yield from self.yield_join_node_lines()
        yield "# END NODES AND EDGES"
        if self.dag._final_node is not None:
            yield "# FINAL NODE"
            yield from self.yield_node_lines(self.dag._final_node)
            yield "# END FINAL NODE"

    def yield_dag_meta_lines(self) -> Iterator[str]:
        dag = self.dag
        if dag.dagman_config:
            yield f"CONFIG {CONFIG_FILE_NAME}"
        if dag.jobstate_log is not None:
            yield f"JOBSTATE_LOG {dag.jobstate_log.as_posix()}"
        if dag.node_status_file is not None:
            status = dag.node_status_file
            parts = ["NODE_STATUS_FILE", status.path.as_posix()]
            if status.update_time is not None:
                parts.append(str(_integer(status.update_time, "the node status file's update time", low=0)))
            if status.always_update:
                parts.append("ALWAYS-UPDATE")
            yield " ".join(parts)
        if dag.dot_config is not None:
            dot = dag.dot_config
            parts = ["DOT", dot.path.as_posix(), "UPDATE" if dot.update else "DONT-UPDATE",
                     "OVERWRITE" if dot.overwrite else "DONT-OVERWRITE"]
            if dot.include_file is not None:
                parts += ["INCLUDE", dot.include_file.as_posix()]
            yield " ".join(parts)
        for key, value in dag.dagman_job_attrs.items():
            if not isinstance(key, str) or not _ATTRIBUTE_NAME.fullmatch(key) or not str(value).strip():
                raise InvalidDAG(f"SET_JOB_ATTR needs an attribute name and a value, not {key!r} = {value!r}")
            yield _no_newline(f"SET_JOB_ATTR {key} = {value}", "the job attribute")
        for category, limit in dag.max_jobs_per_category.items():
            _nodes.check_node_name(category, "category name")
            yield f"MAXJOBS {category} {_integer(limit, f'the MAXJOBS limit of {category}', low=0)}"

    def yield_node_lines(self, node) -> Iterator[str]:
        if isinstance(node, _nodes.NodeLayer):
            yield from self.yield_layer_lines(node)
        elif isinstance(node, _nodes.SubDAG):
            yield from self.yield_subdag_lines(node)
        elif isinstance(node, _nodes.FinalNode):
            yield from self.yield_final_node_lines(node)
        else:
            raise TypeError(f"unknown node type {type(node).__name__} for node {node!r}")

    def submit_file(self, node) -> str:
        """The JOB/FINAL line's submit file: ``<name>.sub`` or the given file, absolute."""
        description = node.submit_description
        if isinstance(description, Submit):
            return f"{node.name}.sub"
        return (self.cwd / os.fspath(description)).as_posix()

    def yield_layer_lines(self, layer) -> Iterator[str]:
        if layer.name == JOIN_LAYER_NAME:
            raise InvalidDAG(f"the layer name {JOIN_LAYER_NAME!r} is the writer's own (join nodes)")
        submit_file = self.submit_file(layer)
        self.check_settings(layer, layer.name)
        checked_keys: set = set()
        for index, (name, vars) in enumerate(zip(self.node_names(layer), layer.vars)):
            yield " ".join([f"JOB {name} {submit_file}", *self.get_node_meta_parts(layer, index)])
            if vars:
                yield f"VARS {name} {self.vars_text(layer, vars, checked_keys)}"
            yield from self.yield_node_meta_lines(layer, name)

    @staticmethod
    def vars_text(layer, vars, checked_keys: set) -> str:
        """``key="value" ...`` with backslashes and quotes escaped (``checked_keys``: names known good)."""
        parts = []
        for key, value in vars.items():
            if key not in checked_keys:
                if not isinstance(key, str) or not _MACRO_NAME.fullmatch(key) or key.lower().startswith("queue"):
                    raise InvalidDAG(f"layer {layer.name!r}: {key!r} cannot be a VARS macro name")
                checked_keys.add(key)
            text = _no_newline(str(value), f"layer {layer.name!r}: VARS value of {key}:")
            parts.append('{}="{}"'.format(key, text.replace("\\", "\\\\").replace('"', '\\"')))
        return " ".join(parts)

    def yield_subdag_lines(self, subdag) -> Iterator[str]:
        name = self.get_node_name(subdag, 0)
        self.check_settings(subdag, name)
        yield " ".join([f"SUBDAG EXTERNAL {name} {subdag.dag_file}", *self.get_node_meta_parts(subdag, 0)])
        yield from self.yield_node_meta_lines(subdag, name)

    def yield_final_node_lines(self, final) -> Iterator[str]:
        self.check_settings(final, final.name)
        parts = [f"FINAL {self._checked(final.name)} {self.submit_file(final)}"]
        if final.dir is not None:
            parts += ["DIR", str(final.dir)]
        if final.noop.get(0, False):
            parts.append("NOOP")
        yield " ".join(parts)
        yield from self.yield_node_meta_lines(final, final.name)

    def get_node_meta_parts(self, node, index: int) -> list[str]:
        """The JOB line's ``DIR d``, ``NOOP``, ``DONE``."""
        parts = []
        if node.dir is not None:
            parts += ["DIR", str(node.dir)]
        if node.noop.get(index, False):
            parts.append("NOOP")
        if node.done.get(index, False):
            parts.append("DONE")
        return parts

    def yield_node_meta_lines(self, node, name: str) -> Iterator[str]:
        """RETRY, SCRIPT PRE/POST, PRE_SKIP, PRIORITY, CATEGORY, ABORT-DAG-ON for one DAGMan node."""
        if node.retries is not None:
            unless = f" UNLESS-EXIT {node.retry_unless_exit}" if node.retry_unless_exit is not None else ""
            yield f"RETRY {name} {node.retries}{unless}"
        if node.pre is not None:
            yield self.script_line(name, node.pre, "PRE")
        if node.post is not None:
            yield self.script_line(name, node.post, "POST")
        if node.pre_skip_exit_code is not None:
            yield f"PRE_SKIP {name} {node.pre_skip_exit_code}"
        if node.priority != 0:
            yield f"PRIORITY {name} {node.priority}"
        if node.category is not None:
            yield f"CATEGORY {name} {node.category}"
        if node.abort is not None:
            back = f" RETURN {node.abort.dag_return_value}" if node.abort.dag_return_value is not None else ""
            yield f"ABORT-DAG-ON {name} {node.abort.node_exit_value}{back}"

    @staticmethod
    def check_settings(node, name: str) -> None:
        """The numbers DAGMan would refuse, refused here first."""
        if node.retries is not None:
            _integer(node.retries, f"RETRY of {name}", low=0)
        if node.retry_unless_exit is not None:
            _integer(node.retry_unless_exit, f"UNLESS-EXIT of {name}")
        if node.pre_skip_exit_code is not None:
            _integer(node.pre_skip_exit_code, f"PRE_SKIP of {name}", low=1, high=255)
        _integer(node.priority, f"PRIORITY of {name}")
        if node.category is not None:
            _nodes.check_node_name(node.category, "category name")
        if node.abort is not None:
            _integer(node.abort.node_exit_value, f"ABORT-DAG-ON exit value of {name}")
            if node.abort.dag_return_value is not None:
                _integer(node.abort.dag_return_value, f"ABORT-DAG-ON RETURN of {name}", low=0, high=255)
        for script in (node.pre, node.post):
            if script is not None and script.retry:
                _integer(script.retry_status, f"DEFER status of {name}")
                _integer(script.retry_delay, f"DEFER time of {name}", low=0)

    @staticmethod
    def script_line(name: str, script, which: str) -> str:
        parts = ["SCRIPT"]
        if script.retry:
            parts += ["DEFER", str(script.retry_status), str(script.retry_delay)]
        parts += [which, name, str(script.executable), *script.arguments]
        return _no_newline(" ".join(parts), f"the {which} script of {name}:")

    # -- names and edges ----------------------------------------------------------
    def get_node_name(self, node, index: int) -> str:
        return self._checked(self.node_name_formatter.generate(node.name, index))

    def node_names(self, node) -> list[str]:
        """The DAGMan names of ``node``'s underlying nodes (made once per rendering)."""
        names = self._names.get(node)
        if names is None:
            names = self._names[node] = [self.get_node_name(node, index) for index in range(len(node))]
        return names

    @staticmethod
    def _checked(name: str) -> str:
        """A generated DAGMan node name: usable, and not one of DAGMan's words."""
        if not isinstance(name, str) or not name or _BAD_GENERATED.search(name) \
                or name.upper() in RESERVED_NODE_NAMES:
            raise InvalidDAG(f"{name!r} cannot be a DAGMan node name (no whitespace, quotes, '/', '+' of splices; not PARENT, CHILD, ALL_NODES: reserved)")
        return name

    def join_node_name(self, join: JoinNode) -> str:
        return self.node_name_formatter.generate(JOIN_LAYER_NAME, join.id)

    def yield_join_node_lines(self) -> Iterator[str]:
        for join in self.join_factory.joins:
            yield f"JOB {self.join_node_name(join)} {NOOP_SUBMIT_FILE_NAME} NOOP"

    def _side(self, node, side) -> list[str]:
        if isinstance(side, JoinNode):
            return [self.join_node_name(side)]
        names = self.node_names(node)
        if not all(isinstance(i, int) and 0 <= i < len(names) for i in side):
            raise InvalidDAG(f"an edge names node indices {side!r} of {node.name!r}, which has {len(names)} nodes")
        return [names[index] for index in side]

    def yield_edge_lines(self, parent) -> Iterator[str]:
        """``PARENT ... CHILD ...`` for the edges from ``parent`` to each of its children."""
        for child in self.dag._edges.children(parent):
            edge = self.dag._edges.get(parent, child)
            for parents, children in edge.get_edges(parent, child, self.join_factory):
                parent_names, child_names = self._side(parent, parents), self._side(child, children)
                if parent_names and child_names:
                    yield f"PARENT {' '.join(parent_names)} CHILD {' '.join(child_names)}"
