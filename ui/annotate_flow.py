"""What the annotate page does with the messages of its item component (ui/components/
annotate_item.js): one message per submit, skip, back, draft, ..., checked and committed through
:mod:`annotation.workspace` exactly as a form would be, and the item to show next.

The browser holds an item's answers while they are chosen; it sends them in ONE message when the
annotator submits (Ctrl+Enter), and a draft at most every few hundred milliseconds while they
answer or type. Each message carries a number (``seq``, increasing per browser tab) and the item
it was typed on (``study``, ``screen``); the page answers with its next data, which carries the
number of the newest message done (``ack``) and what came of it (:class:`Result`). A message
sent again (no answer came in time) is done once.

No Streamlit here: a :class:`Tab` works on the page's session state (any mutable mapping), so the
flow is tested without a browser (tests/test_annotate_flow.py).
"""
from __future__ import annotations

import time
from collections.abc import MutableMapping
from dataclasses import asdict, dataclass, field
from typing import Any

from annotation import workspace
from storage import studies
from storage.db import Database
from storage.errors import IFJudgeError, PermissionDenied

KINDS = ("submit", "skip", "back", "next", "replace", "draft", "guidelines", "acknowledge")
#: the messages that leave the item shown (a refused one keeps it)
LEAVING = ("submit", "skip", "back", "next", "replace")
#: the newest message done in this tab, and what came of it (session state keys)
SEQ, RESULT, NONCE = "ann_seq", "ann_result", "ann_nonce"
MAX_VALUE_CHARS = 1_000  # an answer is a category or a document id
MAX_REASON_CHARS = 20_000  # beyond workspace.REASON_MAX_CHARS: refused in words when submitted


class BadMessage(IFJudgeError):
    """A message that is not one the item component sends (nothing is done with it)."""


@dataclass(frozen=True)
class Message:
    """One message of the item component."""

    seq: int
    kind: str
    study: int | None = None
    screen: str | None = None
    token: str | None = None
    answers: dict[str, dict] | None = None


def parse_message(raw: Any) -> Message:
    """Check a message's shape (it comes from a browser) and return it.

    >>> parse_message({"seq": 3, "kind": "submit", "study": 1, "screen": "q1_2", "token": "1-4",
    ...                "answers": {"validity": {"value": "No", "reason": "vague"}}}).answers
    {'validity': {'value': 'No', 'reason': 'vague'}}
    >>> parse_message({"seq": 1, "kind": "delete everything"})
    Traceback (most recent call last):
    ...
    ui.annotate_flow.BadMessage: unknown message kind 'delete everything'
    """
    if not isinstance(raw, dict):
        raise BadMessage(f"a message is an object, got {type(raw).__name__}")
    seq, kind = raw.get("seq"), raw.get("kind")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise BadMessage(f"a message needs a positive seq, got {seq!r}")
    if kind not in KINDS:
        raise BadMessage(f"unknown message kind {kind!r}")
    study, screen, token = raw.get("study"), raw.get("screen"), raw.get("token")
    if study is not None and (not isinstance(study, int) or isinstance(study, bool)):
        raise BadMessage(f"study must be a number, got {study!r}")
    for name, v in (("screen", screen), ("token", token)):
        if v is not None and (not isinstance(v, str) or len(v) > 2_000):
            raise BadMessage(f"{name} must be a short text")
    answers = raw.get("answers")
    if answers is not None:
        if not isinstance(answers, dict) or len(answers) > 50:
            raise BadMessage("answers must be an object of at most 50 questions")
        clean = {}
        for qid, a in answers.items():
            if not isinstance(a, dict):
                raise BadMessage(f"the answer to {qid!r} must be an object")
            value, reason = a.get("value"), a.get("reason", "")
            if value is not None and (not isinstance(value, str) or len(value) > MAX_VALUE_CHARS):
                raise BadMessage(f"the answer to {qid!r} must be a short text")
            if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS:
                raise BadMessage(f"the reason of {qid!r} must be a text of at most {MAX_REASON_CHARS} characters")
            clean[str(qid)] = {"value": value, "reason": reason}
        answers = clean
    return Message(seq, kind, study, screen, token, answers)


@dataclass
class Result:
    """What came of a message: ``saved`` (the next item is shown), ``refused`` (``problems``: question
    id -> message naming the question), ``stale`` (answered in another tab at ``submitted_at``),
    ``notice`` (said on the next item, e.g. an expired claim), ``error``, ``gone`` (sent from an item
    no longer open here), ``done`` (a draft kept, guidelines shown, ...)."""

    seq: int
    kind: str
    status: str
    message: str = ""
    problems: dict[str, str] = field(default_factory=dict)
    submitted_at: float | None = None

    def as_data(self) -> dict:
        return asdict(self)


class Tab:
    """The annotate page of one browser tab (``state``: its session state) on one study.

    The screen shown is kept as it was opened (:class:`annotation.workspace.Screen`, with the
    answers current then, which a submission from this tab is checked against), under the keys
    the page has always used: ``ann_screen:<study>`` (its id) and ``ann_screen_obj:<study>``.
    Each opening gets a new ``token``: the browser draws an item anew when its token changes.
    """

    def __init__(self, db: Database, user: dict, study_id: int, state: MutableMapping[str, Any]):
        self.db, self.user, self.sid, self.state = db, user, study_id, state
        self.screen_key = f"ann_screen:{study_id}"
        self.shown_key = f"ann_screen_obj:{study_id}"
        self.token_key = f"ann_token:{study_id}"

    # -- the screen shown ---------------------------------------------------------------------

    def current(self) -> workspace.Screen | None:
        """The screen in progress; a new one is claimed when there is none (None: nothing left)."""
        if self.state.get(self.screen_key) is None:
            opened = workspace.open_screen(self.db, self.sid, self.user)
            self._shown(opened)
            return opened
        kept = self.state.get(self.shown_key)
        if kept is None or kept.screen != self.state[self.screen_key]:
            kept = workspace.open_screen(self.db, self.sid, self.user, self.state[self.screen_key])
            self._shown(kept)
        return kept

    def open(self, screen: str | None) -> None:
        """Show ``screen`` next (a submitted one, to change it), or (None) the next of the queue."""
        self.state[self.screen_key] = screen
        self.state.pop(self.shown_key, None)

    def _shown(self, screen: workspace.Screen | None) -> None:
        """A screen was opened (or none was left): it gets a new token, and its time starts."""
        self.state[self.shown_key] = screen
        if screen is None:
            self.state[self.screen_key] = None
            if (self.state.get(self.token_key) or "").endswith("-done"):
                return  # still nothing left: the same "All done"
            self.state[self.token_key] = self._new_token() + "-done"
            return
        self.state[self.token_key] = self._new_token()
        self.state[self.screen_key] = screen.screen
        self.state[f"started:{self.sid}:{screen.screen}"] = time.time()
        recent = self.state.setdefault(f"ann_recent_shown:{self.sid}", {})
        recent[screen.screen] = screen
        while len(recent) > 3:
            recent.pop(next(iter(recent)))

    def _new_token(self) -> str:
        nonce = self.state[NONCE] = self.state.get(NONCE, 0) + 1
        return f"{self.sid}-{nonce}"

    @property
    def token(self) -> str | None:
        return self.state.get(self.token_key)

    def initial_answers(self, screen: workspace.Screen) -> dict[str, dict]:
        """The answers the item opens with: a draft kept before a reload, else (going back) the
        current ones."""
        out = {it.question.id: {"value": it.current["value"], "reason": it.current["reason"] or ""}
               for it in screen.items if it.current}
        for qid, d in workspace.draft(self.db, screen, self.user).items():
            out[qid] = {"value": d["value"] if d["value"] is not None else (out.get(qid) or {}).get("value"),
                        "reason": d["reason"] or ""}
        return out

    def previous(self, past: list[str]) -> str | None:
        """The submitted screen before the one shown (the newest submitted one from a fresh screen)."""
        shown = self.state.get(self.screen_key)
        if shown in past:
            i = past.index(shown)
            return past[i - 1] if i > 0 else None
        return past[-1] if past else None

    # -- messages -----------------------------------------------------------------------------

    @property
    def ack(self) -> int:
        return self.state.get(SEQ, 0)

    @property
    def result(self) -> Result | None:
        return self.state.get(RESULT)

    def handle(self, msg: Message) -> Result | None:
        """Do what ``msg`` asks, once (None when it was done already)."""
        if msg.seq <= self.ack:
            return None
        self.state[SEQ] = msg.seq
        result = self._handle(msg)
        self.state[RESULT] = result
        return result

    def _handle(self, msg: Message) -> Result:
        done = Result(msg.seq, msg.kind, "done")
        if msg.kind == "guidelines":
            key = f"show_guidelines:{self.sid}"
            self.state[key] = not self.state.get(key, False)
            return done
        if msg.kind == "acknowledge":
            workspace.acknowledge_guidelines(self.db, self.sid, self.user)
            self.state[f"show_guidelines:{self.sid}"] = False
            self.state.pop(f"ann_guidelines:{self.sid}", None)
            return done
        if msg.kind == "draft":
            self._draft(msg)
            return done
        screen = self.current()
        shown = screen.screen if screen is not None else None
        if msg.screen != shown:
            return Result(msg.seq, msg.kind, "gone", "That was sent from an item that is no longer open in this tab: "
                          "nothing was stored from it.")
        if msg.kind == "back":
            self.open(self.previous(workspace.history(self.db, self.sid, self.user)))
            return done
        if screen is None:
            return Result(msg.seq, msg.kind, "gone", "There is no item open here.")
        if msg.kind == "skip":
            workspace.skip(self.db, screen, self.user)
            self.open(None)
            return done
        if msg.kind == "next":  # after a refused stale submission: its answers here (and their draft) are dropped
            workspace.discard_draft(self.db, screen, self.user)
            self.open(None)
            return done
        return self._submit(msg, screen, replace=msg.kind == "replace")

    def _submit(self, msg: Message, screen: workspace.Screen, *, replace: bool) -> Result:
        try:
            workspace.submit_screen(self.db, screen, self.user, msg.answers or {},
                                    started_at=self.state.get(f"started:{self.sid}:{screen.screen}"), replace=replace)
        except studies.StaleSubmission as exc:  # answered since in another tab: said, never replaced silently
            at = getattr(exc, "submitted_at", None)
            when = f" at {time.strftime('%H:%M:%S', time.localtime(at))}" if at else ""
            return Result(msg.seq, msg.kind, "stale",
                          f"Not saved: you already answered this item in another tab or window{when}. That answer is "
                          "kept as your current one; the answers on this page were not stored.", submitted_at=at)
        except PermissionDenied:  # the claim expired and the screen went to someone else
            self.open(None)
            return Result(msg.seq, msg.kind, "notice",
                          "This item was open too long: its claim expired and it was handed to another annotator, "
                          "so these answers were not stored. Here is your next item.")
        except workspace.ScreenRefused as exc:
            return Result(msg.seq, msg.kind, "refused", problems=exc.problems)
        except IFJudgeError as exc:
            return Result(msg.seq, msg.kind, "error", str(exc))
        self.open(None)
        return Result(msg.seq, msg.kind, "saved", "Replaced your earlier answer" if replace else "Saved")

    def _draft(self, msg: Message) -> None:
        """Keep the answers of an item shown here (the one open, or one just left) as its draft:
        only what changed since the last draft is written."""
        screen = self.state.get(f"ann_recent_shown:{self.sid}", {}).get(msg.screen)
        if screen is None or msg.study != self.sid or not msg.answers:
            return
        kept = self.state.setdefault(f"ann_drafted:{self.sid}:{screen.screen}", {})
        asked = {it.question.id for it in screen.items}
        for qid, a in msg.answers.items():
            if qid not in asked or kept.get(qid) == a:
                continue
            workspace.save_draft(self.db, screen, self.user, qid, value=a["value"], reason=a["reason"])
            kept[qid] = a
