"""``ifjudge users add|list|passwd|disable|enable|delete|role|sign-out``: the accounts a lab runs.

Each change that takes something away (a new password, disabling, deleting, a new role) ends every
session of that user at once: an open tab is signed out at its next click. A deleted user's labels
stay attributed to their name, which stays taken. Passwords are read from standard input
(``--password-stdin``) or typed at a prompt, never given as an argument.
"""
from __future__ import annotations

import getpass
import json
import sys

from accounts import auth
from storage import users
from storage.db import connect
from storage.errors import IFJudgeError
from cli.options import add_db, add_json


def _named(us, action: str, help: str, func):
    p = us.add_parser(action, help=help)
    add_db(p)
    p.add_argument("name")
    p.set_defaults(func=func)
    return p


def register(sub) -> None:
    p = sub.add_parser("users", help="manage users: add, list, change a password, disable, enable, delete, change a role")
    us = p.add_subparsers(dest="users_command", required=True, metavar="ACTION")
    a = _named(us, "add", "add a user", run_add)
    a.add_argument("--role", required=True, choices=users.ROLES)
    a.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    ls = us.add_parser("list", help="list users with their role and status (active, disabled, deleted)")
    add_db(ls)
    add_json(ls)
    ls.set_defaults(func=run_list)
    pw = _named(us, "passwd", "give a user a new password (ends every session of that user)", run_passwd)
    pw.add_argument("--password-stdin", action="store_true", help="read the new password from standard input")
    _named(us, "disable", "stop a user from signing in (ends every session; labels stay)", run_disable)
    _named(us, "enable", "let a disabled user sign in again", run_enable)
    _named(us, "delete", "delete a user: no sign-in, the name stays taken, their labels stay attributed to it",
           run_delete)
    r = _named(us, "role", "give a user another role (ends every session of that user)", run_role)
    r.add_argument("role", choices=users.ROLES)
    _named(us, "sign-out", "end every session of a user (every browser signed in as them)", run_sign_out)


def read_password(args, prompt: str) -> str:
    """A password from standard input (``--password-stdin``, one line) or typed at a prompt."""
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass(prompt)
    if not password:
        raise IFJudgeError("empty password: give one on standard input with --password-stdin")
    problem = auth.password_problem(password)
    if problem:
        raise IFJudgeError(problem)
    return password


def run_add(args) -> int:
    password = read_password(args, f"Password for {args.name}: ")
    uid = auth.add_user(connect(args.db), args.name, args.role, password)
    print(f"added {args.role} {args.name} (id {uid})")
    return 0


def run_list(args) -> int:
    rows = users.list_users(connect(args.db), with_status=True)
    if args.json:
        print(json.dumps(rows))
    else:
        for r in rows:
            print(f"{r['name']}\t{r['role']}\t{r['status']}")
    return 0


def _ended(n: int) -> str:
    return f"; {n} open session(s) ended" if n else ""


def run_passwd(args) -> int:
    password = read_password(args, f"New password for {args.name}: ")
    n = auth.change_password(connect(args.db), args.name, password)
    print(f"password of {args.name} changed{_ended(n)}")
    return 0


def run_disable(args) -> int:
    n = auth.set_disabled(connect(args.db), args.name, True)
    print(f"disabled {args.name}{_ended(n)}")
    return 0


def run_enable(args) -> int:
    auth.set_disabled(connect(args.db), args.name, False)
    print(f"enabled {args.name}")
    return 0


def run_delete(args) -> int:
    n = auth.delete_user(connect(args.db), args.name)
    print(f"deleted {args.name} (their labels stay attributed to {args.name}){_ended(n)}")
    return 0


def run_role(args) -> int:
    n = auth.set_role(connect(args.db), args.name, args.role)
    print(f"{args.name} is now {args.role}{_ended(n)}")
    return 0


def run_sign_out(args) -> int:
    print(f"{auth.sign_out_everywhere(connect(args.db), args.name)} session(s) of {args.name} ended")
    return 0
