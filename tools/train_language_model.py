"""Train the shipped character-level language model of one language (notebook 13), as shipped.

    python -m tools.train_language_model --language en     # four plays of Shakespeare
    python -m tools.train_language_model --language zh     # 3,263 regulated Tang poems

Trains a ``CharLM`` with the settings of ``attn.lessons.language_model.shipped.SHIPPED`` on the
language's text (seed 0, one thread, so the same machine gives the same weights bit for bit),
writes ``src/attn/lessons/language_model/weights/<language>.pt`` (float16 state_dict) and
``<language>.json`` (the record of the run), and prints the time it took. ``--out DIR`` writes
them to DIR instead, to compare with the shipped files.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread, as the training itself sets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.train_language_model",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--language", choices=("en", "zh"), required=True)
    parser.add_argument("--out", default=None, help="write the weights here instead of the package")
    args = parser.parse_args(argv)

    from attn.lessons.language_model.shipped import SHIPPED, save_shipped, train_shipped

    settings = SHIPPED[args.language]
    print(f"training the {args.language} model: {settings['model']}, {settings['training']}", flush=True)
    start = time.perf_counter()
    run = train_shipped(args.language)
    weights, record = save_shipped(run, args.language, args.out)
    total = time.perf_counter() - start
    print(f"final training loss (mean of the last 50 steps): {sum(run.losses[-50:]) / 50:.3f} nats/char")
    print(f"held-out loss: {run.held_out[-1][1]:.3f} nats/char at step {run.held_out[-1][0]}")
    print(f"wrote {weights} ({weights.stat().st_size / 1e6:.2f} MB) and {record}")
    print(f"time: {run.seconds:.0f} s of training, {total:.0f} s in all (one thread)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
