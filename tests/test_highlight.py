"""Query and instruction terms highlighted in passages (issue 20, item 1, optional): the text stays
literal (escaped), only whole words are marked; the switch on the annotate page."""
from ui.highlight import highlight_markdown, terms
from ui.markdown import md_escape
from tests.builders import app, user_row


def test_terms_are_the_words_worth_marking():
    assert terms("how to cook kohlrabi", "I run a small restaurant") == {"cook", "kohlrabi", "run", "small", "restaurant"}
    assert terms("کلینیک غدد تهران") == {"کلینیک", "غدد", "تهران"}  # any script


def test_highlight_escapes_everything_but_the_marks():
    text = "Cook <script>alert(1)</script> **kohlrabi** [x](http://x) $y$\nsecond line: KOHLRABI_soup"
    md = highlight_markdown(text, {"kohlrabi", "cook"})
    # without the marks, exactly the escaped text (line by line)
    plain = md.replace(":orange-background[Cook]", "Cook").replace(":orange-background[kohlrabi]", "kohlrabi")
    assert plain == "  \n".join(md_escape(line) for line in text.split("\n"))
    assert md.count(":orange-background[") == 2  # KOHLRABI_soup is one word, not a term
    assert "<script>" not in md and "](" not in md and "**" not in md


def test_the_switch_marks_query_words_in_the_passages(env_db):
    db, r = env_db
    db.execute("UPDATE documents SET text = 'An endocrinology <b>clinic</b> treats glands'")
    at = app("pages/annotate.py")
    at.session_state["user"] = user_row(db, "ann1")
    at.run()
    assert "An endocrinology <b>clinic</b> treats glands" in [t.value for t in at.text]  # off by default
    at.toggle(key="ann_highlight").set_value(True).run()
    marked = [m.value for m in at.markdown if "orange-background" in m.value]
    sid = r["study_id"]
    query = at.session_state[f"ann_screen_obj:{sid}"].query
    words = terms(query, at.session_state[f"ann_screen_obj:{sid}"].instruction)
    assert len(marked) == 3 and marked[0] == highlight_markdown("An endocrinology <b>clinic</b> treats glands", words)
    assert "An endocrinology <b>clinic</b> treats glands" not in [t.value for t in at.text]
