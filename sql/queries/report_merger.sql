-- The merger process that wrote the file (live runs): host and pid.
SELECT (SELECT value FROM meta WHERE key = 'merger_host') AS merger_host,
       (SELECT value FROM meta WHERE key = 'merger_pid') AS merger_pid;
