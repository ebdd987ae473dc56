-- An empty stand-in for a file written before comm_exposed (query/topics.c).
CREATE TEMP TABLE IF NOT EXISTS comm_exposed (rank INTEGER, step INTEGER, pg TEXT, comm_ns INTEGER,
                                              exposed_ns INTEGER);
