"""Users and API tokens. A token is 32 random bytes shown once; the database keeps its SHA-256 only
(a token has the entropy of a key, so a slow password hash would add nothing), and looks it up by
that digest, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time

from sqlalchemy import select
from sqlalchemy.orm import Session

from solbench.serve.models import Token, User

USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
TOKEN_PREFIX = "sb_"


class AuthError(Exception):
    """No user for this request: 401 (no or unknown token) or 403 (not allowed)."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def create_user(session: Session, name: str, admin: bool = False) -> tuple[User, str]:
    """A new user and its first token (the only time the token is seen). ValueError for a bad or taken name."""
    if not USER_NAME.match(name or ""):
        raise ValueError(f"user name {name[:80]!r}: 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit")
    if session.scalar(select(User).where(User.name == name)) is not None:
        raise ValueError(f"user {name!r} exists already")
    user = User(name=name, is_admin=admin, created=time.time())
    session.add(user)
    session.flush()
    return user, add_token(session, user)


def add_token(session: Session, user: User) -> str:
    token = new_token()
    session.add(Token(user_id=user.id, digest=digest(token), created=time.time(), revoked=False))
    return token


def user_for_token(session: Session, token: str | None) -> User | None:
    if not token:
        return None
    wanted = digest(token.strip())
    row = session.scalar(select(Token).where(Token.digest == wanted, Token.revoked.is_(False)))
    if row is None or not hmac.compare_digest(row.digest, wanted):
        return None
    return session.get(User, row.user_id)


def bearer(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer TOKEN` header."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def require_user(session: Session, token: str | None) -> User:
    if token is None:
        raise AuthError(401, "no API token: send 'Authorization: Bearer TOKEN'")
    user = user_for_token(session, token)
    if user is None:
        raise AuthError(401, "unknown or revoked API token")
    return user


def require_admin(session: Session, token: str | None) -> User:
    user = require_user(session, token)
    if not user.is_admin:
        raise AuthError(403, "this route needs an admin token")
    return user
