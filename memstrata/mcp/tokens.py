"""Bearer tokens of a shared ``memstrata mcp --transport http`` server: one file, token -> user.

The file holds SHA-256 digests of the tokens, never the tokens themselves, so
reading it does not let anyone in::

    {"tokens": [
      {"user": "alice", "sha256": "<64 hex digits>", "label": "alice-laptop"},
      {"user": "bob", "sha256": "<64 hex digits>"}
    ]}

``memstrata mcp-token --tokens FILE --user alice`` mints a token, prints it once
and appends its digest (the file is created with mode 0600). A server re-reads the
file when it changes, so deleting an entry revokes its token without a restart; a
file that has become unreadable or malformed refuses every token until it is fixed
(fail closed). The SDK-free part lives here so minting needs no ``mcp`` package.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memstrata.errors import InvalidSettingError
from memstrata.memory import check_user

__all__ = ["TokenEntry", "TokenFile", "add_token", "token_digest"]

log = logging.getLogger("memstrata")

#: bytes of randomness in a minted token (``secrets.token_urlsafe``: 43 characters)
TOKEN_BYTES = 32
_HEX64 = re.compile(r"\A[0-9a-f]{64}\Z")
_LABEL = re.compile(r"\A[\w.@:\-]{1,64}\Z")
_UNSAFE = re.compile(r"[^\w.@:\-]")


def token_digest(token: str) -> str:
    """The SHA-256 hex digest a token is stored as."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class TokenEntry:
    """One accepted token: whose it is and what it is called (never the token)."""

    user_id: str
    digest: str
    label: str


def _parse(path: Path, text: str) -> dict[str, TokenEntry]:
    def bad(message: str) -> InvalidSettingError:
        return InvalidSettingError(f"token file {path}: {message}")

    try:
        data: Any = json.loads(text)
    except ValueError as exc:
        raise bad(f"not JSON ({exc})") from exc
    if not isinstance(data, dict) or set(data) != {"tokens"} or not isinstance(
            data["tokens"], list):
        raise bad('expected {"tokens": [{"user": ..., "sha256": ..., "label": ...}, ...]}')
    out: dict[str, TokenEntry] = {}
    for n, item in enumerate(data["tokens"]):
        if not isinstance(item, dict) or not {"user", "sha256"} <= set(item) or not set(
                item) <= {"user", "sha256", "label"}:
            raise bad(f"entry {n}: needs 'user' and 'sha256' (and optionally 'label')")
        user, digest, label = item["user"], item["sha256"], item.get("label", f"token-{n}")
        if not isinstance(user, str):
            raise bad(f"entry {n}: 'user' must be a string")
        try:
            user = check_user(user)
        except ValueError as exc:
            raise bad(f"entry {n}: {exc}") from exc
        if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
            raise bad(f"entry {n}: 'sha256' must be 64 lower-case hex digits (the token's "
                      "SHA-256, not the token)")
        if not isinstance(label, str) or not _LABEL.fullmatch(label):
            raise bad(f"entry {n}: 'label' must be 1-64 letters, digits or . _ - @ :")
        if digest in out:
            raise bad(f"entry {n}: the same token is listed twice")
        out[digest] = TokenEntry(user, digest, label)
    return out


class TokenFile:
    """The tokens of a token file, re-read when the file changes (see the module doc).

    Construction reads the file and raises :class:`~memstrata.errors.InvalidSettingError`
    when it is missing or malformed; later changes are picked up by :meth:`lookup`.
    Thread-safe.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._entries: dict[str, TokenEntry] = {}
        self._load(strict=True)

    def _file_stamp(self) -> tuple[int, int, int]:
        st = self.path.stat()
        return st.st_mtime_ns, st.st_size, st.st_ino

    def _load(self, *, strict: bool) -> None:
        try:
            stamp = self._file_stamp()
            if stamp == self._stamp:
                return
            text = self.path.read_text(encoding="utf-8")
            entries = _parse(self.path, text)
        except (OSError, InvalidSettingError) as exc:
            if strict:
                if isinstance(exc, OSError):
                    raise InvalidSettingError(
                        f"cannot read the token file {self.path}: {exc.strerror or exc}") from exc
                raise
            if self._entries or self._stamp is not None:
                log.warning("the token file cannot be used, every token is refused until it "
                            "is fixed: %s", exc)
            self._entries, self._stamp = {}, None
            return
        self._entries, self._stamp = entries, stamp

    @property
    def entries(self) -> list[TokenEntry]:
        """The accepted tokens (as of the last read)."""
        with self._lock:
            return list(self._entries.values())

    def lookup(self, token: str) -> TokenEntry | None:
        """The entry of ``token``, or ``None`` when it is not (or no longer) accepted."""
        with self._lock:
            self._load(strict=False)
            return self._entries.get(token_digest(token))


def add_token(path: Path, user_id: str, *, label: str | None = None) -> str:
    """Mint a token for ``user_id``, append its digest to the file at ``path``
    (created, mode 0600, when missing) and return the token - the only time it is shown."""
    path = Path(path)
    user_id = check_user(user_id)
    existing: dict[str, TokenEntry] = {}
    if path.exists():
        try:
            existing = _parse(path, path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise InvalidSettingError(f"cannot read the token file {path}: {exc}") from exc
    if label is None:
        label = f"{_UNSAFE.sub('_', user_id)[:48]}-{len(existing) + 1}"
    if not _LABEL.fullmatch(label):
        raise InvalidSettingError("the label must be 1-64 letters, digits or . _ - @ :")
    if any(e.label == label for e in existing.values()):
        raise InvalidSettingError(f"the token file already has a token labelled {label!r}")
    token = secrets.token_urlsafe(TOKEN_BYTES)
    entries = [{"user": e.user_id, "sha256": e.digest, "label": e.label}
               for e in existing.values()]
    entries.append({"user": user_id, "sha256": token_digest(token), "label": label})
    text = json.dumps({"tokens": entries}, indent=2, ensure_ascii=False) + "\n"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InvalidSettingError(f"cannot write the token file {path}: {exc}") from exc
    return token
