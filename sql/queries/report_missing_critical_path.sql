-- An empty stand-in for a file written before critical_path (query/topics.c).
CREATE TEMP TABLE IF NOT EXISTS critical_path (step INTEGER, seq INTEGER, rank INTEGER, kind TEXT, name TEXT,
                                               pg TEXT, start_ns INTEGER, end_ns INTEGER, compute_ns INTEGER,
                                               instance INTEGER);
