-- For a file written before the communication by process group: empty
-- stand-ins in the connection's temp schema, so that report comms and
-- report steps read it as having no group facts (query/topics.c).
CREATE TEMP TABLE IF NOT EXISTS process_groups (pg TEXT, dim TEXT, description TEXT, ranks TEXT, size INTEGER,
                                                calls INTEGER);
CREATE TEMP TABLE IF NOT EXISTS comm_exposed (rank INTEGER, step INTEGER, pg TEXT, comm_ns INTEGER,
                                              exposed_ns INTEGER);
