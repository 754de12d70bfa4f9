"""A Slack workspace export: a folder (or the .zip Slack sends) with ``users.json``,
``channels.json`` (and, in exports that have them, ``groups.json`` for private channels,
``mpims.json`` for group DMs, ``dms.json`` for DMs) and one folder per channel holding a JSON
list of messages per day (``general/2024-01-12.json``).

Each channel is one conversation: ``#general``, ``DM: Ana, Ben``, ``group DM: Ana, Ben, Cy``.
User ids become names: the profile's real name, else the display name, else the user name; so
do ``<@U123>`` mentions in the text (``@Ana Ruiz``), and ``<#C1|general>``, ``<!here>``,
``<https://x|label>`` and the ``&amp;`` entities are written as Slack shows them. Threads are
kept together: a thread's replies follow their parent in time order (a reply whose parent is
not in the export stays where its time puts it), parent and replies share the session
``thread <parent ts>``, and each reply carries the attachment ``{"type": "reply", "to": <parent
ts>}``. Joins, leaves, topic and purpose changes, pins and other channel events are skipped and
counted; bot messages are kept under the bot's name. Shared files become attachments. The
message id is its ``ts``; times are epoch seconds, stored in the configured zone. Slack has no
roles.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from ..text.files import decode
from .common import MessageIn, Reader, dict_field, plural, shape

NAME = "slack"
LISTS = ("channels.json", "groups.json", "mpims.json", "dms.json")
_KEPT = {
    None,
    "thread_broadcast",
    "reply_broadcast",
    "bot_message",
    "me_message",
    "file_share",
    "file_comment",
    "slackbot_response",
}
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")
_TS = re.compile(r"\d{1,12}(\.\d{1,9})?")  # epoch seconds and a sequence: "1709550000.000100"
_MARKUP = re.compile(r"<([@#!])([^>|]+)(?:\|([^>]*))?>|<([^>|]+)(?:\|([^>]*))?>")


def is_export(names: set[str]) -> bool:
    """Whether a folder holding the files ``names`` is a Slack export's root."""
    return "users.json" in names and any(name in names for name in LISTS)


@dataclass
class _Channel:
    folder: str
    name: str


def parse(files: dict[str, bytes], reader: Reader) -> list[MessageIn]:
    """``files``: the export's JSON files by path relative to its root."""

    def load(rel: str) -> Any:
        data = files[rel]
        try:
            return reader.loads(decode(reader.path / rel, data), rel)
        except json.JSONDecodeError as exc:
            raise reader.fail(f"invalid JSON in {rel}: {exc.msg}", f"{rel} line {exc.lineno}") from exc

    users = load("users.json")
    if not isinstance(users, list):
        raise reader.fail(f"users.json must be a list of users, got {shape(users)}")
    names = {u["id"]: _user_name(u) for u in users if isinstance(u, dict) and isinstance(u.get("id"), str)}
    channels = _channels({k: load(k) for k in LISTS if k in files}, names, reader)
    listed = {c.folder for c in channels}
    for folder in sorted({str(PurePosixPath(rel).parent) for rel in files if _DAY.match(PurePosixPath(rel).name)}):
        if folder not in listed and folder != ".":  # a channel folder no list names
            channels.append(_Channel(folder, f"#{folder}"))
    ids = {
        c.get("id"): c.get("name")
        for lst in (load(k) for k in ("channels.json", "groups.json") if k in files)
        if isinstance(lst, list)
        for c in lst
        if isinstance(c, dict) and isinstance(c.get("id"), str)
    }
    messages: list[MessageIn] = []
    events = 0
    for channel in channels:
        raw: list[dict[str, Any]] = []
        for rel in sorted(
            r for r in files if str(PurePosixPath(r).parent) == channel.folder and _DAY.match(PurePosixPath(r).name)
        ):
            day = load(rel)
            if not isinstance(day, list):
                raise reader.fail(f"a day file must be a list of messages, got {shape(day)}", rel)
            for i, item in enumerate(day):
                _check_message(item, reader, f"{rel} message {i + 1}")
                item = {**item, "_file": rel}
                raw.append(item)
        kept, skipped = _thread_order(raw)
        events += skipped
        for seq, (item, parent) in enumerate(kept):
            where = f"{item.pop('_file')} ts {item['ts']}"
            attachments = [{"type": "reply", "to": parent}] if parent else []
            attachments += _files(item)
            text = _text(item.get("text") or "", names, ids)  # checked: text or null
            if not text.strip() and not attachments:
                continue
            in_thread = item.get("thread_ts") and (parent or item.get("reply_count"))
            thread = item["thread_ts"] if in_thread else None
            messages.append(
                MessageIn(
                    conversation=reader.conversation or channel.name,
                    session=f"thread {thread}" if thread else "",
                    seq=seq,
                    external_id=item["ts"],
                    speaker=_speaker(item, names),
                    text=reader.text(text, where),
                    sent_at=reader.time(float(item["ts"]), where),
                    attachments=attachments or None,
                    raw=item,
                )
            )
    reader.note(
        f"Slack: {plural(len(channels), 'channel')}, {plural(len(names), 'user')}; "
        f"{events} channel events (joins, topic changes, pins…) skipped; thread replies follow "
        "their parent"
    )
    return reader.unique(messages)


def _check_message(item: Any, reader: Reader, where: str) -> None:
    """A day file's message: an object whose ``ts`` is a Slack timestamp, and whose ``thread_ts``,
    ``subtype`` and ``text`` are text when present, ``files`` a list."""
    if not isinstance(item, dict):
        raise reader.fail(f"a message must be an object, got {shape(item)}", where)
    ts = item.get("ts")
    if not isinstance(ts, str) or not _TS.fullmatch(ts):
        raise reader.fail(f"'ts' must be a Slack timestamp such as \"1709550000.000100\", got {shape(ts)}", where)
    for key in ("thread_ts", "subtype", "text", "user", "username"):
        if item.get(key) is not None and not isinstance(item[key], str):
            raise reader.fail(f"'{key}' must be text, got {shape(item[key])}", where)
    if item.get("files") is not None and not isinstance(item["files"], list):
        raise reader.fail(f"'files' must be a list, got {shape(item['files'])}", where)


def _user_name(user: dict[str, Any]) -> str:
    profile = dict_field(user, "profile")
    for value in (
        profile.get("real_name"),
        user.get("real_name"),
        profile.get("display_name"),
        user.get("name"),
        user.get("id"),
    ):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return "unknown"


def _channels(lists: dict[str, Any], names: dict[str, str], reader: Reader) -> list[_Channel]:
    found: list[_Channel] = []
    for key, items in lists.items():
        if not isinstance(items, list):
            raise reader.fail(f"{key} must be a list, got {shape(items)}")
        for item in items:
            if not isinstance(item, dict):
                continue
            listed = item.get("members")
            members = [names.get(m, m) for m in (listed if isinstance(listed, list) else ()) if isinstance(m, str)]
            if key == "dms.json":
                found.append(_Channel(str(item.get("id")), "DM: " + ", ".join(members)))
            elif key == "mpims.json":
                found.append(_Channel(str(item.get("name")), "group DM: " + ", ".join(members)))
            else:
                found.append(_Channel(str(item.get("name")), f"#{item.get('name')}"))
    return found


def _thread_order(items: list[dict[str, Any]]) -> tuple[list[tuple[dict[str, Any], str | None]], int]:
    """``[(message, parent ts or None)]`` in reading order, and how many events were skipped."""
    items = sorted({m["ts"]: m for m in items}.values(), key=lambda m: float(m["ts"]))
    starts = {m["ts"] for m in items if not m.get("thread_ts") or m.get("thread_ts") == m["ts"]}
    replies: dict[str, list[dict[str, Any]]] = {}
    for m in items:
        parent = m.get("thread_ts")
        if parent and parent != m["ts"] and parent in starts:
            replies.setdefault(parent, []).append(m)
    out: list[tuple[dict[str, Any], str | None]] = []
    skipped = 0
    for m in items:
        parent = m.get("thread_ts")
        if parent and parent != m["ts"] and parent in starts:
            continue  # placed after its parent
        if m.get("subtype") in _KEPT:
            out.append((m, parent if parent and parent != m["ts"] else None))
        else:
            skipped += 1  # a tombstone's replies still follow it
        for reply in replies.get(m["ts"], ()):
            if reply.get("subtype") in _KEPT:
                out.append((reply, m["ts"]))
            else:
                skipped += 1
    return out, skipped


def _speaker(item: dict[str, Any], names: dict[str, str]) -> str:
    user = item.get("user")
    if isinstance(user, str) and user in names:
        return names[user]
    profile = dict_field(item, "user_profile")
    bot = dict_field(item, "bot_profile")
    for value in (profile.get("real_name"), profile.get("display_name"), item.get("username"), bot.get("name"), user):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return "bot" if item.get("bot_id") else "unknown"


def _text(text: str, names: dict[str, str], channels: dict[Any, Any]) -> str:
    def markup(m: re.Match[str]) -> str:
        sigil, target, label, url, url_label = m.groups()
        if url is not None:
            shown = url.removeprefix("mailto:")
            return f"{url_label} ({shown})" if url_label and url_label != shown else shown
        if sigil == "@":
            return "@" + names.get(target, label or target)
        if sigil == "#":
            return "#" + (label or channels.get(target) or target)
        special = target.split("^")[0]
        if special in ("here", "channel", "everyone"):
            return "@" + special
        return label or f"@{special}"

    return _MARKUP.sub(markup, text).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _files(item: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for f in item.get("files") or ():
        if isinstance(f, dict) and f.get("mode") != "tombstone":
            att = {"type": "file", "name": f.get("name"), "title": f.get("title"), "mime_type": f.get("mimetype")}
            found.append({k: v for k, v in att.items() if v})
    return found
