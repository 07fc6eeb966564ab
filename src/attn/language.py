"""The course's two languages: English (the source text) and Chinese (中文).

Every sentence the course shows a learner -- an explorer's title, control labels and readout,
a checker's feedback, a figure's text, a line a notebook prints -- is written once, in
English, inside a call to :func:`tr`. ``tr`` looks the sentence up in the message catalogue
of the current language and returns its translation (or the English sentence itself when the
language is English)::

    from attn.language import tr

    print(tr("largest difference < 1e-12: {ok}", ok=True))

The catalogues follow gettext's convention for translators: one ``.po`` file per language,
``attn/locale/<language>/LC_MESSAGES/attn.po``, compiled to the ``.mo`` file beside it, which
is what Python's ``gettext`` reads. ``python -m tools.catalogue`` extracts the English
sentences, updates the ``.po`` files and compiles them (docs/translating.md).

A notebook chooses its language in its first code cell, with :func:`set_language`; nothing
else differs between a notebook and its Chinese twin.
"""
from __future__ import annotations

import contextlib
import gettext
from collections.abc import Iterator
from functools import cache
from importlib import resources

#: The languages of the course: code -> the language's own name.
LANGUAGES: dict[str, str] = {"en": "English", "zh": "中文"}

#: The gettext domain: the catalogues are ``locale/<language>/LC_MESSAGES/attn.mo``.
DOMAIN = "attn"

_current = "en"


def set_language(language: str) -> None:
    """Show every later explorer, checker message, figure and printed line in ``language``.

    Args:
        language: ``"en"`` (English) or ``"zh"`` (中文).
    """
    global _current
    _current = _checked(language)


def get_language() -> str:
    """The current language's code: ``"en"`` or ``"zh"``."""
    return _current


@contextlib.contextmanager
def language(code: str) -> Iterator[None]:
    """Switch to language ``code`` for a ``with`` block, then back to the one before."""
    before = get_language()
    set_language(code)
    try:
        yield
    finally:
        set_language(before)


def tr(message: str, /, **fields: object) -> str:
    """``message`` in the current language, with its ``{fields}`` filled in.

    ``message`` is the English sentence, and the key of its translation in the catalogue; its
    fields are named (``{d_k}``, not ``{}``), so that a translation may put them in another
    order. A field's format goes in the field (``{err:.2f}``) or is applied before the call.

    Args:
        message: the English text, with named ``str.format`` fields.
        fields: the values of those fields.

    Returns:
        The translated text, formatted with ``fields`` (when there are any).
    """
    if not isinstance(message, str):
        raise TypeError(f"message: expected a str, got {type(message).__name__}")
    text = _catalogue(_current).gettext(message)
    return text.format(**fields) if fields else text


def mark(message: str, /) -> str:
    """``message`` unchanged: marks an English sentence for the catalogue.

    For a sentence stored now (a label in a table, a default argument) and translated when it
    is shown, with ``tr(label)``: ``tr`` of a variable cannot be found by the extractor, so
    the sentence itself is marked where it is written.
    """
    return message


def missing_messages() -> set[str]:
    """The messages that ``tr`` was asked for and found no translation of, in any language."""
    return set(_missing)


def catalogue_path(code: str) -> str:
    """The compiled catalogue (``.mo``) of language ``code``, shipped with the package."""
    code = _checked(code)
    return str(resources.files("attn") / "locale" / code / "LC_MESSAGES" / f"{DOMAIN}.mo")


@cache
def _catalogue(code: str) -> gettext.NullTranslations:
    """The translations of ``code``; English is the source text, so it has none."""
    if code == "en":
        return gettext.NullTranslations()
    with open(catalogue_path(code), "rb") as f:
        translations = gettext.GNUTranslations(f)
    translations.add_fallback(_Missing())
    return translations


_missing: set[str] = set()


class _Missing(gettext.NullTranslations):
    """The fallback of a catalogue: records a message it lacks, and shows it in English."""

    def gettext(self, message: str) -> str:
        _missing.add(message)
        return message


def _checked(code: object) -> str:
    if not isinstance(code, str):
        raise TypeError(f"language: expected a str, one of {sorted(LANGUAGES)}, got {type(code).__name__}")
    if code not in LANGUAGES:
        raise ValueError(f"language: expected one of {sorted(LANGUAGES)}, got {code!r}")
    return code
