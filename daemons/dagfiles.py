"""``write_dag``: a DAG's description, submit files and DAGMan config on disk.

Everything is rendered first (``eventcore.dags.render``), so a DAG that
cannot be written fails before any file changes; each file is then written
beside itself and renamed into place, the DAG file last.
"""

from __future__ import annotations

import os
from pathlib import Path

from jobledger.eventcore.dags.render import DEFAULT_DAG_FILE_NAME, DAGRenderer


class DAGWriter(DAGRenderer):
    """Renders ``dag`` with submit-file paths taken against the current directory."""

    def __init__(self, dag, node_name_formatter=None):
        super().__init__(dag, node_name_formatter, cwd=Path.cwd())

    def write(self, dag_dir, dag_file_name: str | None = DEFAULT_DAG_FILE_NAME) -> Path:
        """Write the DAG's files into ``dag_dir`` (made if missing); the DAG file's path."""
        dag_dir = Path(dag_dir).absolute()
        dag_file_name = dag_file_name or DEFAULT_DAG_FILE_NAME
        files = self.files(dag_file_name)
        dag_dir.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            _replace(dag_dir / name, text)
        return dag_dir / dag_file_name


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_dag(dag, dag_dir, dag_file_name: str | None = DEFAULT_DAG_FILE_NAME, node_name_formatter=None) -> Path:
    """Write ``dag`` into ``dag_dir``; returns the DAG file's path (for ``Submit.from_dag``)."""
    return DAGWriter(dag, node_name_formatter).write(dag_dir, dag_file_name)
