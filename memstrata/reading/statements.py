"""Whether a user's turn is a statement worth keeping as a memory of its own.

A turn no reader reads a registry attribute from ("I've been really into pottery lately",
"been on 100mg of sertraline for three weeks") is still what the user told: ``observe``
keeps it at once, and the nightly ``summarize`` keeps one appended without ``observe``.
Both ask here. A first-person statement is kept, and so is a question that takes one of
the user's own things for granted ("how do i stop my iphone 15 screen from lighting up");
plain questions, reactions and small talk are not. A one-off request that names the user
("book me a table for two at 8") is kept too: a known misreading of the rules, left to a
trained judgement (``tests/consolidation/test_observe.py`` holds it as a strict xfail).

The judgement is the frozen rules' (:func:`memstrata.policies.extraction.is_statement`,
:func:`memstrata.policies.standing.tells_of_own_state`,
:func:`memstrata.policies.write.memorability`), called only from here.
"""

from __future__ import annotations

__all__ = ["worth_keeping"]


def worth_keeping(text: str) -> bool:
    """Is the user's ``text`` a statement worth keeping as its own memory?

    >>> worth_keeping("I've been really into pottery lately, made my first bowl")
    True
    >>> worth_keeping("what's the weather tomorrow?"), worth_keeping("ok thanks!")
    (False, False)
    """
    from memstrata.policies.extraction import is_statement
    from memstrata.policies.standing import tells_of_own_state
    from memstrata.policies.write import memorability

    text = text.strip()
    return bool(text) and (is_statement(text)
                           or (tells_of_own_state(text) and memorability(text)[0]))
