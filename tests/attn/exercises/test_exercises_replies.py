"""The checkers' replies in both languages: the helpers that hear them (tests/_replies.py), the
tables of English sentences translated where they are shown, and every checker heard in both
languages by the tests of its notebook (tests/test_exercises_nb*.py, through the ``language``
fixture of tests/conftest.py)."""
from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attn import exercises
from attn.exercises import Feedback
from attn.language import language as speaking, tr

from _replies import CHINESE, english_words, says

HERE = Path(__file__).resolve().parent  # the checkers' tests
ROOT = Path(__file__).resolve().parents[3]
NOTEBOOK = re.compile(r"nb\d\d")


# ---- the helpers ---------------------------------------------------------------------------

def test_english_words_finds_prose_and_spares_code():
    assert english_words("你的 softmax 沿 dim=-1，nn.Linear(d_model, d_ff) 与 `x` 对了：.sum()") == []
    assert english_words("MyHead 的 forward(x, mask) 与 (out, in)", {"MyHead"}) == []
    assert english_words("Your scores are not scaled") == ["Your", "are", "not", "scaled"]
    assert english_words("请检查（the chapter）与 that.") == ["the", "chapter", "that"]
    assert english_words("抛出了 RuntimeError: some words of PyTorch. 转置之后") == []
    assert english_words("抛出了 RuntimeError: 转置 and then") == ["and", "then"]
    assert english_words("你的函数抛出了 ZeroDivisionError：division by zero") == []


def test_says_reads_a_fragment_in_the_language_of_the_moment():
    english = tr("Replace None with {what}.", what="x")
    with speaking("zh"):
        chinese = tr("Replace None with {what}.", what="x")
        assert says(chinese, "Replace None") and not says(english, "Replace None")
        assert says(chinese, "Replace None with {what}", what="x")
        assert not says(chinese, "Replace None with {what}", what="y")
    assert says(Feedback(False, english), "Replace None") and not says(chinese, "Replace None")
    assert says("With no mask: replace None with x.", "replace None")  # continued after a colon


def test_says_refuses_a_fragment_the_catalogue_does_not_hold():
    with pytest.raises(ValueError, match="fragment: expected a piece of a sentence of the catalogue"):
        says("Your function raised ZeroDivisionError", "raised ZeroDivisionError")
    with pytest.raises(ValueError, match=r"fields: expected fields of the fragment"):
        says("Replace None with x.", "Replace None", what="x")


# ---- tables of sentences: marked where written, translated where shown ---------------------

#: Chooses Chinese, then imports the checkers, as a Chinese notebook does; then prints the replies
#: to answers that show the module-level tables (the layer bugs and namings, the error hints, the
#: block's bugs), in English, then in Chinese, and the sentences the catalogue lacked.
IMPORTED_IN_CHINESE = """
import json, sys
sys.path.insert(0, "tests")
from attn.language import missing_messages, set_language
set_language("zh")
import torch.nn.functional as F
from attn.exercises import nb05, nb12
from _learner_classes import (Block, ChapterMHA, ChapterMultiHeadAttention, OutputOnlyMultiHeadAttention,
                              block_with, merge_heads, split_heads)

class Unscaled(ChapterMHA):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads, scale=False)

class Errs(ChapterMultiHeadAttention):
    def forward(self, x, mask=None):
        raise RuntimeError("view size is not compatible with input tensor's size and stride")

class DropsInEval(ChapterMultiHeadAttention):
    def forward(self, x, mask=None):
        out, weights = super().forward(x, mask)
        return F.dropout(out, 0.1), weights

class NeverDrops(Block):
    def sa(self, x, mask):
        return self.attention(x, mask)[0]

    def feed_forward(self, x):
        return self.ff[3](self.ff[1](self.ff[0](x)))

def replies():
    return [nb05.check_multi_head_attention(Unscaled).message,
            nb05.check_multi_head_attention(OutputOnlyMultiHeadAttention).message,
            nb05.check_multi_head_attention(Errs).message,
            nb05.check_multi_head_attention(DropsInEval).message,
            nb05.check_split_merge(split_heads, lambda x: x.reshape(x.shape[0], x.shape[2], -1)).message,
            nb12.check_transformer_block(block_with("no activation")).message,
            nb12.check_transformer_block(block_with("dropout in eval")).message,
            nb12.check_transformer_block(NeverDrops).message]

set_language("en")
english = replies()
set_language("zh")
chinese = replies()
print(json.dumps([english, chinese, sorted(missing_messages())]))
"""


def test_tables_are_translated_where_shown_not_at_import():
    """A table translated at import would hold Chinese here: English replies would show it, and
    the Chinese ones would ask the catalogue for sentences it does not have."""
    out = subprocess.run([sys.executable, "-c", IMPORTED_IN_CHINESE], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    english, chinese, missing = json.loads(out.splitlines()[-1])
    assert len(english) == len(chinese) == 8
    assert not [m for m in english if CHINESE.search(m)], english
    names = {"Errs", "NeverDrops", "OutputOnlyMultiHeadAttention", "Unscaled", "DropsInEval"}
    assert all(CHINESE.search(m) and not english_words(m, names) for m in chinese), chinese
    assert missing == []


# ---- every checker heard in both languages ---------------------------------------------------

def checkers() -> set[str]:
    """Every public checker of every notebook, as ``nbNN.check_name``."""
    found = set()
    for info in pkgutil.iter_modules(exercises.__path__):
        if NOTEBOOK.fullmatch(info.name):
            module = importlib.import_module(f"attn.exercises.{info.name}")
            found |= {f"{info.name}.{c}" for c in module.__all__ if c.startswith("check_")}
    return found


def heard_in_both_languages(path: Path) -> set[str]:
    """The checkers (``nbNN.check_name``) that a test of ``path`` taking ``language`` calls or is
    parametrized with, directly or through a module-level name (a table of cases)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tables = {target.id: node for node in tree.body if isinstance(node, ast.Assign)
              for target in node.targets if isinstance(target, ast.Name)}

    def named(node: ast.AST) -> set[str]:
        return {f"{n.value.id}.{n.attr}" for n in ast.walk(node) if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name) and NOTEBOOK.fullmatch(n.value.id) and n.attr.startswith("check_")}

    heard = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_") \
                and "language" in [a.arg for a in node.args.args]:
            heard |= named(node) | {c for d in node.decorator_list for c in named(d)}
            used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            heard |= {c for name in used & tables.keys() for c in named(tables[name])}
    return heard


def test_every_checker_is_heard_in_both_languages():
    """A new notebook's checkers need a test of theirs that takes ``language`` too."""
    heard = set().union(*(heard_in_both_languages(p) for p in HERE.glob("test_exercises_nb*.py")))
    assert checkers() - heard == set(), f"no test taking `language` calls {sorted(checkers() - heard)}"


def test_the_finder_sees_a_checker_in_a_body_a_decorator_and_a_table(tmp_path):
    source = tmp_path / "test_x.py"
    source.write_text("CASES = [nb01.check_a]\n"
                      "@pytest.mark.parametrize('check', [nb02.check_b])\n"
                      "def test_p(check, language):\n    nb03.check_c(1)\n    CASES\n"
                      "def test_english_only():\n    nb04.check_d(1)\n")
    assert heard_in_both_languages(source) == {"nb01.check_a", "nb02.check_b", "nb03.check_c"}
