"""``ifjudge agreement`` (file form): JSON keys, values, text table, and error messages."""
import json
from pathlib import Path

import pytest

FIX = Path(__file__).parent / "fixtures" / "agreement"
BASE_KEYS = {
    "n_items", "n_items_pairable", "percent_agreement_pairwise", "percent_agreement_unanimous", "randolph_kappa",
    "fleiss_kappa", "gwet_ac1", "krippendorff_alpha_nominal", "cohen_kappa", "cohen_kappa_mean_pairwise",
}
ORDINAL_KEYS = {"krippendorff_alpha_ordinal", "krippendorff_alpha_interval", "cohen_kappa_linear", "cohen_kappa_quadratic"}
GOLD_KEYS = {"top1_accuracy_ties_count_as_wrong", "top1_accuracy_excluding_ties", "n_majority_ties",
             "cohen_kappa_majority_vs_gold_excluding_ties"}


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_json_keys_and_values_yes_no(run_cli):
    code, out, err = run_cli("agreement", "--labels", FIX / "q1_validity.csv", "--categories", "Yes,No", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert BASE_KEYS <= set(r) and not (ORDINAL_KEYS | GOLD_KEYS) & set(r)
    # items YYY, YNY, YYY, NYY: P_o = (1 + 1/3 + 1 + 1/3) / 4 = 2/3; Randolph = (2/3 - 1/2) / (1/2) = 1/3
    assert r["randolph_kappa"] == pytest.approx(1 / 3, abs=1e-12)
    # p(Yes) = 10/12: P_e = (100 + 4) / 144; Fleiss = (2/3 - 104/144) / (40/144) = -0.2
    assert r["fleiss_kappa"] == pytest.approx(-0.2, abs=1e-12)
    assert set(r["cohen_kappa"]) == {"alice|bob", "alice|carol", "bob|carol"}
    assert r["majority_shares"]["Yes"] == 1.0
    assert r["bands"]["randolph_kappa"] == "fair" and r["bands"]["fleiss_kappa"] == "poor"


def test_json_with_gold_ordinal_and_bootstrap(run_cli, tmp_path):
    code, out, err = run_cli("agreement", "--labels", FIX / "q3_best_passage.csv", "--categories", "p1,p2,p3",
                             "--gold", FIX / "q3_gold.csv", "--ordinal", "--bootstrap", "50", "--seed", "3", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert BASE_KEYS | ORDINAL_KEYS | GOLD_KEYS <= set(r)
    assert r["n_majority_ties"] == 1
    assert r["top1_accuracy_ties_count_as_wrong"] == pytest.approx(0.6)
    assert r["top1_accuracy_excluding_ties"] == pytest.approx(0.75)
    assert r["intervals"]["fleiss_kappa"]["n_boot"] == 50
    assert set(r["intervals"]["cohen_kappa"]) == set(r["cohen_kappa"])
    assert set(r["cohen_kappa_linear_pairwise"]) == set(r["cohen_kappa"])
    code2, out2, _ = run_cli("agreement", "--labels", FIX / "q3_best_passage.csv", "--categories", "p1,p2,p3",
                             "--gold", FIX / "q3_gold.csv", "--ordinal", "--bootstrap", "50", "--seed", "3", "--json")
    assert json.loads(out2)["intervals"] == r["intervals"]


def test_undefined_is_null_with_reason(run_cli, tmp_path):
    f = write(tmp_path, "same.csv", "item,annotator,label\n" + "".join(f"i{i},{a},Yes\n" for i in range(3) for a in "xy"))
    code, out, err = run_cli("agreement", "--labels", f, "--categories", "Yes,No", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["fleiss_kappa"] is None and r["cohen_kappa"] == {"x|y": None} and r["cohen_kappa_mean_pairwise"] is None
    assert r["randolph_kappa"] == 1.0
    assert "0/0" in r["undefined_reasons"]["fleiss_kappa"]


def test_values_are_stripped_and_text_table(run_cli, tmp_path):
    f = write(tmp_path, "sp.csv", " item , annotator , label \n1, a ,Yes\n1,b, No\n2,a,Yes \n2,b,Yes\n\n")
    code, out, err = run_cli("agreement", "--labels", f, "--categories", " Yes , No ")
    assert code == 0, err
    assert "randolph_kappa" in out and "cohen_kappa a|b" in out and "—" not in out.split("cohen_kappa a|b")[0]
    code, out, _ = run_cli("agreement", "--labels", f, "--categories", "Yes,No", "--json")
    assert json.loads(out)["percent_agreement_pairwise"] == 0.5


@pytest.mark.parametrize("text, needle", [
    ("", "line 1: empty file"),
    ("item,annotator\n1,a\n", "line 1, field 'label': missing header column 'label'"),
    ("item,annotator,label\n1,a,Yes\n1,b,Maybe\n", "line 3, field 'label': label 'Maybe' is not one of the declared categories: Yes, No"),
    ("item,annotator,label\n1,a,Yes\n2,a,No\n1,a,No\n", "line 4, field 'annotator': duplicate (item '1', annotator 'a'): already given on line 2"),
    ("item,annotator,label\n1,a,Yes\n1,,No\n", "line 3, field 'annotator': empty annotator"),
    ("item,annotator,label\n1,a,Yes,extra\n", "line 2: expected 3 fields"),
    ("item,annotator,label\n", "line 1: no rows after the header"),
])
def test_bad_label_files(run_cli, tmp_path, text, needle):
    f = write(tmp_path, "bad.csv", text)
    code, out, err = run_cli("agreement", "--labels", f, "--categories", "Yes,No", "--json")
    assert code == 2 and out == ""
    assert f"{f}, {needle}" in err


def test_bad_gold_file(run_cli, tmp_path):
    labels = write(tmp_path, "l.csv", "item,annotator,label\n1,a,Yes\n1,b,No\n")
    gold = write(tmp_path, "g.csv", "item,label\n1,Yes\n1,No\n")
    code, _, err = run_cli("agreement", "--labels", labels, "--categories", "Yes,No", "--gold", gold, "--json")
    assert code == 2 and f"{gold}, line 3, field 'item': duplicate gold for item '1': already given on line 2" in err
    gold = write(tmp_path, "g2.csv", "item,label\n1,Perhaps\n")
    code, _, err = run_cli("agreement", "--labels", labels, "--categories", "Yes,No", "--gold", gold, "--json")
    assert code == 2 and f"{gold}, line 2, field 'label': label 'Perhaps'" in err


def test_bad_arguments(run_cli, tmp_path):
    labels = write(tmp_path, "l.csv", "item,annotator,label\n1,a,Yes\n1,b,No\n")
    code, _, err = run_cli("agreement", "--labels", labels, "--categories", "Yes", "--json")
    assert code == 2 and "at least 2 declared categories" in err
    code, _, err = run_cli("agreement", "--labels", labels, "--categories", "Yes,,No")
    assert code == 2 and "empty category" in err
    code, _, err = run_cli("agreement", "--labels", tmp_path / "missing.csv", "--categories", "Yes,No")
    assert code == 2 and "missing.csv" in err
