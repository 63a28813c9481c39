"""Export (lead): validated qrels and layouts, JSONL with provenance, the report — as downloads."""
from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

import streamlit as st

from annotation.outcomes import ValidationRules, store_validated_qrels
from exports.validated import FORMATS, default_study, export_project
from storage import projects
from storage.errors import IFJudgeError
from ui.session import db, pick_project, require_role

require_role("lead")
conn = db()
st.title("Export")
project = pick_project(conn, key="exp_project")["name"]
fmt = st.selectbox("Format", FORMATS, key="exp_format")
c1, c2, c3 = st.columns(3)
rules = ValidationRules(
    drop_invalid=c1.checkbox("Drop invalid instances", True, key="exp_drop_invalid"),
    drop_unnatural=c2.checkbox("Drop unnatural instances", True, key="exp_drop_unnatural"),
    drop_best_passage_mismatch=c3.checkbox("Drop best-passage mismatches", False, key="exp_drop_mismatch"),
)
try:
    with tempfile.TemporaryDirectory() as tmp:
        manifest = export_project(conn, project, fmt, tmp, rules=rules)
        files = {f["path"]: (Path(tmp) / f["path"]).read_bytes() for f in manifest["files"]}
        files["manifest.json"] = (Path(tmp) / "manifest.json").read_bytes()
except IFJudgeError as exc:
    st.error(str(exc))
    st.stop()
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
    for name, data in files.items():
        z.writestr(name, data)
st.download_button(f"Download {fmt} export (zip)", buf.getvalue(), file_name=f"{project}-{fmt}.zip", key="exp_zip")
if fmt == "trec" and "qrels.validated.txt" in files:
    st.download_button("Download validated TREC qrels", files["qrels.validated.txt"], file_name=f"{project}-validated.qrels",
                       key="exp_trec_validated")
st.json(manifest["counts"])
study = default_study(conn, projects.get_project(conn, project)["id"])
if study is not None and st.button("Store the validated qrels in the project (for evaluation)", key="exp_store"):
    st.success(f"Stored {store_validated_qrels(conn, study['id'], rules)} validated qrels rows.")
