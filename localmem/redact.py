"""Passwords out of what localmem shows: one function, :func:`redact`, for every store location
and every driver error that reaches a person, a log or an assistant.

A PostgreSQL store is named by a libpq URL, and libpq takes a password in two places, both
hidden here wherever they appear in a text (a URL alone, or a message that quotes one):

- the URL's userinfo: ``postgresql://user:PASSWORD@host/db`` (``postgres://`` too) becomes
  ``postgresql://user:***@host/db``. The password runs to the last ``@`` before the first
  ``/``: one holding an unescaped ``@`` (which libpq would cut at the first) is hidden whole.
  One holding an unescaped ``/`` is not a password to libpq either (it reads no userinfo
  then) and is not recognised: escape it (``%2F``), as the URL syntax wants;
- a ``password=`` keyword: a URL's query parameter (``?password=PW`` or ``&password=PW``, up to
  the next ``&`` or ``#``) and a conninfo string's ``password=PW`` (up to the next space, or a
  quoted value ``password='p w'`` whole). ``sslpassword=`` (the client key's passphrase) too.
  Keywords are matched whatever their case. One mark of punctuation ending an unquoted value
  before a space (``password=PW: the reason``) is taken for the message's and left shown.

Not covered, because they are never in a text localmem shows: the ``PGPASSWORD`` environment
variable and the contents of a password file. A ``passfile=`` parameter names a file and is
kept (the path is not the secret). A keyword spelled with percent escapes (``%70assword=``),
which libpq decodes, is not recognised.
"""

from __future__ import annotations

import logging
import re

HIDDEN = "***"

# scheme://user:PASSWORD@ : the password runs to the last '@' before a '/', a space or a quote.
_USERINFO = re.compile(r"(?i)\b(postgres(?:ql)?://[^\s:@/'\"]*):[^\s/'\"]*@")
# A value's end: a space, a quote or the text's end, after one mark of punctuation that a
# message puts after a URL ("at URL: the reason"), which is left shown.
_END = r"(?=[:;,.]?(?:[\s'\"]|$))"
# ?password=PW&... in a URL's query: the value runs to '&', '#' or an end.
_QUERY = re.compile(rf"(?i)([?&](?:ssl)?password=)(?:[^&#\s'\"]*?{_END}|[^&#\s'\"]*)")
# password=PW or password='p w' in a conninfo string (after a space, a quote or at the start).
_KEYWORD = re.compile(rf"(?i)((?:^|(?<=[\s'\"(]))(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s'\"]*?{_END})")


def redact(text: object) -> str:
    """``text`` (a store location, a message, a driver error; any object, as ``str()``) with
    every password it quotes replaced by ``***`` (see the module docstring for the forms)."""
    shown = str(text)
    if "password" not in shown.lower() and "://" not in shown:
        return shown
    shown = _USERINFO.sub(rf"\1:{HIDDEN}@", shown)
    shown = _QUERY.sub(rf"\1{HIDDEN}", shown)
    return _KEYWORD.sub(rf"\1{HIDDEN}", shown)


class Passwordless(logging.Filter):
    """A log handler's filter: every record's message through :func:`redact` (a library that
    logs a connection string or a driver's error included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        clean = redact(text)
        if clean != text:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:  # a traceback quotes the exception's text
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True
