-- A message embedded with the turn it answers (issue 34): a reply like "Scout" or "Yes, last
-- Tuesday!" says little on its own, and the question before it says what it is about. Such a
-- vector is a part of its message (`context` = 1, start/end spanning the whole text), so the
-- vector channel ranks the message by its best vector, whole, sentence or in context. Only
-- messages with a turn before them in their session have one; stores made before this get
-- them from `localmem reembed`. Excerpts use the sentence parts only (context = 0).
ALTER TABLE message_parts ADD COLUMN context INTEGER NOT NULL DEFAULT 0 CHECK (context IN (0, 1));
