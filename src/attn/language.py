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
import re
import string
from collections.abc import Iterator
from functools import lru_cache
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

    Every named field of ``message`` must be given, and fit its format: a sentence is never
    shown with a ``{field}`` left in it. Fields that ``message`` does not use may be given (one
    call can fill whichever sentence of a table was chosen). Called without fields, a message
    that has none is returned as it is translated, braces that are not named fields
    (``h_{t-1}``) included; a template whose fields the caller fills later is
    ``translation(message)``.

    Args:
        message: the English text, with named ``str.format`` fields.
        fields: the values of those fields.

    Returns:
        The translated text, formatted with ``fields`` (when there are any).

    Raises:
        TypeError: ``message`` not a str, or a field's value that its format cannot take
            (``{x:.2f}`` given a str), naming the field and the message.
        ValueError: a named field of ``message`` (or of its translation) not given, naming the
            message, the missing fields and the ones given.
    """
    text = translation(message)
    needed = message_fields(message)
    if not fields:
        if needed:
            raise ValueError(f"fields: expected the field(s) {sorted(needed)} of the message {message!r}, "
                             f"got none: tr(message, {sorted(needed)[0]}=...)")
        return text
    missing = needed - fields.keys()
    if missing:
        raise ValueError(f"fields: expected the field(s) {sorted(needed)} of the message {message!r}, "
                         f"got {sorted(fields)}: {sorted(missing)} missing")
    try:
        return text.format(**fields)
    except (KeyError, IndexError, AttributeError) as err:  # a field that is not among the message's
        if text != message and _formats(message, fields):
            raise ValueError(f"fields: the {_current} translation of {message!r} is {text!r}, whose fields "
                             f"{sorted(message_fields(text))} differ from the message's {sorted(needed)} "
                             f"(python -m tools.catalogue --check lists such translations)") from err
        raise ValueError(f"message: expected named fields such as {{ratio:.2f}} (a literal brace written "
                         f"{{{{ or }}}}), got {message!r}, in which str.format reads the field "
                         f"{err.args[0] if err.args else err!r}") from err
    except (ValueError, TypeError) as err:  # a value its format cannot take
        raise _format_error((message, text), fields, err) from err


def translation(message: str, /) -> str:
    """``message`` in the current language, its ``{fields}`` left as they are: the template that
    ``tr`` fills. For a sentence whose fields are filled later by the caller, or a test that
    reads the catalogue; a missing translation is recorded (``missing_messages``) and the
    English returned, as with ``tr``.

    Args:
        message: the English text.
    """
    if not isinstance(message, str):
        raise TypeError(f"message: expected a str, got {type(message).__name__}")
    return _catalogue(_current).gettext(message)


def _formats(template: str, fields: dict[str, object]) -> bool:
    """Whether ``template.format(**fields)`` works."""
    try:
        template.format(**fields)
    except (KeyError, IndexError, AttributeError, ValueError, TypeError):
        return False
    return True


@lru_cache(maxsize=4096, typed=True)
def message_fields(text: str) -> frozenset[str]:
    """The names of the named ``str.format`` fields of ``text``: ``{ratio:.2f}`` and ``{d_k}``
    are fields; ``{{`` is a literal brace, and braces around what is not a name (``h_{t-1}``,
    ``{}``) are not fields. Text whose braces ``str.format`` cannot read has none."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:  # a lone "{" or "}": not a template
        return frozenset()
    names = set()
    for _, name, _, _ in parsed:
        base = re.split(r"[.\[]", name, maxsplit=1)[0] if name else ""
        if base.isidentifier():
            names.add(base)
    return frozenset(names)


def _format_error(texts: tuple[str, str], fields: dict[str, object], err: Exception) -> TypeError:
    """The field whose value its format spec cannot take, in the message or its translation
    (``texts``), as a TypeError naming the field and the message."""
    message = texts[0]
    for text in texts:
        try:
            parsed = list(string.Formatter().parse(text))
        except ValueError:  # a lone brace: the fallback below says so
            continue
        for _, name, spec, conversion in parsed:
            if name in fields:
                value = fields[name]
                shown = repr(value) if conversion == "r" else str(value) if conversion == "s" else value
                try:
                    format(shown, spec)
                except (ValueError, TypeError):
                    return TypeError(f"{name}: expected a value that the format {{{name}:{spec}}} of the "
                                     f"message {message!r} takes, got {type(value).__name__} {value!r:.60}")
    return TypeError(f"fields: the message {message!r} could not be formatted with {sorted(fields)}: {err}")


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


@lru_cache(maxsize=None, typed=True)
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
