"""Store URLs: which backend a URL names, a PostgreSQL URL without its password, and which
servers this process may connect to with what.

Kept apart from the PostgreSQL backend so that choosing a store, writing a run's config and
naming a store in an error never import psycopg (an optional extra). A password given in a URL
is remembered in this process only (`remember_password`) and never written anywhere: a run's
config.json and store.json hold the URL without it.

A run directory may come from someone else, so a server it names is never connected to on its
word alone: only a URL the user gave this process (`give`: a command's `--store`, a new run's
settings) is (`StoreNotGiven` otherwise). And no credential is sent that the URL did not ask
for: libpq would otherwise send PGPASSWORD, or a line of ~/.pgpass, to whatever server a URL
names (`connect_params`).
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from harness_learning.harnesses.store.base import LogStoreError, StoreUnreachable

SCHEMES = ("postgresql", "postgres")
SQLITE = "sqlite"
INSTALL_HINT = "pip install 'harness-learning[postgres]'"

_PASSWORDS: dict[str, str] = {}
"""Passwords taken out of URLs given to this process, by the URL without them."""
_GIVEN: set[str] = set()
"""PostgreSQL URLs (without passwords) the user gave this process: the only ones connected to."""
NO_PASSFILE = os.path.join(os.devnull, "none")
"""A password file that cannot exist (libpq warns about /dev/null itself: not a plain file)."""
GIVE_HINT = ("if you trust that server, name it on the command line: --store URL (in Python: "
             "harness_learning.harnesses.store.pgurl.give(URL) first); a password comes from "
             "the URL or its ?passfile=PATH, never from PGPASSWORD or ~/.pgpass")


class StoreNotGiven(LogStoreError):
    """A PostgreSQL store named by a run directory (config.json, store.json) but not given
    by the user: connecting would hand a stranger's server our connection, and with it
    whatever libpq sends."""

    hint = GIVE_HINT


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
    """The password this process was given for `safe_url`, or None."""
    return _PASSWORDS.get(safe_url)


def give(url: str) -> str:
    """Record `url` as given by the user (a command's `--store`, a new run's settings, a
    caller's code): its server may be connected to. Returns it without its password, which
    is remembered (`remember_password`). Empty or `sqlite` is returned as is."""
    safe = remember_password(check_url(url)) if url else ""
    if is_postgres(safe):
        _GIVEN.add(safe)
    return safe


def given_url(safe_url: str, where: str) -> str:
    """The URL to connect with for `safe_url`, found in `where`: the one the user gave for the
    same user, server and database (it may add options, such as ?passfile=, and its own are
    the ones used); `StoreNotGiven` if the user gave none."""
    if safe_url in _GIVEN:
        return safe_url
    key = _server_of(safe_url)
    for url in sorted(_GIVEN):
        if _server_of(url) == key:
            return url
    raise StoreNotGiven(f"{where} names the PostgreSQL log store {safe_url}, which was not "
                        "given on the command line: a store named only by a run directory is "
                        "never connected to")


def _server_of(url: str) -> tuple[str, str]:
    """(user@host:port, database) of a URL, its query left out: what `given_url` matches."""
    parts = urlsplit(url)
    return parts.netloc, parts.path.strip("/")


def connect_params(safe_url: str) -> dict[str, str]:
    """What libpq gets besides the URL, so that only a credential the user gave reaches the
    server: the password from the URL given to this process, else an empty one (libpq then
    reads neither PGPASSWORD nor a service file's) and, unless the URL names a `passfile`
    itself, a password file that cannot exist (never ~/.pgpass or PGPASSFILE)."""
    password = _PASSWORDS.get(safe_url)
    if password is not None:
        return {"password": password}
    query = dict(parse_qsl(urlsplit(safe_url).query, keep_blank_values=True))
    return {"password": ""} if query.get("passfile") else {"password": "", "passfile": NO_PASSFILE}


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
