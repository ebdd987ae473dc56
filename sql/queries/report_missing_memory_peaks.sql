-- An empty stand-in for a file written before memory_peaks (query/topics.c).
CREATE TEMP TABLE IF NOT EXISTS memory_peaks (rank INTEGER, device INTEGER, step INTEGER, phase TEXT,
                                              samples INTEGER, allocated_bytes INTEGER,
                                              reserved_bytes INTEGER, peak_ns INTEGER);
