"""``jobledger._utils.ansi`` / ``.keyboard``: what HTCondor's tools import from
``htcondor2._utils``, compared with the bindings' own modules."""

from __future__ import annotations

import os
import sys

import pytest

from jobledger._utils import ansi, keyboard

theirs = pytest.importorskip("htcondor2._utils.ansi")

OPTIONS = [dict(color="GREEN", bold=True), dict(color_id=208, bold=True), dict(color_id=-3),
           dict(highlight=300, underline=True), dict(style="BLINK"), dict(style="BOLD", color="RED"),
           dict(blink=True, underline=True, highlight=17, color="BRIGHT_CYAN"), {}]


def _for(module, options: dict) -> dict:
    out = dict(options)
    if "color" in out:
        out["color"] = getattr(module.Color, out["color"])
    if "style" in out:
        out["style"] = getattr(module.Style, out["style"])
    return out


@pytest.mark.oracle
@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("tty", [True, False])
def test_ansi_output_matches_the_bindings(monkeypatch, options, tty):
    monkeypatch.setattr(ansi, "IS_TTY", tty)
    monkeypatch.setattr(theirs, "IS_TTY", tty)
    assert str(ansi.AnsiOptions(**_for(ansi, options))) == str(theirs.AnsiOptions(**_for(theirs, options)))
    assert ansi.stylize("x", ansi.AnsiOptions(**_for(ansi, options))) == \
        theirs.stylize("x", theirs.AnsiOptions(**_for(theirs, options)))
    for name in ("underline", "bold", "blink"):
        assert getattr(ansi, name)("text") == getattr(theirs, name)("text")
    for color in theirs.Color:
        assert ansi.colorize("c", getattr(ansi.Color, color.name)) == theirs.colorize("c", color)
    assert ansi.id_colorize("i", 300) == theirs.id_colorize("i", 300)
    assert ansi.highlight("h", 12) == theirs.highlight("h", 12)
    styled = ansi.stylize("plain", ansi.AnsiOptions(bold=True, color=ansi.Color.RED))
    assert ansi.strip_ansi(styled) == theirs.strip_ansi(styled) == "plain"


def test_keyboard_reads_a_key_without_waiting(monkeypatch):
    controller, terminal = os.openpty()
    with open(terminal, "r", closefd=True) as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        with keyboard.KBHit() as kb:
            assert kb.listening()
            assert kb.getch() is None and not kb.anyKeyPressed()
            os.write(controller, b"q")
            assert kb.anyKeyPressed()
            assert kb.getch() == "q"
        assert not kb.listening()
        assert kb.getch() is None  # not listening: never reads
    os.close(controller)
