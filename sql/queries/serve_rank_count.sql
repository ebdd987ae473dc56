-- How many ranks the file has: /api/timeline asks for ?ranks= above
-- QRY_TIMELINE_MAX_RANKS.
SELECT count(*) AS n FROM ranks;
