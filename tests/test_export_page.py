"""The Export page (AppTest): a study picker with nothing chosen by default, a second unlabelled
study that does not change what the first validated, the confirmation and the unresolved block;
the export is built on request only and offered until the choices change."""

from annotation.glossary import label
from exports import validated
from storage import projects
from tests.builders import second_study


def frame(at, column):
    """The table shown with ``column`` among its headers (AppTest gives tables no key), or None."""
    return next((d.value for d in at.dataframe if column in d.value.columns), None)


def counts(at):
    """The "What the export holds" table, back to the manifest's count names."""
    names = {label(k): k for k in ["validated_qrels", "instances_checked", "instances_dropped", "instances", "documents"]}
    table = frame(at, "What")
    assert list(table.columns) == ["What", "Count"]
    return {names.get(w, w): n for w, n in zip(table["What"], table["Count"])}


def test_no_study_by_default_and_a_second_unlabelled_study_changes_nothing(export_page):
    db, sid, order, run = export_page
    at = run()
    assert at.multiselect(key="exp_studies").value == [] and "validated_qrels" not in counts(at)
    assert not at.json and "Validated qrels" not in set(frame(at, "What")["What"])
    first = counts(run([sid]))
    n_original = sum(len(d) for d in projects.qrels(db, 1, "original").values())
    assert first["validated_qrels"] == n_original - 1 and first["instances_dropped"] == 1  # order[1] rejected
    sid2 = second_study(db)
    again = run([sid])
    assert counts(again) == first  # the new, unlabelled study is not used unless picked
    # the study's name is Markdown-escaped (untrusted): read as rendered
    assert any(f"study {sid} (demo: InstructIR validation): 72/72 labels" in c.value.replace("\\", "") for c in again.caption)
    both = run([sid, sid2])
    unfinished = [w.value.replace("\\", "") for w in both.warning if "Unfinished studies" in w.value]
    # the study named in words, not a bare id: "Unfinished studies: 2" said nothing
    assert unfinished == [f"Unfinished studies: study {sid2} “second” (0 of 48 labels given). Their missing labels "
                          "count as unresolved."] and frame(both, "What") is None
    blocked = run([sid, sid2], exp_allow_incomplete=True)
    errors = [e.value.replace("\\", "") for e in blocked.error]
    assert any("unresolved judgment(s) for validated" in e and "the “Unresolved judgments” box above" in e for e in errors)
    assert not any("--" in e for e in errors)  # the page names its own controls, never a command-line flag
    assert len(blocked.dataframe) == 2  # the picked studies and the unresolved judgments
    chosen = run([sid, sid2], exp_allow_incomplete=True, exp_unresolved="keep-published")
    # the second study's unlabelled instances keep their published qrels; what the first rejected stays out
    assert counts(chosen)["validated_qrels"] == first["validated_qrels"]


def test_the_export_is_built_on_request_and_offered_until_the_choices_change(export_page, monkeypatch):
    db, sid, order, run = export_page
    calls = []
    real = validated.export_project

    def counting(*args, **kwargs):
        calls.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(validated, "export_project", counting)
    at = run([sid], build=False)
    assert calls == [] and not at.get("download_button")
    at.button(key="exp_build").click().run()
    assert calls == ["trec"] and at.get("download_button")
    at.checkbox(key="exp_drop_mismatch").check().run()  # another input: the old build is withdrawn
    assert calls == ["trec"] and not at.get("download_button")
    assert any("changed since the last build" in c.value for c in at.caption)
    at.button(key="exp_build").click().run()
    assert calls == ["trec", "trec"] and at.get("download_button")
    at.selectbox(key="exp_format").set_value("jsonl").run()
    assert calls == ["trec", "trec"] and not at.get("download_button")
    labels = set(frame(at, "Labels given").columns)
    assert {"Labels given", "Labels planned"} <= labels and "labelled" not in labels


def test_the_report_carries_the_estimates_and_the_leaderboard_change(export_page):
    db, sid, order, run = export_page
    at = run([sid], exp_format="report")
    assert not at.exception
    assert any("benchmark-wide estimates" in c.value and "1,000 bootstrap replicates" in c.value for c in at.caption)
    (shown,) = [m.value for m in at.markdown if "## Benchmark-wide estimates" in m.value]  # report.md, formatted
    assert shown.index("## Verdict") < shown.index("## Agreement (InstructIR Table 7)") < shown.index(
        "## Benchmark-wide estimates")
    assert "| valid instruction | 0.875 |" in shown  # 7 of 8 valid
    assert "## Does the leaderboard change?" in shown and "Extrapolation" not in shown
    assert not at.code  # not its Markdown source
    assert sum("report." in str(b.proto.label) for b in at.get("download_button")) == 3  # .md, .csv, .tex
