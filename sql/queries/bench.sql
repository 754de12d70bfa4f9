-- Queries of the benchmarks (localmem bench ...).

-- name: bench_link_count
SELECT count(*) FROM links;
