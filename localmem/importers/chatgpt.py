"""ChatGPT's data export: ``conversations.json``, a list of conversations whose messages form a
tree (``mapping``: node id -> ``{message, parent, children}``).

Only the branch the user last saw is read: from ``current_node`` up through the parents to the
root, then reversed. Answers regenerated and questions edited away hang off that branch as
siblings, and are not imported. On the branch, a message is kept when a person saw it as a turn:

- ``user`` and ``assistant`` messages addressed to everyone (``recipient`` "all") whose content
  is text (``text``, ``multimodal_text``); text parts are joined, voice-mode transcriptions count as
  text, images, audio and uploaded files become attachments;
- skipped: ``system`` messages (the hidden preamble and custom instructions), ``tool`` messages
  (browsing, code output, image generation: an image a tool made is attached to the next answer),
  the assistant's calls to tools (``recipient`` not "all"), reasoning (``thoughts``,
  ``reasoning_recap``), memory and custom-instruction context, anything marked
  ``is_visually_hidden_from_conversation``, and turns left with neither text nor attachment.

Speakers are "user" and "assistant" with the same roles (the export does not carry the user's
name). Times are epoch seconds, stored in the configured zone. Each conversation is one
localmem conversation named by its title and start date (see ``common.titled``).
"""

from __future__ import annotations

from typing import Any

from .common import MessageIn, Probe, Reader, find_loop, first_item, plural, shape, str_field, titled

NAME = "chatgpt"
_TEXT_TYPES = ("text", "multimodal_text")
_KEPT_ROLES = ("user", "assistant")


def probe(doc: Any) -> Probe:
    first = first_item(doc)
    if not isinstance(first, dict):
        return Probe(False, "not a list of conversations")
    if not isinstance(first.get("mapping"), dict):
        return Probe(False, "no 'mapping' in the first conversation")
    return Probe(True, "a list of conversations with a 'mapping' tree")


def parse(doc: Any, reader: Reader) -> list[MessageIn]:
    conversations = doc if isinstance(doc, list) else [doc]
    for ci, conv in enumerate(conversations):
        if not isinstance(conv, dict) or not isinstance(conv.get("mapping"), dict):
            raise reader.fail(f"a conversation needs a 'mapping' object, got {shape(conv)}", f"conversation {ci + 1}")
    idents = [str(c.get("id") or c.get("conversation_id") or f"c{i + 1}") for i, c in enumerate(conversations)]
    starts = [
        reader.time(c.get("create_time"), f"conversation {i + 1} create_time") for i, c in enumerate(conversations)
    ]
    names = titled([(c.get("title"), s, i) for c, s, i in zip(conversations, starts, idents)])
    if reader.conversation and len(conversations) == 1:
        names = [reader.conversation]
    messages: list[MessageIn] = []
    skipped = {"hidden": 0, "off-branch": 0}
    for ci, (conv, name) in enumerate(zip(conversations, names)):
        where = f"conversation {ci + 1} ({conv.get('title') or idents[ci]})"
        mapping = conv["mapping"]
        _check_tree(mapping, reader, where)
        branch = _branch(mapping, conv.get("current_node"), reader, where)
        on_branch = set(branch)
        skipped["off-branch"] += sum(
            1 for k, n in mapping.items() if isinstance(n, dict) and n.get("message") and k not in on_branch
        )
        pending: list[dict[str, Any]] = []  # images a tool made, for the next answer
        seq = 0
        for node_id in branch:
            msg = mapping[node_id].get("message")
            mwhere = f"{where} message {node_id}"
            if msg is None:  # the root node, and nodes of messages not exported
                continue
            if not isinstance(msg, dict):
                raise reader.fail(f"mapping.{node_id}.message must be an object, got {shape(msg)}", where)
            author = _object(msg, "author", reader, mwhere)
            role = str_field(author, "role")
            content = _object(msg, "content", reader, mwhere)
            meta = _object(msg, "metadata", reader, mwhere)
            text, attachments = _content(content, meta, reader, mwhere)
            if role == "tool":
                pending += [a for a in attachments if a["type"] == "image"]
            visible = (
                role in _KEPT_ROLES
                and msg.get("recipient", "all") == "all"
                and content.get("content_type", "text") in _TEXT_TYPES
                and not meta.get("is_visually_hidden_from_conversation")
            )
            if not visible:
                skipped["hidden"] += 1
                continue
            if role == "assistant":
                attachments, pending = pending + attachments, []
            if not text.strip() and not attachments:
                continue
            messages.append(
                MessageIn(
                    conversation=name,
                    session="",
                    seq=seq,
                    external_id=str(msg.get("id") or node_id),
                    speaker=role,
                    role=role,
                    text=text,
                    sent_at=reader.time(msg.get("create_time"), f"{mwhere} create_time"),
                    attachments=attachments or None,
                    raw=msg,
                )
            )
            seq += 1
    reader.note(
        f"ChatGPT: {plural(len(conversations), 'conversation')} read along their current "
        f"branch; {skipped['off-branch']} messages on edited or regenerated branches and "
        f"{skipped['hidden']} system, tool or hidden messages not imported; speakers are "
        "'user' and 'assistant'"
    )
    return reader.unique(messages)


def _object(msg: dict[str, Any], key: str, reader: Reader, where: str) -> dict[str, Any]:
    """``msg[key]``, an object when present (missing or null: empty)."""
    value = msg.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise reader.fail(f"{key} must be an object, got {shape(value)}", where)
    return value


def _check_tree(mapping: dict[str, Any], reader: Reader, where: str) -> None:
    """Every node an object, and no node its own ancestor (a loop in the parent links, even off
    the branch that is read)."""
    for node_id, node in mapping.items():
        if not isinstance(node, dict):
            raise reader.fail(f"mapping.{node_id} must be an object (a node), got {shape(node)}", where)
        if node.get("parent") is not None and not isinstance(node["parent"], str):
            raise reader.fail(f"mapping.{node_id}.parent must be a node id, got {shape(node['parent'])}", where)
        children = node.get("children")
        if children is not None and not (isinstance(children, list) and all(isinstance(c, str) for c in children)):
            raise reader.fail(f"mapping.{node_id}.children must be a list of node ids, got {shape(children)}", where)
    parents = {k: n.get("parent") for k, n in mapping.items() if isinstance(n.get("parent"), str)}
    loop = find_loop(parents)
    if loop is not None:
        raise reader.fail(f"the message tree loops at node {loop} (a message its own ancestor)", where)


def _branch(mapping: dict[str, Any], current: Any, reader: Reader, where: str) -> list[str]:
    """Node ids from the root to ``current`` (or, without one, to the newest leaf)."""
    if not isinstance(current, str) or current not in mapping:
        current = _newest_leaf(mapping)
        if current is None:
            return []
    path: list[str] = []
    seen: set[str] = set()
    node_id: Any = current
    while isinstance(node_id, str) and node_id in mapping:
        if node_id in seen:
            raise reader.fail(f"the message tree loops at node {node_id}", where)
        seen.add(node_id)
        path.append(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            raise reader.fail(f"node {node_id} must be an object, got {shape(node)}", where)
        node_id = node.get("parent")
    return path[::-1]


def _newest_leaf(mapping: dict[str, Any]) -> str | None:
    """Without ``current_node``: follow the last child from the root, as the app shows it."""
    roots = [k for k, n in mapping.items() if isinstance(n, dict) and n.get("parent") not in mapping]
    if not roots:
        return None
    node_id = roots[0]
    seen = {node_id}
    while True:
        children = [c for c in mapping[node_id].get("children") or () if c in mapping and c not in seen]
        if not children:
            return node_id
        node_id = children[-1]
        seen.add(node_id)


def _content(
    content: dict[str, Any], meta: dict[str, Any], reader: Reader, where: str
) -> tuple[str, list[dict[str, Any]]]:
    texts: list[str] = []
    attachments: list[dict[str, Any]] = []
    parts = content.get("parts")
    if parts is None and content.get("text") is not None:
        parts = [content["text"]]
        if not isinstance(content["text"], str):
            raise reader.fail(f"content.text must be text, got {shape(content['text'])}", where)
    if parts is not None and not isinstance(parts, list):
        raise reader.fail(f"content.parts must be a list, got {shape(parts)}", where)
    for i, part in enumerate(parts or ()):
        if isinstance(part, str):
            if part:
                texts.append(part)
        elif isinstance(part, dict):
            kind = str(part.get("content_type") or part.get("type") or "part")
            if kind == "audio_transcription":
                if not isinstance(part.get("text"), str):
                    raise reader.fail(f"content.parts[{i}].text must be text, got {shape(part.get('text'))}", where)
                texts.append(part["text"])
            else:
                attachments.append(_attachment(kind, part))
        elif part is not None:
            raise reader.fail(f"content.parts[{i}] must be text or an object, got {shape(part)}", where)
    for item in meta.get("attachments") or ():  # uploads: an image's part points at the same file
        if isinstance(item, dict):
            found = {
                "type": "file",
                "name": item.get("name"),
                "size": item.get("size"),
                "mime_type": item.get("mime_type") or item.get("mimeType"),
            }
            found = {k: v for k, v in found.items() if v is not None}
            same = next(
                (
                    a
                    for a in attachments
                    if item.get("id") and str(a.get("asset_pointer", "")).endswith(str(item["id"]))
                ),
                None,
            )
            if same is not None:
                same.update({k: v for k, v in found.items() if k != "type"})
            else:
                attachments.append(found)
    return reader.text("\n".join(texts), where), attachments


def _attachment(kind: str, part: dict[str, Any]) -> dict[str, Any]:
    names = {
        "image_asset_pointer": "image",
        "audio_asset_pointer": "audio",
        "real_time_user_audio_video_asset_pointer": "audio",
    }
    found = {
        "type": names.get(kind, kind),
        "asset_pointer": part.get("asset_pointer"),
        "width": part.get("width"),
        "height": part.get("height"),
        "size": part.get("size_bytes"),
    }
    return {k: v for k, v in found.items() if v is not None}
