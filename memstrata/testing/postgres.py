"""Test support shipped with memstrata: a throwaway PostgreSQL server.

:class:`PostgresServer` starts a real PostgreSQL cluster from the installed
server binaries (``/usr/lib/postgresql/*/bin`` or ``PATH``) in a temporary
directory on a free loopback port, with trust authentication. PostgreSQL
refuses to run as root, so under root the cluster is created and started as
the ``postgres`` system user via ``runuser``.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

__all__ = ["PostgresServer", "find_pg_bin"]


def find_pg_bin() -> Path | None:
    """Folder of ``initdb``/``pg_ctl``, newest installed version first; None if absent."""
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: int(p.split("/")[-2]) if p.split("/")[-2].isdigit() else 0,
        reverse=True,
    )
    for folder in candidates:
        if (Path(folder) / "initdb").exists():
            return Path(folder)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """A PostgreSQL cluster for tests; ``url(dbname)`` gives SQLAlchemy URLs."""

    def __init__(self, bin_dir: Path | None = None) -> None:
        found = bin_dir or find_pg_bin()
        if found is None:
            raise RuntimeError("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
        self.bin_dir = found
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="memstrata-pg-"))
        self.data = self.root / "data"
        self._as_root = os.geteuid() == 0
        self._started = False

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if self._as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)

    def start(self) -> PostgresServer:
        if self._as_root:
            shutil.chown(self.root, user="postgres", group="postgres")
        os.chmod(self.root, 0o700)
        self._run(
            str(self.bin_dir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
            "-E", "UTF8", "--no-sync",
        )
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=200"
        )
        self._run(
            str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-o", options,
            "-l", str(self.root / "log"), "-w", "-t", "60", "start",
        )
        self._started = True
        return self

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, name: str | None = None) -> str:
        """Create a fresh database; returns its URL."""
        import psycopg

        name = name or f"t_{uuid.uuid4().hex[:12]}"
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(
                    host="127.0.0.1", port=self.port, user="postgres", dbname="postgres",
                    autocommit=True,
                ) as conn:
                    conn.execute(f'CREATE DATABASE "{name}"')
                return self.url(name)
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self, *, wait_for_cleanup: bool = True) -> None:
        """Stop the server and delete its directory - in a detached ``rm`` when
        ``wait_for_cleanup`` is false (a test session that created hundreds of
        databases need not wait for gigabytes of files to be unlinked)."""
        if self._started:
            with contextlib.suppress(subprocess.CalledProcessError):
                self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                          "stop")
            self._started = False
        if not wait_for_cleanup and shutil.which("sh") is not None:
            # the shell returns at once; the rm it leaves behind belongs to no one here
            subprocess.run(["sh", "-c", f"rm -rf {shlex.quote(str(self.root))} >/dev/null 2>&1 &"],
                           check=False, timeout=30)
            return
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
