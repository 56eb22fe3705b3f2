"""The command palette's texts say what a command does for the user, whole (issue 30 item 9)."""

from __future__ import annotations

from tfgpu_tui.ui.app import TAB_SPECS, first_sentence, tab_actions

IMPLEMENTATION_WORDS = ("worker thread", "prefilled", "child")


def test_first_sentence_is_not_cut_at_an_abbreviation() -> None:
    doc = "Open the tab the finding links to (e.g. Monitor for GPU processes). More detail here."
    assert first_sentence(doc) == "Open the tab the finding links to (e.g. Monitor for GPU processes)"
    assert first_sentence("Read it again. Then more.") == "Read it again"


def test_palette_texts_are_whole_and_about_the_user() -> None:
    for spec in TAB_SPECS:
        for _, _, help_text in tab_actions(spec.load()):
            assert ":" in help_text, f"{spec.title}: {help_text!r} says only the key"
            assert not help_text.endswith(("(e.g", "(i.e")), help_text
            assert help_text.count("(") == help_text.count(")"), f"cut inside brackets: {help_text!r}"
            assert not any(word in help_text for word in IMPLEMENTATION_WORDS), help_text
