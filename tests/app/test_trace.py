"""The chat's trace as the app shows it: each round, and an answer the user's earlier correction replaced."""

from app.main import _trace_markdown


def test_the_trace_says_when_a_correction_replaced_the_models_answer():
    seed = {"by": "seed", "action": "search", "content": "Where is the dog?",
            "hits": [{"clip": 2, "start": 60.0, "end": 90.0, "score": 0.71}]}
    answer = {"trace": [seed, {"by": "model", "action": "answer", "content": "Max.", "replaced": "Bella.",
                               "replaced_by": "correction"}],
              "seconds": 1.5, "tokens": 40}
    text = _trace_markdown(answer)
    assert "**Before round 1 (the question itself)** — search `Where is the dog?` → clip 2 (01:00–01:30" in text
    assert "**Round 1** — answer: Max. (the model said 'Bella.', which the user had corrected: the correction is given)" \
        in text
    plain = _trace_markdown({"trace": [dict(answer["trace"][1], replaced="")], "seconds": 1.0, "tokens": 9})
    assert "**Round 1** — answer: Max.\n" in plain + "\n" and "corrected" not in plain


def test_the_trace_says_when_a_note_was_quoted_for_an_invented_answer():
    answer = {"trace": [{"by": "model", "action": "answer", "content": "At 01:18 Peter says: <i>pasta</i>",
                         "replaced": "Fettini.", "replaced_by": "quote"}], "seconds": 1.0, "tokens": 9}
    assert ("answer: At 01:18 Peter says: &lt;i&gt;pasta&lt;/i&gt; (the model said 'Fettini.', which no note shown "
            "about the question holds: the note nearest the question is given)") in _trace_markdown(answer)


def test_an_answer_with_words_no_note_holds_says_so():
    answer = {"trace": [{"by": "model", "action": "answer", "content": "Fettini.", "replaced": ""}],
              "seconds": 1.0, "tokens": 9, "unfound": ["fettini"]}
    assert "**⚠ not in the notes shown: fettini (the model may have made this up)**" in _trace_markdown(answer)
    assert "not in the notes" not in _trace_markdown({**answer, "unfound": []})
