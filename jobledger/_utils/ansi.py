"""ANSI colours and styles for terminal output (the names HTCondor's tools use).

Escapes are written only when standard output is a terminal
(``is_capable()``); otherwise every helper returns the text unchanged.
``AnsiOptions`` combines bold/underline/blink with a basic colour, a
256-colour foreground (``color_id``) or background (``highlight``).
"""

from __future__ import annotations

import enum
import re
import sys

ESC = "\x1b["
ANSI_RESET = f"{ESC}0m"
ANSI_ESCAPE_RE = re.compile(r"\x1b(?:[@-Z\\\-_]|\[[0-?]*[ -/]*[@-~])")
IS_TTY = sys.stdout.isatty()


def _sgr(*codes) -> str:
    """A Select Graphic Rendition escape."""
    return f"{ESC}{';'.join(str(c) for c in codes)}m"


class Color(str, enum.Enum):
    BLACK = _sgr(30)
    RED = _sgr(31)
    GREEN = _sgr(32)
    YELLOW = _sgr(33)
    BLUE = _sgr(34)
    MAGENTA = _sgr(35)
    CYAN = _sgr(36)
    WHITE = _sgr(37)
    DARK_GREY = _sgr(90)
    BRIGHT_RED = _sgr(91)
    BRIGHT_GREEN = _sgr(92)
    BRIGHT_YELLOW = _sgr(93)
    BRIGHT_BLUE = _sgr(94)
    BRIGHT_MAGENTA = _sgr(95)
    BRIGHT_CYAN = _sgr(96)
    BRIGHT_WHITE = _sgr(97)


class Style(str, enum.Enum):
    BOLD = _sgr(1)
    UNDERLINE = _sgr(4)
    BLINK = _sgr(5)


def _byte(value: int) -> int:
    return max(0, min(255, int(value)))


class AnsiOptions:
    """A combination of styles and one colour; ``str()`` is its escape ("" for none)."""

    def __init__(self, bold: bool = False, blink: bool = False, underline: bool = False,
                 style: Style | None = None, color: Color | None = None,
                 color_id: int | None = None, highlight: int | None = None):
        self.bold = bold or style == Style.BOLD
        self.blink = blink or style == Style.BLINK
        self.underline = underline or style == Style.UNDERLINE
        self.style = style
        # the number inside the colour's escape ("31" of ESC[31m)
        self.color = None if color is None else str(color.value if isinstance(color, Color)
                                                    else color)[2:-1]
        self.color_id = None if color_id is None else _byte(color_id)
        self.highlight = None if highlight is None else _byte(highlight)

    def codes(self) -> list:
        out = [code for on, code in ((self.bold, 1), (self.underline, 4), (self.blink, 5)) if on]
        if self.color_id is not None:
            out += [38, 5, self.color_id]
        elif self.color is not None:
            out.append(self.color)
        if self.highlight is not None:
            out += [48, 5, self.highlight]
        return out

    def __str__(self) -> str:
        codes = self.codes()
        return _sgr(*codes) if codes else ""


def is_capable() -> bool:
    return IS_TTY


def _wrap(prefix: str, string: str) -> str:
    return f"{prefix}{string}{ANSI_RESET}" if is_capable() else string


def colorize(string: str, color: Color) -> str:
    return _wrap(str(color.value if isinstance(color, Color) else color), string)


def id_colorize(string: str, id: int) -> str:
    return _wrap(_sgr(38, 5, _byte(id)), string)


def highlight(string: str, id: int) -> str:
    return _wrap(_sgr(48, 5, _byte(id)), string)


def underline(string: str) -> str:
    return _wrap(Style.UNDERLINE.value, string)


def bold(string: str) -> str:
    return _wrap(Style.BOLD.value, string)


def blink(string: str) -> str:
    return _wrap(Style.BLINK.value, string)


def strip_ansi(string: str) -> str:
    return ANSI_ESCAPE_RE.sub("", string)


def stylize(string: str, options: AnsiOptions) -> str:
    return _wrap(str(options), string)
