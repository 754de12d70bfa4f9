"""Each importer on its realistic fixture (tests/fixtures/imports, synthetic content in the real
exports' shapes), and the corner cases of each format."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from localmem.errors import InputError, UnknownFormatError
from localmem.importers import formats
from localmem.importers.common import Options
from tests.fakes import HashEmbedder
from tests.import_fixtures import EXPECTED, FIXTURES, measure

UTC = Options(timezone="UTC")


def read(path: Path, fmt: str | None = None, options: Options = UTC, data: bytes | None = None):
    parsed = formats.parse(path, data, fmt, options=options)
    return parsed, [m for _, msgs in parsed.groups for m in msgs]


def by_conversation(messages):
    out: dict[str, list] = {}
    for m in messages:
        out.setdefault(m.conversation, []).append(m)
    return out


# -- every fixture: what it holds is what is stored ------------------------------------------


def test_every_fixture_stores_what_it_holds(tmp_path):
    rows = measure(tmp_path, HashEmbedder())
    for name, exp, (count, speakers, first, last), report in rows:
        assert (count, speakers, first, last) == (exp.messages, exp.speakers, exp.first, exp.last), name
        assert report["added"] == exp.messages, name
    assert {name for name, *_ in rows} == set(EXPECTED)


# -- ChatGPT -----------------------------------------------------------------------------------

CHATGPT = FIXTURES / "chatgpt" / "conversations.json"


def test_chatgpt_follows_the_current_branch_only():
    parsed, msgs = read(CHATGPT)
    assert parsed.format == "chatgpt"
    trip = by_conversation(msgs)["Trip to Lisbon (2024-03-02)"]
    texts = [m.text for m in trip]
    assert "How much is the metro?" not in " ".join(texts)  # the question edited away
    assert not any("very busy on Saturdays" in t for t in texts)  # the answer regenerated away
    assert [m.role for m in trip] == ["user", "assistant"] * 4
    assert [m.speaker for m in trip] == [m.role for m in trip]
    assert trip[2].text == "Is the Time Out Market worth it on a Saturday?"
    assert trip[3].text.startswith("Yes, but go before noon")
    assert [m.seq for m in trip] == list(range(8))


def test_chatgpt_skips_system_context_tools_and_reasoning():
    _, msgs = read(CHATGPT)
    joined = " ".join(m.text for m in msgs)
    assert "Porto" not in joined  # custom instructions (hidden, user_editable_context)
    assert "vintage postcard" not in joined  # the call to the image tool
    assert "Thought for" not in joined and "run-walk" not in joined  # reasoning
    running = by_conversation(msgs)["New chat (2024-03-09)"]
    assert [m.role for m in running] == ["user", "assistant", "user", "assistant"]


def test_chatgpt_attachments_times_ids_and_raw():
    _, msgs = read(CHATGPT)
    trip = by_conversation(msgs)["Trip to Lisbon (2024-03-02)"]
    tram, postcard = trip[4], trip[7]
    assert tram.text == "Here's the tram map I found. Which line goes to Belém?"
    assert tram.attachments == [
        {
            "type": "image",
            "asset_pointer": "file-service://file-Tr4mM4p9Qx",
            "width": 1024,
            "height": 768,
            "size": 184320,
            "name": "tram-map.jpg",
            "mime_type": "image/jpeg",
        }
    ]
    # the image the tool made goes with the answer that shows it
    assert postcard.attachments[0]["asset_pointer"] == "file-service://file-D4ll3P0stc4rd"
    assert trip[0].sent_at == "2024-03-02T18:05:10+00:00"
    assert trip[0].external_id == "aaa2c5d1-1f3b-4e7a-8d6c-0b9e2f4a7c11"
    assert trip[0].raw["author"]["role"] == "user" and trip[0].raw["create_time"] > 1.7e9
    voice = by_conversation(msgs)["New chat (2024-03-05)"][0]
    assert voice.text == "Remind me, when is my dentist appointment?"  # the transcription
    assert voice.attachments[0]["type"] == "audio"


def test_chatgpt_same_titles_get_their_dates_and_the_note_says_what_was_left_out():
    parsed, msgs = read(CHATGPT)
    assert sorted(by_conversation(msgs)) == [
        "New chat (2024-03-05)",
        "New chat (2024-03-09)",
        "Trip to Lisbon (2024-03-02)",
    ]
    (note,) = parsed.notes
    assert "3 conversations" in note and "3 messages on edited or regenerated branches" in note
    assert "7 system, tool or hidden messages" in note


def test_chatgpt_epoch_times_go_to_the_configured_zone():
    _, msgs = read(CHATGPT, options=Options(timezone="America/New_York"))
    first = by_conversation(msgs)["Trip to Lisbon (2024-03-02)"][0]
    assert first.sent_at == "2024-03-02T13:05:10-05:00"  # the same instant, the user's wall clock
    _, msgs = read(CHATGPT, options=Options(timezone=None))
    assert by_conversation(msgs)["Trip to Lisbon (2024-03-02)"][0].sent_at == "2024-03-02T18:05:10+00:00"


def test_chatgpt_without_current_node_follows_the_newest_child(tmp_path):
    doc = json.loads(CHATGPT.read_text())
    trip = doc[2]
    del trip["current_node"]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([trip]))
    _, msgs = read(path)
    assert msgs[-1].text == "Here's your postcard of Belém Tower at sunset."
    assert len(msgs) == 8


def test_chatgpt_names_of_one_day_and_one_title_stay_apart(tmp_path):
    doc = json.loads(CHATGPT.read_text())
    twin = json.loads(json.dumps(doc[1]))
    twin["id"] = twin["conversation_id"] = "77777777-0000-8000-a000-000000000777"
    twin["create_time"] += 3600
    for node in twin["mapping"].values():  # ids are unique in an export
        if node["message"]:
            node["message"]["id"] += "-b"
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([doc[1], twin]))
    _, msgs = read(path)
    assert sorted(by_conversation(msgs)) == ["New chat (2024-03-05 07:40)", "New chat (2024-03-05 08:40)"]


def test_chatgpt_broken_tree_names_the_conversation(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text(
        json.dumps(
            [
                {
                    "title": "x",
                    "mapping": {"a": {"message": None, "parent": "b"}, "b": {"message": None, "parent": "a"}},
                    "current_node": "a",
                }
            ]
        )
    )
    with pytest.raises(InputError, match="conversation 1 .*loops at node"):
        read(path)


# -- Claude.ai -------------------------------------------------------------------------------

CLAUDE = FIXTURES / "claude" / "conversations.json"


def test_claude_text_blocks_roles_and_attachments():
    parsed, msgs = read(CLAUDE)
    assert parsed.format == "claude"
    sour = by_conversation(msgs)["Sourdough starter troubleshooting (2024-04-06)"]
    assert [(m.speaker, m.role) for m in sour] == [("user", "user"), ("assistant", "assistant")] * 2
    assert sour[1].text == ("Not dead: that acetone smell means it is hungry. Feed it more often, or with more flour.")
    assert "yeast has run out" not in " ".join(m.text for m in msgs)  # thinking
    assert "print(5 * 50)" not in " ".join(m.text for m in msgs)  # tool use
    assert sour[2].attachments == [{"type": "file", "name": "feeding-log.txt", "size": 131, "file_type": "txt"}]
    assert "Wed skipped" in sour[2].raw["attachments"][0]["extracted_content"]  # kept in raw
    assert sour[0].sent_at == "2024-04-06T09:12:45+00:00"


def test_claude_follows_the_current_leaf_and_names_untitled_chats():
    parsed, msgs = read(CLAUDE)
    kitten = by_conversation(msgs)["Untitled (2024-04-08)"]
    assert [m.text for m in kitten][2:] == [
        "We went with Pebble! She's 10 weeks old.",
        "Pebble is a lovely name. At 10 weeks she needs four small meals a day.",
    ]
    assert kitten[2].attachments == [{"type": "image", "name": "pebble.jpg"}]
    assert "2 messages off the current branch" in parsed.notes[0]


def test_claude_without_parent_links_reads_the_list_in_order(tmp_path):
    doc = [
        {
            "uuid": "c1",
            "name": "Plain",
            "created_at": "2024-01-01T10:00:00Z",
            "chat_messages": [
                {"uuid": "m1", "sender": "human", "text": "hello", "created_at": "2024-01-01T10:00:00Z"},
                {
                    "uuid": "m2",
                    "sender": "assistant",
                    "text": "hi there",
                    "content": [],
                    "created_at": "2024-01-01T10:00:02Z",
                },
                {"uuid": "m3", "sender": "human", "text": "", "created_at": "2024-01-01T10:00:09Z"},
            ],
        }
    ]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(doc))
    _, msgs = read(path)
    assert [(m.external_id, m.text) for m in msgs] == [("m1", "hello"), ("m2", "hi there")]  # m3 is empty
    doc[0]["chat_messages"][0]["sender"] = "robot"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="message 1: unknown sender 'robot'"):
        read(path)


# -- WhatsApp --------------------------------------------------------------------------------

ANDROID = FIXTURES / "whatsapp" / "WhatsApp Chat with Book club.txt"
IOS = FIXTURES / "whatsapp" / "WhatsApp Chat - Sam Okafor" / "_chat.txt"


def test_whatsapp_android_messages_system_lines_media_and_edits():
    parsed, msgs = read(ANDROID)
    assert parsed.format == "whatsapp"
    assert {m.conversation for m in msgs} == {"Book club"}
    assert [m.speaker for m in msgs] == [
        "Priya Nair",
        "Tom Becker",
        "Tom Becker",
        "Tom Becker",
        "+44 7700 900123",
        "Priya Nair",
        "Tom Becker",
        "Priya Nair",
    ]
    assert msgs[2].text == "[media omitted]" and msgs[2].attachments == [{"type": "media", "omitted": True}]
    assert msgs[5].text == (
        "Of course! Bring snacks \U0001f604\nAddress is 12 Elm Road, flat 3.\nBuzz twice, the bell is broken."
    )
    assert msgs[6].text == "I'll bring the wine"  # "<This message was edited>" dropped
    assert "<This message was edited>" in msgs[6].raw
    assert all(m.role is None for m in msgs)
    joined = " ".join(m.text for m in msgs)
    assert "end-to-end" not in joined and "changed the subject" not in joined and "deleted" not in joined
    # day-first is certain (14/02), so the report says nothing about the order
    assert msgs[0].sent_at == "2024-02-14T19:05:00" and msgs[-1].sent_at == "2024-03-01T18:31:00"
    assert not any("ambiguous" in n for n in parsed.notes)
    assert "6 system lines, 1 deleted message" in parsed.notes[0]


def test_whatsapp_ids_are_stable_and_distinct_within_a_minute():
    _, msgs = read(ANDROID)
    assert msgs[2].external_id == "2024-02-14T19:07:00|Tom Becker|0"
    assert msgs[3].external_id == "2024-02-14T19:07:00|Tom Becker|1"


def test_whatsapp_ios_invisible_marks_12_hour_times_and_attachments():
    parsed, msgs = read(IOS)
    assert {m.conversation for m in msgs} == {"Sam Okafor"}  # named after its folder
    assert [m.sent_at for m in msgs][:3] == ["2024-01-09T20:14:03", "2024-01-09T20:15:47", "2024-01-10T07:02:11"]
    assert msgs[2].attachments == [{"type": "image", "omitted": True}]
    assert msgs[3].text == "New shoes came \U0001f389\nThey're a half size smaller than my old ones"
    assert msgs[6].attachments == [{"type": "image", "file": "00000012-PHOTO-2024-02-03-11-05-44.jpg"}]
    assert not any("\u200e" in m.text or "\u202f" in m.text for m in msgs)
    assert not any("Missed" in m.text or "encrypted" in m.text for m in msgs)
    # every number is <= 12: the order is decided by time order, and the report says so
    (ambiguous,) = [n for n in parsed.notes if "ambiguous" in n]
    assert "read month-first" in ambiguous and "time order" in ambiguous and "--date-order day-first" in ambiguous


def test_whatsapp_date_order_can_be_forced():
    _, msgs = read(IOS, options=Options(timezone="UTC", date_order="day-first"))
    assert msgs[0].sent_at == "2024-09-01T20:14:03"


def test_whatsapp_undecidable_dates_default_to_day_first_and_say_so(tmp_path):
    path = tmp_path / "WhatsApp Chat with Kai.txt"
    path.write_text("03/04/2024, 09:00 - Kai: morning\n03/04/2024, 09:01 - Me: hi Kai\n")
    parsed, msgs = read(path)
    assert msgs[0].sent_at == "2024-04-03T09:00:00" and msgs[0].conversation == "Kai"
    assert any("nothing in the file decides it; day-first" in n for n in parsed.notes)


def test_whatsapp_month_first_decided_by_a_day_above_12(tmp_path):
    path = tmp_path / "chat.txt"
    path.write_text("12/25/23, 9:15 PM - Ana: Merry Christmas!\n12/26/23, 10:02 AM - Ben: You too\n")
    parsed, msgs = read(path)
    assert [m.sent_at for m in msgs] == ["2023-12-25T21:15:00", "2023-12-26T10:02:00"]
    assert not any("ambiguous" in n for n in parsed.notes)


def test_whatsapp_call_notices_are_skipped_but_talk_about_calls_is_not(tmp_path):
    path = tmp_path / "WhatsApp Chat with Kai.txt"
    path.write_text(
        "13/04/2024, 09:00 - Kai: Missed voice call\n13/04/2024, 09:01 - Kai: Voice call, 12 min\n"
        "13/04/2024, 09:02 - Kai: Voice call tomorrow?\n"
    )
    parsed, msgs = read(path)
    assert [m.text for m in msgs] == ["Voice call tomorrow?"]
    assert "2 call notices skipped" in parsed.notes[0]


def test_whatsapp_german_dots_and_attached_files(tmp_path):
    path = tmp_path / "WhatsApp Chat mit Lea.txt"
    path.write_text(
        "24.12.23, 18:30 - Lea: Frohe Weihnachten!\n"
        "24.12.23, 18:31 - Lea: IMG-20231224-WA0007.jpg (file attached)\nUnser Baum\n"
    )
    _, msgs = read(path)
    assert msgs[1].text == "Unser Baum"
    assert msgs[1].attachments == [{"type": "image", "file": "IMG-20231224-WA0007.jpg"}]
    assert msgs[0].sent_at == "2023-12-24T18:30:00"


def test_whatsapp_times_stay_as_written_whatever_the_zone():
    _, msgs = read(ANDROID, options=Options(timezone="Asia/Tokyo"))
    assert msgs[0].sent_at == "2024-02-14T19:05:00"  # the phone's wall clock, no zone to move


def test_whatsapp_mixed_orders_are_an_error(tmp_path):
    path = tmp_path / "chat.txt"
    path.write_text("25/01/2024, 10:00 - A: x\n01/25/2024, 10:00 - B: y\n")
    with pytest.raises(InputError, match="mix day-first and month-first"):
        read(path)


# -- Slack ---------------------------------------------------------------------------------

SLACK = FIXTURES / "slack-export"


def test_slack_channels_names_and_mentions():
    parsed, msgs = read(SLACK)
    assert parsed.format == "folder" and [s.format for s in parsed.sources] == ["slack"]
    convs = by_conversation(msgs)
    assert list(convs) == ["#general", "#trips", "DM: Priya Nair, Tom Becker"]
    general = convs["#general"]
    assert general[2].text == "@Tom Becker yes, two spots. Ask facilities & they'll give you a badge"
    assert convs["DM: Priya Nair, Tom Becker"][0].text == "Can you cover my 1:1 with @Maya K on Thursday?"
    assert convs["#trips"][1].text == "@here flights to Lisbon are cheap in April, book by Friday"
    lunch = next(m for m in general if m.text.startswith("Lunch"))
    assert lunch.text == "Lunch at the noodle place (https://example.invalid/menu) at 12:30?"
    assert lunch.speaker == "Maya K"  # no real name: the display name
    assert next(m for m in general if "standup" in m.text).speaker == "Standup Bot"
    assert all(m.role is None for m in msgs)
    joined = " ".join(m.text for m in msgs)
    assert "has joined" not in joined and "channel topic" not in joined


def test_slack_threads_follow_their_parent_and_say_they_are_replies():
    _, msgs = read(SLACK)
    general = by_conversation(msgs)["#general"]
    parent = general[1]
    assert parent.text.startswith("Does anyone know if parking")
    replies = general[2:5]
    assert [r.text for r in replies] == [
        "@Tom Becker yes, two spots. Ask facilities & they'll give you a badge",
        "Thanks, got my badge!",
        "Same here, parking is on level -2",
    ]  # the next day's too
    assert all(r.attachments[0] == {"type": "reply", "to": parent.external_id} for r in replies)
    assert {m.session for m in general[1:5]} == {f"thread {parent.external_id}"}
    assert general[5].session == "" and general[5].text.startswith("Lunch")
    # a reply whose parent was deleted is kept, and still says what it replies to
    trips = by_conversation(msgs)["#trips"]
    assert trips[0].text.startswith("I'm in for the Lisbon trip")
    assert trips[0].attachments == [{"type": "reply", "to": "1709640000.000100"}]


def test_slack_times_ids_and_files():
    _, msgs = read(SLACK)
    first = msgs[0]
    assert first.external_id == "1709547000.000200" and first.sent_at == "2024-03-04T10:10:00+00:00"
    plan = next(m for m in msgs if m.text == "Floor plan for the new office")
    assert plan.attachments == [
        {"type": "file", "name": "floorplan.pdf", "title": "Floor plan", "mime_type": "application/pdf"}
    ]


def test_slack_is_read_from_its_zip_and_not_from_one_day_file(tmp_path):
    archive = tmp_path / "Acme Slack export Mar 1 2024 - Mar 7 2024.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(SLACK.rglob("*.json")):
            zf.write(path, path.relative_to(SLACK).as_posix())
    parsed, msgs = read(archive)
    assert parsed.format == "zip" and len(msgs) == 12
    assert parsed.sources[0].uri.endswith(".zip")
    with pytest.raises(UnknownFormatError, match="slack: an export is read whole"):
        read(SLACK / "general" / "2024-03-04.json")
    with pytest.raises(InputError, match="Slack export is read whole"):
        read(SLACK / "general" / "2024-03-04.json", "slack")


# -- Discord ---------------------------------------------------------------------------------

DISCORD = next((FIXTURES / "discord").glob("*.json"))


def test_discord_messages_replies_and_notifications():
    parsed, msgs = read(DISCORD)
    assert parsed.format == "discord"
    assert {m.conversation for m in msgs} == {"Tiny Garden Club / #general"}
    assert [m.speaker for m in msgs] == ["Lena", "Oskar", "Lena", "GardenBot", "Oskar", "Lena"]
    reply = msgs[2]
    assert reply.text == "Thanks @Oskar, doing it tonight :tomato:"
    assert reply.attachments == [{"type": "reply", "to": msgs[1].external_id}]
    assert msgs[1].attachments[0]["name"] == "blight.jpg"
    assert msgs[3].text == "Frost warning\nFrost expected tonight, below 2°C. Cover tender plants."
    assert msgs[4].text == "[sticker: Sprout]" and msgs[4].attachments == [{"type": "sticker", "name": "Sprout"}]
    assert not any(m.text in ("Joined the server.", "Pinned a message.") for m in msgs)
    assert "2 system notifications" in parsed.notes[0]


def test_discord_offsets_are_moved_to_the_configured_zone():
    _, msgs = read(DISCORD, options=Options(timezone="Europe/Berlin"))
    assert msgs[0].sent_at == "2024-05-01T18:02:10+02:00"
    _, msgs = read(DISCORD)
    assert msgs[0].sent_at == "2024-05-01T16:02:10+00:00"


# -- notes -----------------------------------------------------------------------------------

NOTES = FIXTURES / "notes"


def test_notes_front_matter_author_and_time():
    _, msgs = read(NOTES / "recipes" / "pesto.md")
    (pesto,) = msgs
    assert (pesto.speaker, pesto.role, pesto.sent_at) == ("Nonna Lucia", None, "2023-08-15T00:00:00")
    # in an Obsidian vault (a folder holding .obsidian), named by its path in the vault
    assert pesto.conversation == "recipes/pesto" and pesto.external_id == "note"
    assert pesto.text.startswith("Basil pesto") and "---" not in pesto.text
    assert pesto.raw["front_matter"] == {"author": "Nonna Lucia", "created": "2023-08-15"}


def test_notes_time_from_the_file_name_then_the_modification_time(tmp_path):
    _, (day,) = read(NOTES / "journal" / "2024-03-02.md")
    assert (day.speaker, day.role, day.sent_at) == ("me", "user", "2024-03-02T00:00:00")
    path = tmp_path / "ideas.txt"
    path.write_bytes((NOTES / "ideas.txt").read_bytes())
    import os

    os.utime(path, (1710936000, 1710936000))
    _, (idea,) = read(path, options=Options(timezone="Europe/Berlin", notes_author="Robin"))
    assert (idea.speaker, idea.role, idea.sent_at) == ("Robin", "user", "2024-03-20T13:00:00+01:00")
    assert idea.text.startswith("Gift ideas for Sam:")  # a note, though it has "Name: text" lines


def test_long_notes_are_split_at_headings_outside_code():
    parsed, msgs = read(NOTES / "projects" / "garden.md")
    assert [m.external_id for m in msgs] == ["garden-plan", "beds", "tomatoes", "care", "watering"]
    assert msgs[2].text.startswith("## Tomatoes\n\n### Varieties")  # a bare heading joins the next
    assert "# not a heading" in msgs[3].text  # inside a code fence
    assert {m.sent_at for m in msgs} == {"2024-04-20T00:00:00"}
    assert {m.conversation for m in msgs} == {"projects/garden"}
    assert any("split at its headings into 5 messages" in n for n in parsed.notes)
    short = Options(timezone="UTC", note_split_chars=100_000)
    _, whole = read(NOTES / "projects" / "garden.md", options=short)
    assert [m.external_id for m in whole] == ["note"]


def test_notes_folder_names_conversations_by_path(tmp_path):
    parsed, msgs = read(NOTES)
    names = ["ideas", "journal/2024-03-02", "projects/garden", "recipes/pesto"]
    assert sorted({m.conversation for m in msgs}) == names
    assert [(s.path, s.why) for s in parsed.skipped] == [
        (".obsidian", "a hidden folder (not read)"),
        ("attachments/garden-sketch.png", "media (.png)"),
    ]
    # the vault's subfolder names its notes as the vault does
    assert {m.conversation for m in read(NOTES / "journal")[1]} == {"journal/2024-03-02"}
    # outside a vault: the path inside the folder ingested, or the file's name
    plain = tmp_path / "plain"
    shutil.copytree(NOTES, plain, ignore=shutil.ignore_patterns(".obsidian"))
    assert sorted({m.conversation for m in read(plain)[1]}) == names
    assert {m.conversation for m in read(plain / "journal")[1]} == {"2024-03-02"}


def test_prose_is_a_note_only_by_its_suffix(tmp_path):
    for name in ("diary.md", "diary.txt"):
        path = tmp_path / name
        path.write_text("Dear diary, today nothing happened at all\n")
        parsed, (msg,) = read(path)
        assert parsed.format == "notes" and msg.text.startswith("Dear diary")
    path = tmp_path / "diary.dat"
    path.write_text("Dear diary, today nothing happened at all\n")
    with pytest.raises(UnknownFormatError, match="notes: only .md and .txt files"):
        read(path)
    parsed, _ = read(path, "notes")
    assert parsed.format == "notes"


# -- detection: what was tried and how close it came -------------------------------------------


def test_unknown_json_lists_what_each_format_looked_for(tmp_path):
    path = tmp_path / "export.json"
    path.write_text(json.dumps([{"sender_name": "A", "timestamp_ms": 1, "body": "x"}]))
    with pytest.raises(UnknownFormatError) as info:
        read(path)
    message = str(info.value)
    for expected in (
        "JSON of an unknown shape",
        "locomo: no 'conversation' object",
        "chatgpt: no 'mapping' in the first conversation",
        "claude: no 'chat_messages' in the first conversation",
        "discord: not an object with 'guild', 'channel' and 'messages'",
        "chat: the first item has no 'role'/'content'",
        "jsonl: not a message object",
        "slack: an export is read whole",
    ):
        assert expected in message
    assert "\n" not in message


def test_unknown_text_says_how_many_lines_looked_like_messages(tmp_path):
    path = tmp_path / "log.dat"
    path.write_text("\n".join(f"2024-01-0{i % 9 + 1} INFO server started in {i} ms" for i in range(40)))
    with pytest.raises(UnknownFormatError) as info:
        read(path)
    message = str(info.value)
    assert "unrecognised format; tried whatsapp: 0 of 40 lines look like WhatsApp messages" in message
    assert "text: 0 of 40 lines look like 'Speaker: text'" in message
    assert "notes: only .md and .txt files are read as notes (pass --format notes)" in message


@pytest.mark.parametrize(
    "fixture, expected",
    [
        (CHATGPT, "chatgpt"),
        (CLAUDE, "claude"),
        (ANDROID, "whatsapp"),
        (IOS, "whatsapp"),
        (DISCORD, "discord"),
        (NOTES / "journal" / "2024-03-02.md", "notes"),
    ],
)
def test_detection_of_each_export(fixture, expected):
    assert read(fixture)[0].format == expected


def test_stdin_is_read_with_or_without_a_format(monkeypatch):
    import io
    import sys

    data = ANDROID.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    parsed, msgs = read(Path("-"))
    assert parsed.format == "whatsapp" and len(msgs) == 8
    assert parsed.sources[0].uri == "stdin" and {m.conversation for m in msgs} == {"stdin"}
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Ann: hi\nBo: hello\n")))
    parsed = formats.parse("-", None, "notes", "scratch", options=UTC)
    assert parsed.format == "notes" and parsed.groups[0][1][0].conversation == "scratch"
