"""The chat judge against a real HTTP server on a loopback port that speaks the OpenAI
chat-completions protocol (tests/fake_openai.py), through the real ``openai`` client: structured
answers, log-probability scores, retries on 429 / 500, the token estimate against what was sent,
the key from the environment, resuming without judging an item twice."""
from __future__ import annotations

import json

import pytest

from annotation.demo import load_demo
from annotation.judges.runs import prepare_run
from evaluation.judges.chat import ChatConfig
from evaluation.judges.runs import JudgeSpec, estimate, run_judge
from evaluation.judges.tokens import words_rule
from storage import judge_labels
from storage.db import connect
from storage.errors import IFJudgeError
from tests.fake_openai import FakeOpenAI, json_answer
from storage.projects import get_project


def instruction_of(body) -> str:
    """The item a request is about: the text between [INSTRUCTION] and [QUERY] of the prompt."""
    text = body["messages"][-1]["content"]
    return text.split("[INSTRUCTION]\n", 1)[1].split("\n\n[QUERY]", 1)[0]


def biased(body):
    """A judge that says No when the instruction mentions a student, Yes otherwise (p = 0.9)."""
    no = "student" in instruction_of(body)
    return json_answer("No" if no else "Yes", {"Yes": 0.1, "No": 0.9} if no else {"Yes": 0.9, "No": 0.1})


@pytest.fixture
def demo_db(tmp_path):
    db = connect(tmp_path / "j.db")
    load_demo(db)
    return db, tmp_path / "j.db"


def spec(url, **kw):
    return JudgeSpec("validity", chat=ChatConfig(url, "judge-7b", **kw))


def test_every_item_judged_once_with_structured_answers_and_scores(demo_db):
    db, _ = demo_db
    with FakeOpenAI(biased, key=instruction_of) as server:
        prepared = prepare_run(db, get_project(db, "demo"), spec(server.base_url), created_by="t")
        run_id = prepared["run"]["id"]
        result = run_judge(db, run_id)
    labels = judge_labels.labels(db, run_id)
    assert result["judged"] == len(labels) == prepared["estimate"]["requests"] == 14
    assert max(server.per_key.values()) == 1  # one request per item
    body = server.bodies[0]
    schema = body["response_format"]["json_schema"]
    assert schema["strict"] and schema["schema"]["properties"]["answer"]["enum"] == ["Yes", "No"]
    assert body["temperature"] == 0.0 and body["logprobs"] and body["top_logprobs"] == 10
    for lab in labels:
        student = "student" in next(i["instruction"] for i in __import__("storage.projects", fromlist=["x"]).instances(db, 1)
                                    if i["instance_id"] == lab["instance_id"])
        assert lab["value"] == ("No" if student else "Yes")
        assert lab["score"] == pytest.approx(0.1 if student else 0.9)  # P(Yes) from the top log-probabilities
        assert json.loads(lab["raw"]) == {"answer": lab["value"]}
        assert lab["prompt_hash"] == prepared["run"]["prompt_hash"]


def test_429_and_500_are_retried_and_the_estimate_equals_what_was_sent(demo_db):
    db, _ = demo_db
    with FakeOpenAI(biased, key=instruction_of, inject=lambda n, body: {2: 429, 3: 429, 6: 500}.get(n)) as server:
        prepared = prepare_run(db, get_project(db, "demo"), spec(server.base_url, concurrency=1), created_by="t")
        est = prepared["estimate"]
        result = run_judge(db, prepared["run"]["id"])
    assert server.failures == {429: 2, 500: 1}
    # a retry carries the same Idempotency-Key as its first try; every item its own
    keys = server.idempotency_keys
    assert keys[1] == keys[2] == keys[3] and keys[5] == keys[6] and len(set(keys)) == 14
    assert result["retries"] == 3 and result["judged"] == 14 and result["errors"] == 0
    # per item: one answered request; the retried ones were refused before an answer
    assert max(server.answered.values()) == 1 and sum(server.answered.values()) == 14
    # the words rule over the exact messages the server received, request by request
    sent_once = sum(words_rule(b["messages"]) for b in server.bodies) - sum(
        words_rule(b["messages"]) for b, n in zip(server.bodies, range(1, 18)) if n in (2, 3, 6))
    assert est["prompt_tokens"] == result["counted_tokens"] == sent_once
    totals = judge_labels.token_totals(db, prepared["run"]["id"])
    assert totals["counted_tokens"] == est["prompt_tokens"]
    assert totals["prompt_tokens"] == sum(sum(len(m["content"].split()) for m in b["messages"])
                                          for b, n in zip(server.bodies, range(1, 18)) if n not in (2, 3, 6))


def test_a_second_start_resumes_and_sends_nothing_already_judged(demo_db):
    db, _ = demo_db

    class Stop(Exception):
        pass

    def stop_after_five(done, total, message):
        if done >= 5:
            raise Stop()

    with FakeOpenAI(biased, key=instruction_of) as server:
        first = prepare_run(db, get_project(db, "demo"), spec(server.base_url, concurrency=2), created_by="t")
        with pytest.raises(Stop):
            run_judge(db, first["run"]["id"], progress=stop_after_five)
        kept = len(judge_labels.labels(db, first["run"]["id"]))
        assert 5 <= kept <= 6  # the answer in flight when it stopped is stored too
        again = prepare_run(db, get_project(db, "demo"), spec(server.base_url, concurrency=3), created_by="t")
        assert again["run"]["id"] == first["run"]["id"] and not again["created"]
        assert again["estimate"]["requests"] == 14 - kept and again["estimate"]["already_judged"] == kept
        run_judge(db, again["run"]["id"])
    assert server.requests == 14 and max(server.per_key.values()) == 1


def test_the_key_comes_from_the_environment_and_a_refusal_stops_the_run(demo_db, monkeypatch):
    db, _ = demo_db
    with FakeOpenAI(biased, key=instruction_of, api_key="sk-loopback") as server:
        prepared = prepare_run(db, get_project(db, "demo"), spec(server.base_url, api_key_env="JUDGE_KEY"), created_by="t")
        monkeypatch.delenv("JUDGE_KEY", raising=False)
        with pytest.raises(IFJudgeError, match="refused the key .401.: set JUDGE_KEY"):
            run_judge(db, prepared["run"]["id"])
        assert judge_labels.labels(db, prepared["run"]["id"]) == []
        monkeypatch.setenv("JUDGE_KEY", "sk-loopback")
        assert run_judge(db, prepared["run"]["id"])["judged"] == 14
    assert "sk-loopback" not in json.dumps(judge_labels.get_run(db, prepared["run"]["id"]))


def test_a_server_that_keeps_refusing_stops_the_run_with_what_to_do(demo_db):
    db, _ = demo_db
    with FakeOpenAI(biased, key=instruction_of, inject=lambda n, body: 429) as server:
        prepared = prepare_run(db, get_project(db, "demo"), spec(server.base_url, retries=2, concurrency=1), created_by="t")
        with pytest.raises(IFJudgeError, match="429 .rate limit. after 2 retries.*lower --concurrency"):
            run_judge(db, prepared["run"]["id"])
    assert server.requests == 3  # the first try and two retries


def test_unreadable_answers_stop_a_run_before_anything_is_stored(demo_db):
    db, _ = demo_db
    with FakeOpenAI(lambda body: ("I cannot say.", {})) as server:
        prepared = prepare_run(db, get_project(db, "demo"), spec(server.base_url, concurrency=1), created_by="t")
        with pytest.raises(IFJudgeError, match="first 5 answers could not be used.*--structured"):
            run_judge(db, prepared["run"]["id"])
    assert judge_labels.labels(db, prepared["run"]["id"]) == []


def test_a_slow_server_times_out_and_is_retried(demo_db):
    db, _ = demo_db
    with FakeOpenAI(biased, key=instruction_of, inject=lambda n, body: ("slow", 1.5) if n == 1 else None) as server:
        prepared = prepare_run(db, get_project(db, "demo"), spec(server.base_url, timeout=0.5, concurrency=1), created_by="t")
        result = run_judge(db, prepared["run"]["id"])
    assert result["retries"] == 1 and result["judged"] == 14


def test_without_log_probabilities_there_is_an_answer_and_no_score(demo_db):
    db, _ = demo_db
    with FakeOpenAI(lambda body: json_answer("Yes")) as server:
        prepared = prepare_run(db, get_project(db, "demo"), spec(server.base_url, logprobs=False, structured="none"), created_by="t")
        run_judge(db, prepared["run"]["id"])
    assert "logprobs" not in server.bodies[0] and "response_format" not in server.bodies[0]
    labels = judge_labels.labels(db, prepared["run"]["id"])
    assert {(lab["value"], lab["score"]) for lab in labels} == {("Yes", None)}


def test_the_cli_prints_the_estimate_before_queuing_a_job(demo_db, run_cli):
    _, path = demo_db
    with FakeOpenAI(biased, key=instruction_of) as server:
        code, out, err = run_cli("judge", "run", "--db", path, "--project", "demo", "--question", "validity",
                                 "--judge-url", server.base_url, "--judge-model", "judge-7b", "--price-in", "1.5",
                                 "--price-out", "2")
        assert code == 0, err
        assert server.requests == 0  # nothing sent: queued for the worker
    assert "estimate: 14 request(s)" in out and "prompt tokens" in out and "cost at most $" in out
    assert "job 1 queued" in out
    code, out, _ = run_cli("jobs", "--db", path, "--json")
    job = json.loads(out)[0]
    assert job["state"] == "queued" and job["evaluation"]["judge_run_id"] == 1


def test_settings_give_the_endpoint_and_model(demo_db, run_cli):
    _, path = demo_db
    with FakeOpenAI(biased, key=instruction_of) as server:
        assert run_cli("judge", "settings", "--db", path, "--judge-url", server.base_url, "--judge-model", "m")[0] == 0
        code, out, err = run_cli("judge", "run", "--db", path, "--project", "demo", "--question", "validity",
                                 "--foreground", "--json")
        assert code == 0, err
    result = json.loads(out)
    assert result["result"]["judged"] == 14 and server.bodies[0]["model"] == "m"
    assert result["estimate"]["prompt_tokens"] == result["result"]["counted_tokens"]
