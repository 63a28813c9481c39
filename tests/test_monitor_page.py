"""The Monitor page (AppTest): the kappa heatmap prints its value in each cell ("—" with the reason
on hover when kappa is undefined), and the question's agreement report is a table, not JSON."""
import json

import pyarrow as pa

from tests.test_pages import _label_demo, app, env_db, user_row  # noqa: F401  (fixture)


def _heatmap(at):
    chart = next(c for c in at.get("vega_lite_chart") if "Pairwise Cohen kappa" in c.proto.spec)
    spec = json.loads(chart.proto.spec)
    rows = [r for d in chart.proto.datasets for r in pa.ipc.open_stream(d.data.data).read_all().to_pylist()]
    return spec, rows


def test_heatmap_cells_show_their_value_or_a_dash_with_the_reason(env_db):
    db, r = env_db
    _label_demo(db, r["study_id"])  # validity: ann1 and ann2 all Yes (kappa 0/0), ann3 all No
    at = app("pages/monitor.py")
    at.session_state["user"] = user_row(db, "lead")
    at.run()
    assert not at.exception and not at.json
    spec, data = _heatmap(at)
    mark = lambda layer: layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"]  # noqa: E731
    text_layer = next(layer for layer in spec["layer"] if mark(layer) == "text")  # the numbers in the cells
    assert text_layer["encoding"]["text"]["field"] == "text"
    assert "Why undefined" in {t["title"] for t in text_layer["encoding"]["tooltip"]}
    cells = {(c["a"], c["b"]): c for c in data}
    assert cells[("ann1", "ann2")]["text"] == "—" and "0/0" in cells[("ann1", "ann2")]["why"]
    assert cells[("ann1", "ann3")]["text"] == "0.000" and cells[("ann3", "ann1")]["why"] == ""
    report = next(d.value for d in at.dataframe if "Why undefined" in d.value.columns)
    assert list(report.columns) == ["Statistic", "Value", "Band", "Why undefined"]
    fleiss = report[report["Statistic"] == "Fleiss kappa"].iloc[0]
    assert fleiss["Value"] == "-0.500"
    assert at.selectbox(key="mon_question").format_func("validity") == "Valid instruction"
