"""A project's corpus is listed in one order on both engines: doc_id byte order (SQLite's primary
key; PostgreSQL's text columns collate "C"), whatever order the documents were imported in.
Retrievers walk the corpus in this order, so a run's cut at k among exactly tied scores is the
same on either engine."""
import pytest

from storage import projects
from storage.db import connect, write

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL

# inserted out of order; byte order puts upper case and digits before lower case, and "d10" before "d2"
INSERTED = ["d2", "zeta", "d10", "Alpha", "d1", "\u0645\u062a\u0646", "_x", "a b"]


def test_documents_and_stored_documents_list_doc_ids_in_byte_order(db_path):
    db = connect(db_path)
    with write(db):
        db.execute("INSERT INTO projects (id, name, kind, created_at) VALUES (1, 'p', 'generic', '')")
        for d in INSERTED:
            db.execute("INSERT INTO documents (project_id, doc_id, title, text) VALUES (1, ?, '', ?)", [d, d + " text"])
    expected = ["Alpha", "_x", "a b", "d1", "d10", "d2", "zeta", "\u0645\u062a\u0646"]
    assert sorted(INSERTED, key=lambda d: d.encode()) == expected
    assert list(projects.documents(db, 1)) == expected
    assert list(projects.StoredDocuments(db, 1)) == expected
    assert projects.documents(db, 1)["d10"] == {"title": "", "text": "d10 text"}
