-- Queries of the benchmarks (localmem bench ...).

-- name: bench_link_count
SELECT count(*) FROM links;

-- name: bench_unit_vectors
SELECT count(*) FROM vec_unit_codes WHERE ns = :ns;
