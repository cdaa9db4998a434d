"""How often the offline judge takes a wrong answer for right: another question's reference, same video.

Usage: ``python -m bench.judge_cross [--examples N]``.

Two questions of one M3-Bench video (``tests/data/m3bench``, robot and web) whose references differ after
normalization are about different things, so the judge should take neither reference as an answer to the other;
every pair it takes is a false acceptance (a few references do say the same thing in other words, so the count is
an upper bound). A judge that accepts too much inflates accuracy and pays the training reward for a wrong answer.
The count is by the rule that accepted the pair: containment, or token F1.
"""

from __future__ import annotations

import argparse
import itertools
from collections import Counter

from bench.lesson_gate import question_sets
from m3agent.eval.judge import contains, normalized_tokens, offline_match


def cross_pairs() -> list[tuple[str, str]]:
    """Every (reference, other reference of the same video) whose words differ."""
    pairs = []
    for questions in question_sets():
        references = list(dict.fromkeys(answer for _, answer in questions))
        pairs += [(a, b) for a, b in itertools.permutations(references, 2)
                  if set(normalized_tokens(a)) != set(normalized_tokens(b))]
    return pairs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10, help="accepted pairs to print")
    args = parser.parse_args(argv)
    pairs = cross_pairs()
    accepted = [(ref, other) for ref, other in pairs if offline_match(other, ref)[0]]
    by_rule = Counter("containment" if contains(other, ref) else "token F1" for ref, other in accepted)
    print(f"pairs of different references, same video: {len(pairs)}")
    print(f"taken as right by the offline judge: {len(accepted)} ({100 * len(accepted) / max(len(pairs), 1):.2f}%): "
          + ", ".join(f"{count} by {rule}" for rule, count in by_rule.most_common()))
    for ref, other in accepted[:args.examples]:
        print(f"  {other!r} for {ref!r}")


if __name__ == "__main__":
    main()
