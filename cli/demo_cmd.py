"""``ifjudge demo``: load the bundled demo project, users and study."""
from __future__ import annotations

import json

from cli.options import add_db, add_json


def register(sub) -> None:
    p = sub.add_parser("demo", help="load the bundled demo project, its users and a ready study")
    add_db(p, help="SQLite file (created if missing) or postgresql:// URL", creates=True)
    add_json(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from annotation.demo import load_demo
    from storage.db import connect

    result = load_demo(connect(args.db))
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "users"}))
        return 0
    print("demo project loaded" if result["created"] else "demo project already present")
    print_sign_ins(result["users"])
    return 0


def print_sign_ins(creds) -> None:
    print("Demo sign-ins (demo mode only):")
    for name, role, password in creds:
        print(f"  {role:<9} username {name:<6} password {password}")
