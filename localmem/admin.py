"""``mem.admin``: the store's file behind a :class:`~localmem.memory.Memory`.

:class:`Admin` exports and restores, compacts, re-embeds, reports (``doctor``) and encrypts,
re-keys or decrypts. It checks its arguments and calls :mod:`localmem.store` (``transfer``,
``purge``, ``manage``, ``cipher``). It shares the Memory's connection and lock
(:class:`~localmem.store.handle.Handle`), so its calls take turns with the Memory's, and a key
change reopens that one connection for both. Unlike the Memory's other calls, these work on
the whole store, not one namespace.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Sequence

from .config import Config, Key, as_key
from .errors import LocalmemError
from .serial import one_at_a_time
from .text.files import check_namespace

if TYPE_CHECKING:
    from .models.factory import Models
    from .store import results
    from .store.handle import Handle

Progress = Callable[[int, int], None]
Phases = Callable[[str], None]


@one_at_a_time
class Admin:
    """Housekeeping of the store's file: :meth:`export` and :meth:`restore` (JSONL),
    :meth:`vacuum`, :meth:`reembed`, :meth:`doctor`, and :meth:`encrypt`, :meth:`rekey` and
    :meth:`decrypt` (in place, a kill leaving the old file or the new one).

    >>> with open("backup.jsonl", "w") as out:
    ...     mem.admin.export(out)
    """

    def __init__(self, store: "Handle", config: Config, models: "Models") -> None:
        self._store, self._config, self._models = store, config, models
        self._lock = store.lock

    def _locked(self) -> Any:
        return self._store.locked()

    def export(
        self, out: IO[str], *, namespaces: Sequence[str] | None = None, vectors: bool = True
    ) -> "results.ExportReport":
        """Write the store (or some namespaces) as JSONL that :meth:`restore` reads back exactly;
        ``vectors=False`` leaves the vectors out (a restore embeds again)."""
        from .store import transfer

        return transfer.export(self._store.conn, out, namespaces=namespaces, vectors=vectors)

    def restore(self, path: str | Path, *, force: bool = False) -> "results.RestoreReport":
        """Import an export file, in one transaction; counts per record type. Namespaces already
        in the store are refused, not merged. A file whose trailer is missing or does not match
        it (cut short, or edited) is refused with nothing stored, unless ``force`` (for exports
        made before the trailer existed): then ``unchecked`` in the result says what could not
        be checked."""
        from .store import transfer

        return transfer.restore(
            self._store.conn,
            Path(path),
            embedder_factory=lambda: self._models.embedder,
            force=force,
            max_chars=self._config.max_message_chars,
            context=self._config.context_parts,
        )

    def vacuum(self) -> "results.VacuumReport":
        """Compact the store: merge the full-text indexes, rewrite the file without its free
        pages (a store made before auto_vacuum is switched to incremental), and empty the WAL;
        sizes before and after."""
        from .store.results import VacuumReport

        return VacuumReport(**self._store.conn.vacuum())

    def reembed(self, progress: Progress | None = None) -> "results.ReembedReport":
        """Re-embed every message and unit with the configured embedder;
        ``progress(done, total)`` after each batch."""
        from .store import manage

        return manage.reembed(
            self._store.conn, self._models.embedder, self._config.embed_batch, progress, self._config.context_parts
        )

    def doctor(self) -> "results.DoctorReport":
        """Versions, SQLite features and where each model resolves from."""
        from .store import manage

        return manage.doctor(self._store.conn, self._config, self._store.path)

    def grant(self, role: str, namespaces: Sequence[str], *, password: str | None = None) -> dict[str, Any]:
        """PostgreSQL stores only, run by the store's owner: make ``role`` (a login role, created
        if missing; ``password`` set when given) a user of ``namespaces`` alone, enforced by
        the server's row-level security (docs/postgres.md, "Many users in one database"). What
        was granted: the role, its namespaces (all it now has), whether it may vacuum, and
        ``warnings``: the server's trust rules that let anyone connect as the role without its
        password (``localmem postgres start``'s socket is one). A role row-level security does
        not bind (a superuser, BYPASSRLS, the store's owner, a built-in ``pg_*`` role) is
        refused."""
        names = [check_namespace(n) for n in namespaces]  # exactly as given: "  bob  " is refused
        return self._store.conn.grant(role, names, password)

    @property
    def encrypted(self) -> bool:
        """Whether the store is encrypted (it was opened with a key)."""
        return self._store.key is not None

    def encrypt(self, key: str | Key, progress: Phases | None = None) -> "results.KeyChange":
        """Encrypt this plain store in place with ``key``: a new encrypted file is written,
        checked, and moved over the store (a kill leaves the old store or the new one).
        ``progress(phase)`` is called as each phase starts."""
        if self.encrypted:
            raise LocalmemError(f"{self._store.path} is already encrypted; change its passphrase with rekey")
        return self._change_key(as_key(key), progress)

    def rekey(self, key: str | Key, progress: Phases | None = None) -> "results.KeyChange":
        """Change the passphrase of this encrypted store, the same safe way as :meth:`encrypt`."""
        if not self.encrypted:
            raise LocalmemError(f"{self._store.path} is not encrypted; encrypt it with encrypt")
        new, old = as_key(key), self._store.key
        if new is not None and old is not None and new.secret == old.secret:
            raise LocalmemError("the new passphrase is the one the store already has; nothing was changed")
        return self._change_key(new, progress)

    def decrypt(self, progress: Phases | None = None) -> "results.KeyChange":
        """Write this encrypted store back as a plain one, the same safe way as :meth:`encrypt`."""
        if not self.encrypted:
            raise LocalmemError(f"{self._store.path} is not encrypted; nothing to do")
        return self._change_key(None, progress)

    def _change_key(self, new: Key | None, progress: Phases | None) -> "results.KeyChange":
        from .store import cipher

        if str(self._store.path) == ":memory:":
            raise LocalmemError("an in-memory store cannot be encrypted or decrypted")
        if new is not None:
            cipher.require_cipher("encrypting a store")
        report = self._store.conn.change_key(self._store.key, new, progress)
        self._store.reopen(new)
        return report
