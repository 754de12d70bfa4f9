-- The planner's guess of how many ids a JSON array holds (issue 46: search latency). A
-- set-returning function is guessed at 1,000 rows unless it says otherwise, and with 1,000 ids
-- to look up the planner reads the whole messages table into a hash instead of looking each id
-- up in its primary key: at 10,000 messages each of a search's message reads (texts and next
-- turns, places, rows to show) took 4 to 5 ms that way, 0.3 ms by index; the scan grows with
-- the table, the lookups do not. The arrays a search and the pages pass hold tens of ids; a
-- larger one (a forget of a whole conversation) is still looked up id by id, which costs in
-- proportion to it and no more.
ALTER FUNCTION localmem_ids(TEXT) ROWS 10;
