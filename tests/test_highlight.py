"""Query and instruction terms highlighted in passages (issue 20, item 1, optional): the text stays
literal (escaped), only whole words are marked; the switch on the annotate page."""
from ui.highlight import highlight_parts, terms
from tests.builders import app, item_shown, user_row


def test_terms_are_the_words_worth_marking():
    assert terms("how to cook kohlrabi", "I run a small restaurant") == {"cook", "kohlrabi", "run", "small", "restaurant"}
    assert terms("کلینیک غدد تهران") == {"کلینیک", "غدد", "تهران"}  # any script


def test_highlight_cuts_the_text_at_the_marks_and_keeps_it_whole():
    text = "Cook <script>alert(1)</script> **kohlrabi** [x](http://x) $y$\nsecond line: KOHLRABI_soup"
    parts = highlight_parts(text, {"kohlrabi", "cook"})
    assert "".join(parts) == text  # the text unchanged: each piece is set as text, never parsed
    assert parts[1::2] == ["Cook", "kohlrabi"]  # KOHLRABI_soup is one word, not a term
    assert highlight_parts("", {"x"}) == [""]


TEXT = "An endocrinology <b>clinic</b>, kohlrabi, solar panels and running"  # a word of each demo query


def test_the_switch_marks_query_words_in_the_passages(env_db):
    db, r = env_db
    db.execute("UPDATE documents SET text = ?", [TEXT])
    at = app("pages/annotate.py")
    at.session_state["user"] = user_row(db, "ann1")
    at.run()
    passages = lambda: [o["passage"] for o in item_shown(at)["item"]["questions"][2]["options"]]  # noqa: E731
    assert passages() == [TEXT] * 3  # off by default: the text as it is
    at.toggle(key="ann_highlight").set_value(True).run()
    sid = r["study_id"]
    query = at.session_state[f"ann_screen_obj:{sid}"].query
    words = terms(query, at.session_state[f"ann_screen_obj:{sid}"].instruction)
    assert passages() == [highlight_parts(TEXT, words)] * 3 and item_shown(at)["view"] == "marked"
    marked = passages()[0][1::2]
    assert marked and {w.lower() for w in marked} <= words  # the words of the shown query, as they are written
