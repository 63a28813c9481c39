"""The cross-encoder reranker follows --device / auto-pick, --backend, fp16 and the batch size as
the bi-encoder does (evaluation.retrievers.encoders).

No cross-encoder weights can be installed here, so the model is a tiny BERT sequence classifier
with random weights (1 layer, hidden size 16, a 15-word vocabulary) written by the test into a
temporary directory: it exercises loading, device placement and scoring, not ranking quality."""
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
                        intermediate_size=32, max_position_embeddings=64, num_labels=1)
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


def test_backends_other_than_torch_are_refused_with_a_message(tiny_cross_encoder):
    with pytest.raises(IFJudgeError, match="cross-encoder reranker runs with --backend torch"):
        cross_encoder_reranker(str(tiny_cross_encoder), backend="onnx-int8")
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
