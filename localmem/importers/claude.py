"""Claude.ai's data export: ``conversations.json``, a list of conversations (``uuid``, ``name``,
``created_at``, ``chat_messages``), each message with ``uuid``, ``sender`` ("human" or
"assistant"), ``text`` and/or ``content`` blocks, ``created_at``, ``attachments`` and ``files``.

A message's text is its ``text`` content blocks joined; ``thinking``, ``tool_use`` and
``tool_result`` blocks are not turns a person read and are left out (only ``text`` is used when a
message has no blocks). Attachments (pasted or uploaded documents) and files (images) are kept as
attachments by name, type and size; their extracted text stays in ``raw``. When the messages carry
``parent_message_uuid`` and the conversation names its ``current_leaf_message_uuid``, only that
branch is read, as for ChatGPT; otherwise the list order is the conversation.

Speakers are "user" and "assistant" with the same roles. Times are ISO with "Z", stored in the
configured zone. Each conversation is one localmem conversation named by its name and start date.
"""

from __future__ import annotations

from typing import Any

from .common import MessageIn, Probe, Reader, find_loop, first_item, plural, shape, titled

NAME = "claude"
_ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def probe(doc: Any) -> Probe:
    first = first_item(doc, "conversations")
    if not isinstance(first, dict):
        return Probe(False, "not a list of conversations")
    if not isinstance(first.get("chat_messages"), list):
        return Probe(False, "no 'chat_messages' in the first conversation")
    return Probe(True, "conversations with 'chat_messages'")


def parse(doc: Any, reader: Reader) -> list[MessageIn]:
    if isinstance(doc, dict) and isinstance(doc.get("conversations"), list):
        doc = doc["conversations"]
    conversations = doc if isinstance(doc, list) else [doc]
    for ci, conv in enumerate(conversations):
        if not isinstance(conv, dict) or not isinstance(conv.get("chat_messages"), list):
            raise reader.fail(
                f"a conversation needs a 'chat_messages' list, got {shape(conv)}", f"conversation {ci + 1}"
            )
    idents = [str(c.get("uuid") or f"c{i + 1}") for i, c in enumerate(conversations)]
    starts = [reader.time(c.get("created_at"), f"conversation {i + 1} created_at") for i, c in enumerate(conversations)]
    names = titled([(c.get("name") or c.get("title"), s, i) for c, s, i in zip(conversations, starts, idents)])
    if reader.conversation and len(conversations) == 1:
        names = [reader.conversation]
    messages: list[MessageIn] = []
    left_out = {"blocks": 0, "branch": 0, "empty": 0}
    for ci, (conv, name) in enumerate(zip(conversations, names)):
        where = f"conversation {ci + 1} ({conv.get('name') or idents[ci]})"
        turns = _branch(conv, reader, where)
        left_out["branch"] += len(conv["chat_messages"]) - len(turns)
        seq = 0
        for ti, turn in turns:
            twhere = f"{where} message {ti + 1}"
            if not isinstance(turn, dict):
                raise reader.fail(f"a message must be an object, got {shape(turn)}", twhere)
            role = _ROLES.get(str(turn.get("sender", "")).lower())
            if role is None:
                raise reader.fail(f"unknown sender {turn.get('sender')!r} (expected 'human' or 'assistant')", twhere)
            text, other_blocks = _text(turn, reader, twhere)
            left_out["blocks"] += other_blocks
            for key in ("attachments", "files", "files_v2"):
                if turn.get(key) is not None and not isinstance(turn[key], list):
                    raise reader.fail(f"'{key}' must be a list, got {shape(turn[key])}", twhere)
            attachments = _attachments(turn)
            if not text.strip() and not attachments:
                left_out["empty"] += 1
                continue
            messages.append(
                MessageIn(
                    conversation=name,
                    session="",
                    seq=seq,
                    external_id=str(turn.get("uuid") or f"M{ti + 1}"),
                    speaker=role,
                    role=role,
                    text=text,
                    sent_at=reader.time(turn.get("created_at"), f"{twhere} created_at"),
                    attachments=attachments or None,
                    raw=turn,
                )
            )
            seq += 1
    reader.note(
        f"Claude: {plural(len(conversations), 'conversation')}; {left_out['blocks']} "
        f"thinking or tool blocks, {left_out['branch']} messages off the current branch and "
        f"{left_out['empty']} empty messages not imported; speakers are 'user' and 'assistant'"
    )
    return reader.unique(messages)


def _branch(conv: dict[str, Any], reader: Reader, where: str) -> list[tuple[int, Any]]:
    """``(index, message)`` of the branch to ``current_leaf_message_uuid`` when the export
    links messages to their parents; else every message in order."""
    turns = list(enumerate(conv["chat_messages"]))
    leaf = conv.get("current_leaf_message_uuid")
    by_id = {t.get("uuid"): (i, t) for i, t in turns if isinstance(t, dict) and isinstance(t.get("uuid"), str)}
    parents = {k: t.get("parent_message_uuid") for k, (_i, t) in by_id.items()}
    loop = find_loop({k: v for k, v in parents.items() if isinstance(v, str)})
    if loop is not None:
        raise reader.fail(f"the messages' parent links loop at message {loop} (a message its own ancestor)", where)
    if (
        not isinstance(leaf, str)
        or leaf not in by_id
        or not any(isinstance(t, dict) and "parent_message_uuid" in t for _, t in turns)
    ):
        return turns
    path: list[tuple[int, Any]] = []
    node: Any = leaf
    while isinstance(node, str) and node in by_id:
        if len(path) > len(turns):
            raise reader.fail("the messages' parent links loop", where)
        path.append(by_id[node])
        node = by_id[node][1].get("parent_message_uuid")
    return path[::-1]


def _text(turn: dict[str, Any], reader: Reader, where: str) -> tuple[str, int]:
    blocks = turn.get("content")
    if isinstance(blocks, list) and blocks:
        for bi, b in enumerate(blocks):
            if not isinstance(b, dict):
                raise reader.fail(f"content[{bi}] must be an object (a block), got {shape(b)}", where)
            if b.get("type") == "text" and not isinstance(b.get("text"), str):
                raise reader.fail(f"content[{bi}].text must be text, got {shape(b.get('text'))}", where)
        texts = [b["text"] for b in blocks if b.get("type") == "text"]
        other = sum(1 for b in blocks if isinstance(b, dict) and b.get("type") != "text")
        return reader.text("\n\n".join(t for t in texts if t), where), other
    return reader.text(turn.get("text") or "", where), 0


def _attachments(turn: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for item in turn.get("attachments") or ():
        if isinstance(item, dict):
            att = {
                "type": "file",
                "name": item.get("file_name"),
                "size": item.get("file_size"),
                "file_type": item.get("file_type"),
            }
            found.append({k: v for k, v in att.items() if v not in (None, "")})
    for item in turn.get("files") or turn.get("files_v2") or ():
        if isinstance(item, dict):
            kind = "image" if str(item.get("file_kind", "image")) == "image" else "file"
            att = {"type": kind, "name": item.get("file_name"), "id": item.get("file_uuid")}
            found.append({k: v for k, v in att.items() if v not in (None, "")})
    return found
