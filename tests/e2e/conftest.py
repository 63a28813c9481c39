"""Browser tests: Playwright drives Debian's Chromium against a real `streamlit run ui/server.py` on a free
loopback port, on a fresh database with the demo project, with an evaluation worker beside it
(`ifjudge worker`, as `ifjudge serve` starts one)."""
from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from annotation.demo import load_demo
from cli.serve_cmd import app_command, start_worker, stop_worker
from storage.db import connect, is_url

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
# the README's screenshots are refreshed only when asked (IFJUDGE_UPDATE_SCREENSHOTS=1), so that a
# test run leaves the working tree as it was
SHOTS = ROOT / "docs" / "screenshots" if os.environ.get("IFJUDGE_UPDATE_SCREENSHOTS") == "1" else ARTIFACTS
SHOTS.mkdir(parents=True, exist_ok=True)
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
        ],
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, db_path: Path):
        self.db_path = db_path
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None
        self.worker = None

    def start(self) -> None:
        env = dict(os.environ, IFJUDGE_DB=str(self.db_path), HF_HUB_OFFLINE="1")
        if is_url(self.db_path):  # the servers of one database share a key, kept out of the user's ~/.config
            import hashlib
            import tempfile

            name = hashlib.sha256(str(self.db_path).encode()).hexdigest()[:16]
            env["IFJUDGE_SESSION_KEY_FILE"] = str(Path(tempfile.gettempdir()) / "ifjudge-test-keys" / name)
        ARTIFACTS.mkdir(exist_ok=True)
        self.log = open(ARTIFACTS / f"server-{self.port}.log", "ab")
        self.proc = subprocess.Popen(  # what `ifjudge serve` runs (ui/server.py, its options)
            app_command(self.port, "127.0.0.1", extra=("--server.fileWatcherType", "none",
                                                       "--server.websocketPingInterval", "120")),
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )
        self.worker = start_worker(self.db_path, env, "--poll", "0.5", stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"streamlit did not start; see {self.log.name}")

    def stop(self) -> None:
        if self.worker is not None:
            stop_worker(self.worker)
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def demo_db(tmp_path) -> Path:
    path = tmp_path / "e2e.db"
    load_demo(connect(path))
    return path


@pytest.fixture
def server(demo_db):
    s = Server(demo_db)
    s.start()
    yield s
    s.stop()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


def sign_in(page, url: str, name: str, password: str) -> None:
    """Sign in as ``name`` in a fresh session: the previous user's sign-in cookie (a sign-in
    survives reloads) is dropped first."""
    page.context.clear_cookies()
    page.goto(url)
    page.get_by_label("Username").fill(name)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text(f"Signed in as {name}").wait_for(timeout=20_000)


def wait_for_jobs(db_path: Path, timeout: float = 300, *, expected: int = 1) -> list[dict]:
    """Wait until at least ``expected`` evaluation jobs exist (a click queues them while its
    script runs) and none is queued or running (the worker beside the server runs them);
    returns every job."""
    from storage import jobs

    db = connect(db_path)
    deadline = time.time() + timeout
    while len(jobs.list_jobs(db)) < expected or jobs.list_jobs(db, states=jobs.ACTIVE):
        if time.time() > deadline:
            raise AssertionError(f"jobs still active after {timeout} s: {jobs.list_jobs(db, states=jobs.ACTIVE)}")
        time.sleep(0.2)
    return jobs.list_jobs(db)


def settle(page) -> None:
    """Wait until the app is not running a script (Streamlit's status widget is gone): a key
    pressed during a rerun can be lost."""
    page.wait_for_timeout(200)
    expect(page.locator("[data-testid='stStatusWidget']")).to_have_count(0, timeout=20_000)


def wait_progress(page, text: str) -> None:
    """Wait until the annotator's progress reads ``text`` (e.g. "0 of 8")."""
    expect(page.get_by_text(text, exact=True)).to_be_visible(timeout=20_000)


def chosen_option(page, key: str):
    """The annotate page's option of ``key`` shown as chosen (ui/components/annotate_item.js)."""
    return page.locator(f'.ifj-item button[aria-keyshortcuts="{key}"][aria-pressed="true"]')


def answer_by_keyboard(page, keys) -> None:
    """Press each answer key of the annotate page and check that its option shows as chosen (at
    once: the item is answered in the browser). A No moves the cursor to its reason box, so a No
    comes last, or is followed by Escape."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    expect(page.locator(".ifj-item .ifj-bar")).to_be_visible(timeout=20_000)
    for k in keys:
        page.keyboard.press(k)
        expect(chosen_option(page, k)).to_be_visible(timeout=10_000)


def type_item(page, v: str, nat: str, reason: str | None, passage: str) -> None:
    """One InstructIR item as a fast annotator types it (validity 1/2, naturalness 3/4, passage
    5/6/7, the reason of the No): the answers on an 80 ms beat, the No last and its reason 100 ms
    after it (a No moves the cursor to its reason box: the next key is the reason's), Ctrl+Enter
    80 ms later (bench/bench_submit_latency.py types so too)."""
    no = [k for k in (v, nat) if k in ("2", "4")]
    for key in [k for k in (v, nat) if k not in no] + [passage] + no:
        page.keyboard.press(key)
        page.wait_for_timeout(80)
    if reason:
        page.wait_for_timeout(20)
        page.keyboard.type(reason, delay=30)
        page.wait_for_timeout(80)
    page.keyboard.press("Control+Enter")


def choose(page, label: str, option: str) -> None:
    """Pick an option of a Streamlit selectbox (or add one to a multiselect) from the keyboard:
    type to filter, Enter."""
    for _ in range(3):  # the box may be re-rendered by a rerun between the click and the typing
        settle(page)
        try:
            box = page.get_by_role("combobox", name=label)
            box.scroll_into_view_if_needed()
            box.click()
            page.keyboard.type(option)
            expect(page.get_by_role("option").first).to_contain_text(option, timeout=5_000)
        except (AssertionError, PlaywrightError):
            page.keyboard.press("Escape")
            continue
        page.keyboard.press("Enter")
        return
    raise AssertionError(f"could not choose {option!r} in {label!r}")
