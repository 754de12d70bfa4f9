"""A Discord channel exported by DiscordChatExporter as JSON: ``{"guild", "channel",
"messages": [{"id", "type", "timestamp", "content", "author", "attachments", "embeds",
"stickers", "mentions", "reference"}]}``, one file per channel (or thread, or DM).

The channel is one conversation, ``Guild / #channel`` (a thread: ``Guild / #parent / thread``;
DMs: ``Direct Messages / name``). The speaker is the author's server nickname, else their user
name. ``Default`` and ``Reply`` messages (and slash-command replies) are kept; joins, pins, calls,
renames and other system notifications are skipped and counted. A reply carries the attachment
``{"type": "reply", "to": <message id>}``; files and stickers are attachments; a message with
no text but embeds (a bot's card) is read as the embeds' titles and descriptions. Mentions
still written as ``<@123>`` (an export made without markdown formatting) become ``@name``, custom
emoji ``<:name:id>`` become ``:name:``. Timestamps carry the exporter's offset and are stored in
the configured zone. Discord has no roles.
"""

from __future__ import annotations

import re
from typing import Any

from .common import MessageIn, Probe, Reader, dict_field, plural, shape

NAME = "discord"
_KEPT = {"Default", "Reply", "ChatInputCommand", "ContextMenuCommand", "ThreadStarterMessage"}
_MENTION = re.compile(r"<@!?(\d+)>")
_EMOJI = re.compile(r"<a?:(\w+):\d+>")


def probe(doc: Any) -> Probe:
    if not isinstance(doc, dict):
        return Probe(False, "not an object with 'guild', 'channel' and 'messages'")
    missing = [k for k in ("guild", "channel", "messages") if k not in doc]
    if missing:
        return Probe(False, f"no {' / '.join(repr(k) for k in missing)} key")
    return Probe(True, "a DiscordChatExporter channel")


def parse(doc: Any, reader: Reader) -> list[MessageIn]:
    if not isinstance(doc, dict):
        raise reader.fail(f"a DiscordChatExporter channel is an object with 'messages', got {shape(doc)}")
    guild: dict[str, Any] = doc["guild"] if isinstance(doc.get("guild"), dict) else {}
    channel: dict[str, Any] = doc["channel"] if isinstance(doc.get("channel"), dict) else {}
    items = doc.get("messages")
    if not isinstance(items, list):
        raise reader.fail(f"'messages' must be a list, got {shape(items)}")
    conv = reader.conversation or _conversation(guild, channel)
    messages: list[MessageIn] = []
    notices = 0
    for i, item in enumerate(items):
        where = f"message {i + 1}"
        if not isinstance(item, dict):
            raise reader.fail(f"a message must be an object, got {shape(item)}", where)
        _check_types(item, reader, where)
        if item.get("type", "Default") not in _KEPT:
            notices += 1
            continue
        author = dict_field(item, "author")
        speaker = next(
            (str(author[k]).strip() for k in ("nickname", "name", "id") if author.get(k) not in (None, "")), "unknown"
        )
        text = _content(item)
        attachments = _attachments(item)
        if not text.strip() and not attachments:
            continue
        ext = item.get("id")
        if not isinstance(ext, (str, int)) or isinstance(ext, bool):
            raise reader.fail("a message needs an 'id'", where)
        messages.append(
            MessageIn(
                conversation=conv,
                session="",
                seq=len(messages),
                external_id=str(ext),
                speaker=speaker,
                text=reader.text(text, where),
                sent_at=reader.time(item.get("timestamp"), f"{where} timestamp"),
                attachments=attachments or None,
                raw=item,
            )
        )
    speakers = sorted({m.speaker for m in messages})
    reader.note(
        f"Discord: {conv}, {plural(len(speakers), 'speaker')}; {notices} system "
        "notifications (joins, pins, calls…) skipped"
    )
    return reader.unique(messages)


def _check_types(item: dict[str, Any], reader: Reader, where: str) -> None:
    """The fields read from a message hold what the exporter writes there (or are missing)."""
    for key in ("type", "content"):
        if item.get(key) is not None and not isinstance(item[key], str):
            raise reader.fail(f"'{key}' must be text, got {shape(item[key])}", where)
    for key in ("embeds", "mentions", "attachments", "stickers"):
        if item.get(key) is not None and not isinstance(item[key], list):
            raise reader.fail(f"'{key}' must be a list, got {shape(item[key])}", where)
    author = item.get("author")
    if author is not None and not isinstance(author, dict):
        raise reader.fail(f"'author' must be an object, got {shape(author)}", where)
    for key in ("nickname", "name"):
        if isinstance(author, dict) and author.get(key) is not None and not isinstance(author[key], str):
            raise reader.fail(f"'author.{key}' must be text, got {shape(author[key])}", where)


def _conversation(guild: dict[str, Any], channel: dict[str, Any]) -> str:
    name = str(channel.get("name") or channel.get("id") or "channel")
    kind = str(channel.get("type") or "")
    server = str(guild.get("name") or "Discord")
    if kind.startswith("Direct") or server == "Direct Messages":
        return f"Direct Messages / {name}"
    if "Thread" in kind and channel.get("category"):
        return f"{server} / #{channel['category']} / {name}"
    return f"{server} / #{name}"


def _content(item: dict[str, Any]) -> str:
    text = item.get("content") or ""  # checked: text or missing
    if not text.strip():
        parts = []
        for embed in item.get("embeds") or ():
            if isinstance(embed, dict):
                parts += [str(embed[k]) for k in ("title", "description") if embed.get(k)]
        text = "\n".join(parts)
    names = {
        str(m.get("id")): m.get("nickname") or m.get("name") for m in item.get("mentions") or () if isinstance(m, dict)
    }
    text = _MENTION.sub(lambda m: "@" + str(names.get(m.group(1)) or m.group(1)), text)
    return _EMOJI.sub(r":\1:", text)


def _attachments(item: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    ref = item.get("reference")
    if item.get("type") == "Reply" and isinstance(ref, dict) and ref.get("messageId"):
        found.append({"type": "reply", "to": str(ref["messageId"])})
    for a in item.get("attachments") or ():
        if isinstance(a, dict):
            att = {"type": "file", "name": a.get("fileName"), "url": a.get("url"), "size": a.get("fileSizeBytes")}
            found.append({k: v for k, v in att.items() if v is not None})
    for s in item.get("stickers") or ():
        if isinstance(s, dict) and s.get("name"):
            found.append({"type": "sticker", "name": s["name"]})
    return found
