"""Non-blocking key presses on a terminal (``KBHit``), as HTCondor's tools use it.

``KBHit(listen=True)`` (or ``with KBHit():``) switches standard input to
unbuffered, no-echo mode; ``getch()`` returns a pressed key or None without
waiting; the terminal is put back by ``reset_term()``, on leaving the
``with`` block, and at interpreter exit.
"""

from __future__ import annotations

import atexit
import select
import sys
import termios


class KBHit:
    def __init__(self, listen: bool = False) -> None:
        self.is_listening = False
        self.fd = sys.stdin.fileno()
        self.old_term = termios.tcgetattr(self.fd)
        self.new_term = termios.tcgetattr(self.fd)
        self.new_term[3] &= ~(termios.ICANON | termios.ECHO)  # lflags: no line buffer, no echo
        if listen:
            self.listen_term()
        atexit.register(self.reset_term)

    def __enter__(self) -> "KBHit":
        self.listen_term()
        return self

    def __exit__(self, *exc) -> None:
        self.reset_term()

    def listening(self) -> bool:
        return self.is_listening

    def listen_term(self) -> None:
        if not self.is_listening:
            termios.tcsetattr(self.fd, termios.TCSAFLUSH, self.new_term)
            self.is_listening = True

    def reset_term(self) -> None:
        if self.is_listening:
            termios.tcsetattr(self.fd, termios.TCSAFLUSH, self.old_term)
            self.is_listening = False

    def _hit(self) -> bool | None:
        if not self.is_listening:
            return None
        ready, _, _ = select.select([sys.stdin], [], [], 0)
        return bool(ready)

    def getch(self) -> str | None:
        return sys.stdin.read(1) if self._hit() else None

    def anyKeyPressed(self) -> bool:
        return self._hit() is True
