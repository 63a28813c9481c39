"""The cross-encoder reranker follows --device / auto-pick, --backend, fp16 and the batch size as
the bi-encoder does (evaluation.retrievers.encoders).

No cross-encoder weights can be installed here, so the model is a tiny BERT sequence classifier
with random weights (1 layer, hidden size 16, a 15-word vocabulary) written by the test into a
temporary directory: it exercises loading, device placement and scoring, not ranking quality.
Its weights are drawn with a standard deviation of 0.3 (BERT's default 0.02 gives every pair a
score of 0.500 +- 0.0001, too flat to compare backends on)."""
import json

import numpy as np
import pytest
import torch

from evaluation.retrievers import encoders
from evaluation.retrievers.rerank import cross_encoder_reranker
from storage.errors import IFJudgeError

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + "red apple green pear a the robot lawn mower cheap".split()
PAIRS = [("red apple", "a red apple"), ("red apple", "green pear"), ("cheap robot", "the robot lawn mower")]


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    path = tmp_path_factory.mktemp("tiny_ce")
    (path / "vocab.txt").write_text("\n".join(WORDS) + "\n")
    BertTokenizer(str(path / "vocab.txt")).save_pretrained(path)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, num_labels=1, initializer_range=0.3)
    BertForSequenceClassification(config).save_pretrained(path)
    return path


def test_auto_picks_the_first_available_device_and_scores_as_the_cross_encoder(tiny_cross_encoder):
    from sentence_transformers import CrossEncoder

    r = cross_encoder_reranker(str(tiny_cross_encoder))
    first = encoders.available_devices()[0]  # CUDA, then MPS, then the CPU ("cpu" on this machine)
    assert r.device == first and r.backend == "torch"
    assert next(r.model.parameters()).device.type == first
    assert r.precision == ("fp16" if first == "cuda" else "fp32")
    assert r.batch_size == {"cuda": 128, "mps": 64, "cpu": 32}[first]
    if first == "cpu":  # the CPU name is the model path alone, as before devices were chosen
        assert r.name == str(tiny_cross_encoder.resolve())
        want = CrossEncoder(str(tiny_cross_encoder), device="cpu").predict(PAIRS)
        assert [float(s) for s in r.score_pairs(PAIRS)] == [float(s) for s in want]


@pytest.mark.parametrize("device", encoders.available_devices())
def test_each_available_device_runs_the_model_there(tiny_cross_encoder, device):
    r = cross_encoder_reranker(str(tiny_cross_encoder), device=device, batch_size=2)
    assert r.device == device and r.batch_size == 2
    param = next(r.model.parameters())
    assert param.device.type == device
    fp16 = device == "cuda"  # half precision on CUDA by default, as the bi-encoder
    assert param.dtype == (torch.float16 if fp16 else torch.float32)
    assert r.name.endswith(" [fp16]") is fp16
    scores = [float(s) for s in r.score_pairs(PAIRS)]
    assert len(scores) == 3 and all(s == s for s in scores)  # no NaN in half precision either
    if device == "cuda":
        assert cross_encoder_reranker(str(tiny_cross_encoder), device="cuda", fp16=False).precision == "fp32"


def test_an_unavailable_or_unknown_device_is_refused_by_name(tiny_cross_encoder, monkeypatch):
    monkeypatch.setattr(encoders, "available_devices", lambda: ["cpu"])  # a CPU-only machine
    with pytest.raises(IFJudgeError, match="device 'cuda' is not available here; available: cpu"):
        cross_encoder_reranker(str(tiny_cross_encoder), device="cuda")
    with pytest.raises(IFJudgeError, match="unknown device 'tpu'"):
        cross_encoder_reranker(str(tiny_cross_encoder), device="tpu")
    assert cross_encoder_reranker(str(tiny_cross_encoder), device="auto").device == "cpu"


# 40 seeded pairs of 1-2 query words and 1-8 document words: batches of 7 pad to different lengths
_rng = np.random.default_rng(0)
MANY = [(" ".join(_rng.choice(WORDS[5:], 2)), " ".join(_rng.choice(WORDS[5:], _rng.integers(1, 9)))) for _ in range(40)]


@pytest.mark.parametrize("backend, bound", [("onnx", 1e-5), ("onnx-int8", 0.02)])
def test_onnx_backends_score_as_torch(tiny_cross_encoder, tmp_path, backend, bound):
    torch_scores = np.array(cross_encoder_reranker(str(tiny_cross_encoder), device="cpu").score_pairs(MANY))
    assert torch_scores.std() > 0.02  # the pairs are told apart: agreement below means something
    r = cross_encoder_reranker(str(tiny_cross_encoder), device="cpu", backend=backend, batch_size=7, cache_dir=tmp_path)
    scores = np.array(r.score_pairs(MANY))
    # fp32 ONNX: the same numbers up to float rounding; int8 weights: within 0.02 (measured 0.006 on
    # this model, spread 0.03), the same order of most pairs
    assert np.abs(scores - torch_scores).max() <= bound
    assert np.corrcoef(scores, torch_scores)[0, 1] > (0.9999 if backend == "onnx" else 0.98)
    assert r.backend == backend and r.precision == ("int8" if backend == "onnx-int8" else "fp32")
    # the name tells the scores of each backend (and ONNX recipe) apart: no run of one is reused for another
    assert r.name == f"{tiny_cross_encoder.resolve()} [{backend}{encoders.recipe_tag(backend)}]"
    # exported once under <cache_dir>/onnx/: a second reranker loads the same file
    (folder,) = (tmp_path / "onnx").iterdir()
    made = {f.name: f.stat().st_mtime_ns for f in folder.iterdir()}
    assert set(made) == ({"model.onnx", "model_int8.onnx"} if backend == "onnx-int8" else {"model.onnx"})
    again = cross_encoder_reranker(str(tiny_cross_encoder), device="cpu", backend=backend, batch_size=7, cache_dir=tmp_path)
    assert {f.name: f.stat().st_mtime_ns for f in folder.iterdir()} == made
    # the same batches give the same scores (int8 activations are quantised per batch)
    assert list(again.score_pairs(MANY)) == list(scores)


def test_onnx_backends_follow_the_device_rules(tiny_cross_encoder, tmp_path, monkeypatch):
    r = cross_encoder_reranker(str(tiny_cross_encoder), backend="onnx-int8", cache_dir=tmp_path)
    first = encoders.available_devices()[0]
    assert r.device == first and r.batch_size == {"cuda": 128, "mps": 64, "cpu": 32}[first]
    if first != "cuda":  # ONNX Runtime's CPU provider (its CUDA one only for a CUDA device)
        assert r.runner.session.get_providers() == ["CPUExecutionProvider"]
    monkeypatch.setattr(encoders, "available_devices", lambda: ["cpu"])  # a CPU-only machine
    with pytest.raises(IFJudgeError, match="device 'cuda' is not available here; available: cpu"):
        cross_encoder_reranker(str(tiny_cross_encoder), device="cuda", backend="onnx", cache_dir=tmp_path)
    with pytest.raises(IFJudgeError, match="unknown backend 'tensorrt'"):
        cross_encoder_reranker(str(tiny_cross_encoder), backend="tensorrt")


def test_eval_run_passes_device_to_the_reranker(tiny_cross_encoder, demo, db_path, run_cli, monkeypatch):
    from storage.eval_runs import list_eval_runs, load_eval_run

    code, out, err = run_cli("eval", "run", "--db", db_path, "--project", "demo", "--model", "bm25", "--template",
                             "query", "--k", "3", "--rerank", tiny_cross_encoder, "--device", "cpu")
    assert code == 0, err
    db, _ = demo
    stored = load_eval_run(db, list_eval_runs(db, db.execute("SELECT id FROM projects WHERE name='demo'").fetchone()[0])[0]["id"])
    assert stored["settings"]["rerank"] == str(tiny_cross_encoder.resolve())
    monkeypatch.setattr(encoders, "available_devices", lambda: ["cpu"])
    code, out, err = run_cli("eval", "run", "--db", db_path, "--project", "demo", "--model", "bm25", "--template",
                             "query", "--k", "3", "--rerank", tiny_cross_encoder, "--device", "cuda", "--no-reuse")
    assert code == 2 and "device 'cuda' is not available here" in err


def test_a_background_job_reranks_on_the_device_and_backend_given(tiny_cross_encoder, demo, db_path, run_cli, tmp_path):
    from evaluation.jobs import work
    from storage import jobs as job_store
    from storage.eval_runs import load_eval_run

    base = ["eval", "run", "--db", db_path, "--project", "demo", "--model", "bm25", "--template", "query", "--k", "3",
            "--rerank", tiny_cross_encoder, "--cache-dir", tmp_path / "cache", "--background", "--json"]
    code, out, err = run_cli(*base, "--device", "cpu", "--backend", "onnx-int8", "--batch-size", "4")
    assert code == 0, err
    db, _ = demo
    job = job_store.get_job(db, json.loads(out)["job_id"])
    assert job["parameters"]["encoder"] == {"device": "cpu", "backend": "onnx-int8", "batch_size": 4, "fp16": True}
    code, out, err = run_cli(*base, "--device", "cuda", "--qrels-version", "changed")
    assert code == 0, err
    work(db_path, once=True)
    done, refused = (job_store.get_job(db, j) for j in (job["id"], json.loads(out)["job_id"]))
    assert done["state"] == "finished", done["error"]
    stored = load_eval_run(db, done["result_ids"][0])
    assert stored["settings"]["rerank"] == f"{tiny_cross_encoder.resolve()} [onnx-int8{encoders.recipe_tag('onnx-int8')}]"
    if "cuda" not in encoders.available_devices():  # the worker was told the device: it refuses an absent one
        assert refused["state"] == "failed" and "device 'cuda' is not available here" in refused["error"]


@pytest.mark.parametrize("cap, threads", [("1", 1), (None, 0)])
def test_onnx_sessions_keep_the_workers_thread_cap(tiny_cross_encoder, tmp_path, monkeypatch, cap, threads):
    """`ifjudge worker` caps torch and BLAS at one thread fewer than the cores (OMP_NUM_THREADS) so
    the web app beside it keeps a core; ONNX Runtime, which does not read that variable, follows it
    too (0: its own default, one thread per physical core)."""
    if cap is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", cap)
    r = cross_encoder_reranker(str(tiny_cross_encoder), device="cpu", backend="onnx", cache_dir=tmp_path)
    assert r.runner.session.get_session_options().intra_op_num_threads == threads
