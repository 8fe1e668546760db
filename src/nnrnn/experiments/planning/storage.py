"""Where a search's Optuna study is kept: the storage URL (by default ``sqlite:///OUT/study.db``), opening it
(SQL databases, journal files, Redis), and finding a study in it that searches what was asked."""
from __future__ import annotations

import time
import warnings
from pathlib import Path

from ...errors import UserError


HEARTBEAT_S = 60             # SQL storages: a trial whose process stops beating for
GRACE_S = 300                # GRACE_S seconds is marked FAIL by the next trial started


# --------------------------------------------------------------------------- storage

def default_storage(out) -> str:
    """``sqlite:///OUT/study.db`` with OUT's characters taken literally: SQLAlchemy reads ``?`` as the start of
    options and unquotes ``%XX``, so the path is escaped (a folder named ``a?b`` would otherwise put the
    database in ``a``, where another sweep may share it)."""
    from sqlalchemy.engine import URL
    return URL.create("sqlite", database=str(Path(out).resolve() / "study.db")).render_as_string(hide_password=False)


STUDY_DB, STUDY_JOURNAL = "study.db", "study.journal"  # a grid's search folder holds its study in one of them


def search_storage(folder, shared: bool = False) -> str:
    """The storage URL of a grid's search in ``folder``: the one its study is in already (``study.db``, else
    ``study.journal``); for a new study, Optuna's journal storage when its trials run on several machines
    (``shared``: a Ray cluster, on a shared filesystem; Optuna supports the journal file there and advises against
    SQLite on a network filesystem, whose locks it relies on), else SQLite.  A search begun one way goes on in
    its own storage the other way."""
    folder = Path(folder)
    if (folder / STUDY_DB).exists():
        return default_storage(folder)
    if shared or (folder / STUDY_JOURNAL).exists():
        return f"journal:{(folder / STUDY_JOURNAL).resolve()}"
    return default_storage(folder)


def holds_study(folder) -> bool:
    """Whether a grid's search ``folder`` holds a study's storage (:func:`search_storage`), of either kind."""
    return (Path(folder) / STUDY_DB).exists() or (Path(folder) / STUDY_JOURNAL).exists()


def _sqlite_path(url: str) -> str:
    """The file a ``sqlite://`` URL names, as SQLAlchemy reads it (escapes undone, options dropped)."""
    from sqlalchemy.engine import make_url
    try:
        return make_url(url).database or ""
    except Exception as exc:  # SQLAlchemy's ArgumentError and the errors of a malformed URL's parts
        raise UserError(f"cannot read the storage URL {url!r}: {_first_line(exc)}") from None


def _shown(url: str) -> str:
    """``url`` with any password masked, for messages."""
    try:
        from sqlalchemy.engine import make_url
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


def open_storage(url: str, must_exist: bool = False):
    """An Optuna storage for ``url``.

    ``sqlite:///PATH``, ``postgresql://...``, ``mysql://...`` (any SQLAlchemy
    URL): :class:`optuna.storages.RDBStorage`, with heartbeats so that the
    trials of a process that died are marked FAIL.  ``journal:PATH``: a
    :class:`optuna.storages.JournalStorage` on an append-only file (safe for
    many processes, also over NFS).  ``redis://...``: a journal in Redis.
    """
    import optuna
    if not isinstance(url, str) or not url.strip():
        raise UserError(f"the storage must be a URL such as sqlite:///study.db or journal:study.log; got {url!r}")
    scheme = url.split(":", 1)[0].split("+", 1)[0].lower()
    if scheme == "journal":
        if not url.split(":", 1)[1].strip():
            raise UserError("a journal storage needs a file, as in journal:runs/sweep/journal.log")
        path = Path(url.split(":", 1)[1]).expanduser()
        if must_exist and not path.is_file():
            raise UserError(f"no study journal at {path}; check --storage")
        try:
            from optuna.storages.journal import JournalFileBackend
            path.parent.mkdir(parents=True, exist_ok=True)
            return optuna.storages.JournalStorage(JournalFileBackend(str(path)))
        except OSError as exc:
            raise UserError(f"cannot open the journal file {path}: {exc.strerror or exc}") from None
    if scheme in ("redis", "rediss", "unix"):
        try:
            from optuna.storages.journal import JournalRedisBackend
            return optuna.storages.JournalStorage(JournalRedisBackend(url))
        except Exception as exc:
            raise UserError(f"cannot open the storage {_shown(url)}: {_first_line(exc)}") from None
    engine_kwargs = {"pool_pre_ping": True}
    if scheme == "sqlite":
        path = _sqlite_path(url)
        if path and path != ":memory:":
            if must_exist and not Path(path).is_file():
                raise UserError(f"no study database at {path}; run the sweep first or give --storage")
            try:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise UserError(f"cannot create the folder of {path}: {exc.strerror or exc}") from None
        engine_kwargs["connect_args"] = {"timeout": 60}  # wait for other processes' locks
    elif scheme in ("postgresql", "postgres", "mysql", "mariadb"):
        engine_kwargs["connect_args"] = {"connect_timeout": 15}
    last = None
    for attempt in range(4):  # concurrent first use of a fresh SQLite file can race on the schema
        try:
            with warnings.catch_warnings():  # heartbeats are "experimental" in Optuna; they work
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs, heartbeat_interval=HEARTBEAT_S,
                                                  grace_period=GRACE_S)
        except Exception as exc:
            last = exc
            if scheme != "sqlite":
                break
            time.sleep(0.3 * (attempt + 1))
    raise UserError(f"cannot open the storage {_shown(url)}: {_first_line(last)}; check the URL, "
                    f"the database driver and that the server is reachable") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0].rstrip(".") if text else type(exc).__name__


def _study_names(storage) -> list[str]:
    import optuna
    return [s.study_name for s in optuna.study.get_all_study_summaries(storage, include_best_trial=False)]


def check_searches(saved: dict, attrs: dict, name: str, url: str) -> None:
    """UserError if a study whose attributes are ``saved`` searches another task or model than ``attrs``."""
    if any(key in saved and saved[key] != attrs[key] for key in ("task", "model")):
        raise UserError(f"study {name!r} in {_shown(url)} searches {saved.get('task')}/{saved.get('model')}, "
                        f"not {attrs['task']}/{attrs['model']}; choose another --study")


def _existing_study(url: str, study: str | None, searches: dict | None):
    """The study named ``study`` in the storage at ``url`` (the only one there when None); a UserError when there
    is none, or ``searches`` names another task or model than the study searches."""
    import optuna
    store = open_storage(url, must_exist=True)
    names = _study_names(store)
    if study is None:
        if len(names) != 1:
            raise UserError(f"{_shown(url)} holds {len(names)} studies ({', '.join(names) or 'none'}); "
                            f"name one with --study")
        study = names[0]
    elif study not in names:
        raise UserError(f"{_shown(url)} has no study {study!r}; it holds {', '.join(names) or 'none'}")
    the_study = optuna.load_study(study_name=study, storage=store)
    if searches:
        check_searches(the_study.user_attrs, searches, study, url)
    return the_study
