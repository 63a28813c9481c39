"""Accounts and sign-in: passwords hashed with scrypt, sign-in with its back-off, the accounts a lead
runs (``auth``), and the sign-in sessions a browser finds again after a reload through a signed
cookie (``session_tokens``; docs/deployment.md, "Sessions and cookies"). Not annotation: a layer
over :mod:`storage` that the pages, the CLI and the demo call (tests/test_layers.py). No Streamlit.
"""
from accounts.auth import (SignInFailed, add_user, change_password, delete_user, forget_old, hash_password,
                           password_problem, set_disabled, set_role, sign_in, sign_out_everywhere, verify_password)
from accounts.session_tokens import (check_session, cookie_digest, default_key_path, digest, end_session, load_key,
                                     read_session, secret_key, start_session)

__all__ = [
    "SignInFailed", "add_user", "change_password", "delete_user", "forget_old", "hash_password", "password_problem",
    "set_disabled", "set_role", "sign_in", "sign_out_everywhere", "verify_password",
    "check_session", "cookie_digest", "default_key_path", "digest", "end_session", "load_key", "read_session",
    "secret_key", "start_session",
]
