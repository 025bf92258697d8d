"""Store URLs: which backend a URL names, and a PostgreSQL URL without its password.

Kept apart from the PostgreSQL backend so that choosing a store, writing a run's config and
naming a store in an error never import psycopg (an optional extra). A password given in a URL
is remembered in this process only (`remember_password`) and never written anywhere: a run's
config.json and store.json hold the URL without it, and a later process reads the password
where libpq looks for it (PGPASSWORD, ~/.pgpass).
"""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from harness_learning.harnesses.store.base import StoreUnreachable

SCHEMES = ("postgresql", "postgres")
SQLITE = "sqlite"
INSTALL_HINT = "pip install 'harness-learning[postgres]'"

_PASSWORDS: dict[str, str] = {}
"""Passwords taken out of URLs given to this process, by the URL without them."""


def is_postgres(url: str | None) -> bool:
    return bool(url) and urlsplit(str(url)).scheme in SCHEMES


def split_password(url: str) -> tuple[str, str | None]:
    """(the URL without a password, in its user part or its query, the password or None)."""
    parts = urlsplit(url)
    password = unquote(parts.password) if parts.password is not None else None
    netloc = parts.netloc
    if parts.password is not None:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}@{host}" if user else host
    query = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(k, v) for k, v in query if k != "password"]
    query_text = parts.query
    if len(kept) != len(query):
        password = next(v for k, v in query if k == "password")
        query_text = urlencode(kept, quote_via=quote)
    safe = urlunsplit((parts.scheme, netloc, parts.path, query_text, parts.fragment))
    return safe, password


def remember_password(url: str) -> str:
    """The URL without its password; the password, if any, is kept for this process's
    connections to that URL (`password_for`)."""
    safe, password = split_password(url)
    if password is not None:
        _PASSWORDS[safe] = password
    return safe


def password_for(safe_url: str) -> str | None:
    """The password this process was given for `safe_url`; None lets libpq find one."""
    return _PASSWORDS.get(safe_url)


def public_url(url: str | None) -> str:
    """A store as it may be shown or stored: SQLite's name, or the URL without a password."""
    if not url or url == SQLITE:
        return SQLITE
    return split_password(url)[0] if is_postgres(url) else url


def check_url(url: str | None) -> str:
    """`url` if it names a known backend (empty or `sqlite`: SQLite; postgresql://...);
    ValueError naming the choices otherwise."""
    if not url or url == SQLITE or is_postgres(url):
        return url or ""
    raise ValueError(f"unknown log store {public_url(url)!r}: give `sqlite` (the default, a file "
                     "in the run directory) or postgresql://USER@HOST:PORT/DATABASE")


def unreachable(safe_url: str, exc: BaseException) -> StoreUnreachable:
    """One line naming the store (without a password) and libpq's reason."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return StoreUnreachable(f"the log store {safe_url} failed: {reason}")
