-- Units by namespace and time, newest first for the temporal channel's range query: without
-- it the query read every unit of the namespace and sorted them (~100 ms at 1M units).
CREATE INDEX units_by_time ON units (ns, occurred_start);
