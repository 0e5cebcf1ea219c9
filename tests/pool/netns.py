"""A network namespace a test makes for itself: a second network identity on this machine.

``Namespace`` creates a namespace joined to this one by a veth pair with a /30 of
its own (10.2xx.y.1 here, 10.2xx.y.2 there; nothing routes beyond the pair), and
removes both on exit.  Its link can be cut and restored (``down``/``up``): a real
partition, not a stopped process.  ``prefix(hostname)`` is the command prefix that
runs a program inside it under a host name of its own (a UTS namespace too).
Needs CAP_NET_ADMIN (root in CI): without it the test is skipped naming why.
"""

from __future__ import annotations

import os
import subprocess

import pytest


def _ip(*args: str, namespace: str | None = None) -> None:
    command = ["ip", *(["netns", "exec", namespace, "ip"] if namespace else []), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    if done.returncode:
        raise OSError(f"{' '.join(command)}: {done.stderr.strip()}")


class Namespace:
    def __init__(self) -> None:
        tag = os.getpid() % 100_000
        self.name = f"jobledger-test-{tag}"
        self.outer, self.inner = f"jl{tag}a", f"jl{tag}b"     # interface names: at most 15 characters
        net = f"10.{200 + tag % 50}.{tag // 50 % 250}"
        self.here, self.there = f"{net}.1", f"{net}.2"

    def __enter__(self) -> "Namespace":
        try:
            _ip("netns", "add", self.name)
        except (OSError, FileNotFoundError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"cannot make a network namespace here (needs `ip` and CAP_NET_ADMIN): {exc}")
        try:
            _ip("link", "add", self.outer, "type", "veth", "peer", "name", self.inner)
            _ip("link", "set", self.inner, "netns", self.name)
            _ip("addr", "add", f"{self.here}/30", "dev", self.outer)
            _ip("link", "set", self.outer, "up")
            _ip("addr", "add", f"{self.there}/30", "dev", self.inner, namespace=self.name)
            _ip("link", "set", self.inner, "up", namespace=self.name)
            _ip("link", "set", "lo", "up", namespace=self.name)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_exc) -> None:
        for args in (("link", "del", self.outer), ("netns", "del", self.name)):
            try:
                _ip(*args)
            except OSError:
                pass            # already gone (the link goes with either end)

    def down(self) -> None:
        """Cut the link: packets between here and there are lost, no connection is reset."""
        _ip("link", "set", self.outer, "down")

    def up(self) -> None:
        _ip("link", "set", self.outer, "up")

    def prefix(self, hostname: str) -> list[str]:
        """Run a command inside the namespace as host ``hostname`` (it execs the command)."""
        return ["ip", "netns", "exec", self.name, "unshare", "--uts", "sh", "-c",
                f'hostname {hostname} && exec "$0" "$@"']
