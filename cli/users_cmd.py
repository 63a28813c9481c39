"""``ifjudge users add|list``."""
from __future__ import annotations

import getpass
import json
import sys

from annotation import auth
from storage import users
from storage.db import connect
from storage.errors import IFJudgeError
from cli.options import add_db, add_json


def register(sub) -> None:
    p = sub.add_parser("users", help="manage users")
    us = p.add_subparsers(dest="users_command", required=True, metavar="ACTION")
    a = us.add_parser("add", help="add a user")
    add_db(a)
    a.add_argument("name")
    a.add_argument("--role", required=True, choices=users.ROLES)
    a.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    a.set_defaults(func=run_add)
    ls = us.add_parser("list", help="list users")
    add_db(ls)
    add_json(ls)
    ls.set_defaults(func=run_list)


def run_add(args) -> int:
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass(f"Password for {args.name}: ")
    if not password:
        raise IFJudgeError("empty password: give one on standard input with --password-stdin")
    uid = auth.add_user(connect(args.db), args.name, args.role, password)
    print(f"added {args.role} {args.name} (id {uid})")
    return 0


def run_list(args) -> int:
    rows = users.list_users(connect(args.db))
    if args.json:
        print(json.dumps(rows))
    else:
        for r in rows:
            print(f"{r['name']}\t{r['role']}")
    return 0
