-- An empty stand-in for a file written before process_groups (temp, this
-- connection only; query/topics.c), so that reports read it as no facts.
CREATE TEMP TABLE IF NOT EXISTS process_groups (pg TEXT, dim TEXT, description TEXT, ranks TEXT, size INTEGER,
                                                calls INTEGER);
