"""The Export page shows what a layout leaves out, with counts (AppTest), as the CLI says it on the
terminal: the demo in the FollowIR layout keeps its one FollowIR query only."""


def test_the_export_page_warns_with_the_counts_left_out(export_page):
    _, _, _, run = export_page
    # the page shows them as escaped Markdown ("\\:" reads ":")
    warnings = [w.value.replace("\\", "") for w in run(exp_format="followir").warning]
    assert "followir export left out 12 instances: the FollowIR layout holds queries with an original and a " \
           "changed instruction only" in warnings
    assert any(w.startswith("followir export left out 12 documents") for w in warnings)
    assert not [w for w in run(exp_format="mteb").warning if "left out" in w]  # MTEB holds the whole demo
