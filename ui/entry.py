"""What ``streamlit run`` starts: it runs ``app.py``, the router.

Streamlit switches to its legacy multipage mode whenever the script it was started with has a
``pages/`` folder beside it: it then serves every ``pages/*.py`` at its own address and runs it
directly when that address is typed, bypassing the router's sign-in and its per-role page list
(each page still refuses the wrong role, but the user sees a foreign menu and an access error).
Started from here, with no ``pages/`` folder beside it, ``app.py``'s ``st.navigation`` is the only
router: an address outside the user's pages gets Streamlit's "page not found" and the user's
default page.
"""
from __future__ import annotations

import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from ui import preload  # noqa: E402

preload.start()  # once per server: the pages' imports in the background (ui/preload.py)
runpy.run_path(str(ROOT / "app.py"), run_name="__main__")
