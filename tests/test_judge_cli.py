"""``ifjudge judge``: prompt versions (built-in with their sources; a lead's own, checked and
never changed), a run with a lead's prompt stored with every answer, and the listing of runs."""
from __future__ import annotations

import json

from annotation.demo import load_demo
from storage import judge_labels
from storage.db import connect
from tests.fake_openai import FakeOpenAI, json_answer

PROMPT = "Scenario: {{instruction}}\nSearch: {{query}}\nIs this a real user's scenario? Reply {\"answer\": \"Yes\"} or No."


def test_prompt_versions_and_a_run_with_a_lead_s_prompt(tmp_path, run_cli):
    path = tmp_path / "p.db"
    load_demo(connect(path))
    code, out, _ = run_cli("judge", "prompts", "--db", path, "--json")
    built_in = {(p["question"], p["version"]): p for p in json.loads(out)}
    assert "Figure 6" in built_in[("instfol_match", "ifir-a2-aila")]["source"]
    assert "Please give a score between 0 and 3." in built_in[("instfol_match", "ifir-a2-aila")]["user"]
    (tmp_path / "user.txt").write_text(PROMPT, encoding="utf-8")
    save = ["judge", "prompt-save", "--db", path, "--question", "validity", "--user-file", tmp_path / "user.txt"]
    code, _, err = run_cli(*save, "--version", "mine-1", "--lead", "ann1")
    assert code == 2 and "only a lead" in err
    code, _, err = run_cli(*save, "--version", "instructir-fig9a-q1", "--lead", "lead")
    assert code == 2 and "built-in" in err
    (tmp_path / "bad.txt").write_text("{{passage}} {{query}}", encoding="utf-8")
    code, _, err = run_cli("judge", "prompt-save", "--db", path, "--question", "validity", "--user-file",
                           tmp_path / "bad.txt", "--version", "bad", "--lead", "lead")
    assert code == 2 and "{{passage}}" in err
    assert run_cli(*save, "--version", "mine-1", "--lead", "lead")[0] == 0
    code, _, err = run_cli(*save, "--version", "mine-1", "--lead", "lead")
    assert code == 2 and "never changed" in err
    with FakeOpenAI(lambda body: json_answer("Yes", {"Yes": 0.6, "No": 0.4})) as server:
        code, out, err = run_cli("judge", "run", "--db", path, "--project", "demo", "--question", "validity",
                                 "--judge-url", server.base_url, "--judge-model", "m", "--prompt", "mine-1",
                                 "--foreground", "--json")
        assert code == 0, err
    sent = server.bodies[0]["messages"]
    assert len(sent) == 1 and sent[0]["content"].startswith("Scenario: ") and "Is this a real user's" in sent[0]["content"]
    db = connect(path)
    run = judge_labels.get_run(db, json.loads(out)["run_id"])
    assert run["prompt_version"] == "mine-1" and run["prompt"]["user"] == PROMPT
    assert {lab["prompt_hash"] for lab in judge_labels.labels(db, run["id"])} == {run["prompt_hash"]}
    code, out, _ = run_cli("judge", "show", "--db", path, "--run", run["id"], "--json")
    shown = json.loads(out)
    assert shown["sent"]["requests"] == 14 and shown["pending"]["requests"] == 0
    code, out, _ = run_cli("judge", "runs", "--db", path)
    assert "run 1    validity       chat m  14/14 judged" in out
